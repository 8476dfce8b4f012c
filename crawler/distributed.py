"""Many crawler processes, one frontier, one index: the pieces a distributed crawl needs.

The frontier (the queue of requests and the set of requests already seen) is scrapy-redis
on one Redis server; the near-duplicate index is one PostgreSQL database, shared through
``SIMHASH_FILTER_DATABASE_URL``. Every worker runs the same command::

    SCRAPY_SETTINGS_MODULE=crawler.distributed_settings scrapy crawl site \\
        -a start_url=https://example.com/ \\
        -s REDIS_URL=redis://redis-host:6379/0 \\
        -s SIMHASH_FILTER_DATABASE_URL=postgresql+psycopg://user:pw@db-host/dedup

or, with the ``site_redis`` spider, no start URL on the command line: the workers wait for
seeds pushed to a Redis list (``python -m crawler.distributed seed URL ...``).

This module holds what is not a setting: :class:`WaitForPeers` (an idle worker stays up
while its peers are working and may still queue links), :class:`PeerLeases` (which workers
are working, in Redis), the Redis key names, and a small command line to seed a crawl, show
its queue and clear it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_REDIS_URL",
    "PEER_LEASE",
    "PeerLeases",
    "RedisKeys",
    "WaitForPeers",
    "clear",
    "main",
    "seed",
]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_IDLE_TIMEOUT = 10.0
"""Seconds a worker with nothing to do, while no peer is working, waits before it closes."""
PEER_LEASE = 10.0
"""Seconds a worker counts as working after it last said so: a worker that was killed or
hangs stops holding its peers open after this long."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RedisKeys:
    """The Redis keys of one crawl: ``<prefix>:requests``, ``:dupefilter``, ``:start_urls``,
    ``:workers``, ``:frontier`` (the mark that tells a lost frontier: crawler/frontier.py).

    scrapy-redis names them after the spider (``%(spider)s:requests``); a prefix of your
    own (``-s REDIS_KEY_PREFIX=myjob``) keeps two crawls of one spider apart.
    """

    prefix: str

    @property
    def requests(self) -> str:
        return f"{self.prefix}:requests"

    @property
    def dupefilter(self) -> str:
        return f"{self.prefix}:dupefilter"

    @property
    def start_urls(self) -> str:
        return f"{self.prefix}:start_urls"

    @property
    def workers(self) -> str:
        return f"{self.prefix}:workers"

    @property
    def frontier(self) -> str:
        return f"{self.prefix}:frontier"

    def all(self) -> tuple[str, ...]:
        return (self.requests, self.dupefilter, self.start_urls, self.workers, self.frontier)

    def settings(self) -> dict[str, str]:
        """The settings naming these keys (scrapy-redis's and ``DISTRIBUTED_WORKERS_KEY``)."""
        return {
            "SCHEDULER_QUEUE_KEY": self.requests,
            "SCHEDULER_DUPEFILTER_KEY": self.dupefilter,
            "REDIS_START_URLS_KEY": self.start_urls,
            "DISTRIBUTED_WORKERS_KEY": self.workers,
            "DISTRIBUTED_FRONTIER_KEY": self.frontier,
        }


def apply_key_prefix(settings: BaseSettings, default_prefix: str) -> None:
    """Name the scrapy-redis keys after ``REDIS_KEY_PREFIX`` (default: the spider's name),
    at ``spider`` priority: a key set with ``-s`` still wins."""
    prefix = settings.get("REDIS_KEY_PREFIX") or default_prefix
    for name, key in RedisKeys(str(prefix)).settings().items():
        settings.set(name, key, priority="spider")


class PeerLeases:
    """Which workers of a crawl are working: a Redis sorted set (``<prefix>:workers``) of
    worker ids scored by the end of their lease, in the Redis server's clock.

    A working worker renews its lease every poll interval; an idle one gives it up. A
    worker that dies keeps it until it runs out (:data:`PEER_LEASE`).
    """

    def __init__(self, server: Any, key: str, *, lease: float = PEER_LEASE) -> None:
        self.server = server
        self.key = key
        self.lease = lease
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PeerLeases | None:
        """The leases of the crawl's Redis frontier; None without scrapy-redis or without a
        ``DISTRIBUTED_WORKERS_KEY`` (a crawl without peers)."""
        template = crawler.settings.get("DISTRIBUTED_WORKERS_KEY")
        if not template:
            return None
        try:
            from scrapy_redis.connection import get_redis_from_settings
        except ImportError:
            return None
        key = str(template) % {"spider": getattr(crawler.spidercls, "name", "")}
        return cls(get_redis_from_settings(crawler.settings), key)

    def _now(self) -> float:
        seconds, microseconds = self.server.time()
        return float(seconds) + microseconds / 1e6

    def working(self) -> None:
        """Take or renew this worker's lease."""
        self.server.zadd(self.key, {self.worker_id: self._now() + self.lease})

    def resting(self) -> None:
        """Give this worker's lease up."""
        self.server.zrem(self.key, self.worker_id)

    def others_working(self) -> bool:
        """Whether another worker holds a lease that has not run out."""
        self.server.zremrangebyscore(self.key, "-inf", self._now())
        me = self.worker_id.encode()
        return any(member != me for member in self.server.zrange(self.key, 0, -1))


class WaitForPeers:
    """Keeps an idle worker open while a peer is working (:class:`PeerLeases`), and then
    until it has had nothing to do for ``DISTRIBUTED_IDLE_TIMEOUT`` seconds (0: forever,
    waiting for new seeds); meanwhile it looks at the shared queue every
    ``DISTRIBUTED_POLL_INTERVAL`` seconds.

    With a shared queue, a worker finds the queue empty whenever its peers are busy with the
    last pages of a level: Scrapy would close it then, although those pages are about to
    queue their links. While it is open, a worker says in Redis whether it is working, every
    poll interval, so its idle peers wait for it however slow its pages are. And an idle
    Scrapy engine looks at its scheduler again only every 5 seconds (its heartbeat), so a
    worker started before there is work to share, or idle for a moment, would join late.
    """

    def __init__(
        self,
        timeout: float,
        poll_interval: float = 0.5,
        crawler: Any = None,
        peers: PeerLeases | None = None,
    ) -> None:
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.crawler = crawler
        self.peers = peers
        self._idle_since: float | None = None
        self._wake_call: Any = None
        self._heartbeat: Any = None
        self._peer_errors = 0
        self.outage_reported = False
        """True when the scheduler (crawler.frontier.FrontierScheduler) reports a Redis
        outage: the leases' connection errors are then logged at DEBUG, not once more."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        timeout = crawler.settings.getfloat("DISTRIBUTED_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT)
        poll = crawler.settings.getfloat("DISTRIBUTED_POLL_INTERVAL", 0.5)
        if timeout < 0 or poll < 0:
            raise NotConfigured("DISTRIBUTED_IDLE_TIMEOUT and DISTRIBUTED_POLL_INTERVAL >= 0")
        extension = cls(timeout, poll, crawler, PeerLeases.from_crawler(crawler))
        extension.outage_reported = _frontier_reports_outages(crawler)
        crawler.signals.connect(extension.busy, signal=signals.response_received)
        crawler.signals.connect(extension.busy, signal=signals.item_scraped)
        crawler.signals.connect(extension.busy, signal=signals.item_dropped)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def busy(self) -> None:
        self._idle_since = None

    def spider_opened(self) -> None:
        """Start telling the peers, every poll interval, whether this worker is working."""
        if self.peers is None or self.poll_interval <= 0:
            return
        from twisted.internet import task

        self._heartbeat = task.LoopingCall(self._tell_peers)
        self._heartbeat.start(self.poll_interval, now=True)

    def spider_idle(self) -> None:
        now = time.monotonic()
        self._peers_say("resting")
        if self._peers_say("others_working"):
            self._idle_since = now  # the clock starts when the last peer stops working
        if self._idle_since is None:
            self._idle_since = now
        if self.timeout == 0 or now - self._idle_since < self.timeout:
            self._schedule_wake()
            raise DontCloseSpider

    def spider_closed(self) -> None:
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()
        if self._heartbeat is not None and self._heartbeat.running:
            self._heartbeat.stop()
        self._peers_say("resting")

    def _tell_peers(self) -> None:
        engine = getattr(self.crawler, "engine", None)
        try:
            idle = engine is None or engine.spider_is_idle()
        except RuntimeError:  # no engine slot: not open yet, or closing
            return
        self._peers_say("resting" if idle else "working")

    def _peers_say(self, method: str) -> Any:
        """Call ``self.peers.<method>()``; a Redis error is logged (the first few, or at DEBUG
        a connection error the scheduler reports) and answers None: the worker then falls
        back on the idle timeout alone."""
        if self.peers is None:
            return None
        try:
            return getattr(self.peers, method)()
        except Exception as exc:  # redis.exceptions.* without importing redis here
            if self.outage_reported and _is_redis_down(exc):
                log.debug("Could not reach the workers' leases in Redis: %s", exc)
                return None
            self._peer_errors += 1
            if self._peer_errors <= 3:
                log.warning("Could not reach the workers' leases in Redis: %s", exc)
            return None

    def _schedule_wake(self) -> None:
        if self.crawler is None or self.poll_interval <= 0:
            return
        if self._wake_call is not None and self._wake_call.active():
            return
        from twisted.internet import reactor

        self._wake_call = reactor.callLater(self.poll_interval, self._wake)

    def _wake(self) -> None:
        """Have the engine ask the scheduler for a request now, not at its next heartbeat.
        (The engine's slot is not public API: without it, the heartbeat still polls.)"""
        slot = getattr(getattr(self.crawler, "engine", None), "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()


def _frontier_reports_outages(crawler: Crawler) -> bool:
    """Whether the crawler's scheduler is a ``FrontierScheduler`` (it logs Redis outages)."""
    try:
        from scrapy.utils.misc import load_object

        from crawler.frontier import FrontierScheduler

        return issubclass(load_object(crawler.settings["SCHEDULER"]), FrontierScheduler)
    except (ImportError, TypeError, ValueError, NameError, AttributeError):
        return False


def _is_redis_down(exc: Exception) -> bool:
    from crawler.frontier import REDIS_DOWN

    return isinstance(exc, REDIS_DOWN)


def _redis(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url)


def seed(redis_url: str, key: str, urls: Sequence[str]) -> int:
    """Push start URLs to the list a ``site_redis`` worker reads; returns the list's length."""
    if not urls:
        return 0
    return int(_redis(redis_url).rpush(key, *[json.dumps({"url": url}) for url in urls]))


def clear(redis_url: str, keys: RedisKeys) -> int:
    """Delete a crawl's queue, seen-set and seeds (the next crawl starts afresh)."""
    return int(_redis(redis_url).delete(*keys.all()))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m crawler.distributed {seed,status,clear}``."""
    parser = argparse.ArgumentParser(
        prog="python -m crawler.distributed",
        description="Seed, inspect or clear the Redis frontier of a distributed crawl.",
    )
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument(
        "--prefix", default="site_redis", help="REDIS_KEY_PREFIX (default: the spider name)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    push = commands.add_parser("seed", help="push start URLs for site_redis workers")
    push.add_argument("urls", nargs="+")
    commands.add_parser("status", help="requests queued, requests seen, seeds waiting")
    commands.add_parser("clear", help="delete the queue, the seen-set and the seeds")
    args = parser.parse_args(argv)
    keys = RedisKeys(args.prefix)
    try:
        if args.command == "seed":
            print(f"{seed(args.redis_url, keys.start_urls, args.urls)} seed(s) waiting")
        elif args.command == "status":
            server = _redis(args.redis_url)
            print(f"queued: {server.zcard(keys.requests)}")
            print(f"seen: {server.scard(keys.dupefilter)}")
            print(f"seeds: {server.llen(keys.start_urls)}")
            print(f"workers working: {server.zcard(keys.workers)}")
        else:
            print(f"deleted {clear(args.redis_url, keys)} key(s)")
    except Exception as exc:  # redis.exceptions.* without importing redis at module level
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
