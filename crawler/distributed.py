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
while its peers may still queue work), the Redis key names, and a small command line to
seed a crawl, show its queue and clear it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
    "RedisKeys",
    "WaitForPeers",
    "clear",
    "main",
    "seed",
]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_IDLE_TIMEOUT = 10.0
"""Seconds a worker with nothing to do waits for its peers to queue more requests."""


@dataclass(frozen=True, slots=True)
class RedisKeys:
    """The Redis keys of one crawl: ``<prefix>:requests``, ``:dupefilter``, ``:start_urls``.

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

    def all(self) -> tuple[str, str, str]:
        return (self.requests, self.dupefilter, self.start_urls)

    def settings(self) -> dict[str, str]:
        """The scrapy-redis settings naming these keys."""
        return {
            "SCHEDULER_QUEUE_KEY": self.requests,
            "SCHEDULER_DUPEFILTER_KEY": self.dupefilter,
            "REDIS_START_URLS_KEY": self.start_urls,
        }


def apply_key_prefix(settings: BaseSettings, default_prefix: str) -> None:
    """Name the scrapy-redis keys after ``REDIS_KEY_PREFIX`` (default: the spider's name),
    at ``spider`` priority: a key set with ``-s`` still wins."""
    prefix = settings.get("REDIS_KEY_PREFIX") or default_prefix
    for name, key in RedisKeys(str(prefix)).settings().items():
        settings.set(name, key, priority="spider")


class WaitForPeers:
    """Keeps an idle worker open until it has had nothing to do for ``DISTRIBUTED_IDLE_TIMEOUT``
    seconds (0: forever, waiting for new seeds), and has it look at the shared queue every
    ``DISTRIBUTED_POLL_INTERVAL`` seconds meanwhile.

    With a shared queue, a worker finds the queue empty whenever its peers are busy with the
    last pages of a level: Scrapy would close it then, although those pages are about to
    queue their links. And an idle Scrapy engine looks at its scheduler again only every 5
    seconds (its heartbeat), so a worker started before there is work to share, or idle for
    a moment, would join late.
    """

    def __init__(self, timeout: float, poll_interval: float = 0.5, crawler: Any = None) -> None:
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.crawler = crawler
        self._idle_since: float | None = None
        self._wake_call: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        timeout = crawler.settings.getfloat("DISTRIBUTED_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT)
        poll = crawler.settings.getfloat("DISTRIBUTED_POLL_INTERVAL", 0.5)
        if timeout < 0 or poll < 0:
            raise NotConfigured("DISTRIBUTED_IDLE_TIMEOUT and DISTRIBUTED_POLL_INTERVAL >= 0")
        extension = cls(timeout, poll, crawler)
        crawler.signals.connect(extension.busy, signal=signals.response_received)
        crawler.signals.connect(extension.busy, signal=signals.item_scraped)
        crawler.signals.connect(extension.busy, signal=signals.item_dropped)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def busy(self) -> None:
        self._idle_since = None

    def spider_idle(self) -> None:
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        if self.timeout == 0 or now - self._idle_since < self.timeout:
            self._schedule_wake()
            raise DontCloseSpider

    def spider_closed(self) -> None:
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()

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
        else:
            print(f"deleted {clear(args.redis_url, keys)} key(s)")
    except Exception as exc:  # redis.exceptions.* without importing redis at module level
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
