"""``FrontierScheduler``: scrapy-redis's scheduler that rides out a Redis outage and says so
when the shared frontier is lost.

scrapy-redis lets every Redis error escape from the scheduler: each one is a traceback
("Task exception was never retrieved ... ConnectionError"), a request being scheduled is
lost, and a worker that finds Redis down finds "no pending requests" and closes as
``finished``. When Redis restarts without persistence the queue and the seen-set are gone,
and the workers end, exit status 0, ``finished``, with most of the site never crawled.

This scheduler:

- catches Redis connection errors in every call (one WARNING per kind, then a count when
  Redis answers again); ``next_request`` answers "nothing now", a request that cannot be
  queued is held (up to :data:`MAX_HELD` of them) and queued when Redis is back, and while
  Redis is away the worker counts as having pending requests, so it does not close as
  ``finished``; an outage longer than ``DISTRIBUTED_REDIS_OUTAGE`` (60 s) closes the worker
  with ``finish_reason = "frontier_unreachable"`` and one ERROR line (``scrapy crawl`` then
  exits 1: crawler/commands/crawl.py). Only a call that reached Redis ends an outage: a call
  that met an error anywhere inside it (scrapy-redis's ``has_pending_requests`` asks
  ``len(self)``, itself guarded) counts as failed, so the warning is not re-armed and the
  outage clock does not start over;
- marks the frontier: a key ``DISTRIBUTED_FRONTIER_KEY`` (``<prefix>:frontier``) made with
  the queue, looked at every :data:`CHECK_INTERVAL` seconds and after every outage. When it
  is gone, so is everything Redis held (a restart without persistence, or the keys were
  deleted): the worker logs one ERROR line and closes with
  ``finish_reason = "frontier_lost"``. ``python -m crawler.distributed clear`` deletes it
  with the other keys, for a fresh crawl.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from scrapy.utils.defer import deferred_from_coro
from scrapy_redis.scheduler import Scheduler

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

__all__ = ["FRONTIER_LOST", "FRONTIER_UNREACHABLE", "FrontierScheduler"]

log = logging.getLogger(__name__)

FRONTIER_LOST = "frontier_lost"
FRONTIER_UNREACHABLE = "frontier_unreachable"
CHECK_INTERVAL = 2.0
"""Seconds between two looks at the frontier's mark while Redis answers."""
DEFAULT_OUTAGE = 60.0
"""Seconds of Redis outage after which a worker closes (``DISTRIBUTED_REDIS_OUTAGE``)."""
MAX_HELD = 10_000
"""Requests held in memory while Redis cannot take them."""
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)  # BusyLoadingError is a ConnectionError

T = TypeVar("T")


class FrontierScheduler(Scheduler):  # type: ignore[misc]
    """See the module doc. Settings: scrapy-redis's, plus ``DISTRIBUTED_FRONTIER_KEY`` and
    ``DISTRIBUTED_REDIS_OUTAGE``."""

    crawler: Crawler | None = None
    frontier_key_template = "%(spider)s:frontier"
    outage_limit = DEFAULT_OUTAGE

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        instance: Self = super().from_crawler(crawler)
        instance.crawler = crawler
        instance.frontier_key_template = crawler.settings.get(
            "DISTRIBUTED_FRONTIER_KEY", cls.frontier_key_template
        )
        instance.outage_limit = crawler.settings.getfloat(
            "DISTRIBUTED_REDIS_OUTAGE", DEFAULT_OUTAGE
        )
        return instance

    def open(self, spider: Spider) -> None:
        self._held: deque[Request] = deque()
        self._errors: dict[str, int] = {}
        self._failures = 0  # errors met, ever: a guarded call that met one did not reach Redis
        self._down_since: float | None = None
        self._checked_at = 0.0
        self._closing = False
        self.frontier_key = self.frontier_key_template % {"spider": spider.name}
        super().open(spider)
        # the mark: made by the first worker of a crawl, kept by the others
        self.server.set(self.frontier_key, uuid.uuid4().hex, nx=True)
        self._epoch = self.server.get(self.frontier_key)
        self._checked_at = time.monotonic()

    # -- scrapy-redis's calls, each guarded

    def enqueue_request(self, request: Request) -> bool:
        queued = self._guarded(
            lambda: bool(super(FrontierScheduler, self).enqueue_request(request))
        )
        if queued is None:  # Redis is away: hold it, queue it later
            if len(self._held) < MAX_HELD:
                self._held.append(request)
                return True
            self._count_stat("held_dropped")
            return False
        return queued

    def next_request(self) -> Request | None:
        if self._closing:
            return None
        request = self._guarded(lambda: super(FrontierScheduler, self).next_request())
        if self._down_since is None and time.monotonic() - self._checked_at >= CHECK_INTERVAL:
            self._check_frontier()
        return request

    def has_pending_requests(self) -> bool:
        if self._closing:
            return False
        # the queue itself: scrapy-redis's has_pending_requests asks len(self), guarded
        # below, which would answer from the held requests without reaching Redis
        pending = self._guarded(lambda: len(self.queue) > 0)
        return True if pending is None else pending or bool(self._held)

    def __len__(self) -> int:
        length = self._guarded(lambda: len(self.queue))
        return len(self._held) + (length or 0)

    # -- the outage

    def _guarded(self, call: Callable[[], T]) -> T | None:
        """``call()``, or None while Redis cannot be reached (counted, logged once a kind).
        A call that met an error inside it (a nested guarded call caught it) failed too:
        only a call that reached Redis ends an outage."""
        failures = self._failures
        try:
            result = call()
        except REDIS_DOWN as exc:
            self._unreachable(exc)
            return None
        if self._failures != failures:
            return None
        if self._down_since is not None:
            self._reachable()
        return result

    def _unreachable(self, exc: Exception) -> None:
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        kind = type(exc).__name__
        self._failures += 1
        self._errors[kind] = self._errors.get(kind, 0) + 1
        self._count_stat("errors")
        if self._errors[kind] == 1:
            log.warning(
                "The shared frontier in Redis cannot be reached (%s: %s); the worker waits "
                "for it (up to DISTRIBUTED_REDIS_OUTAGE = %.3g s) and counts the errors",
                kind,
                str(exc).splitlines()[0] if str(exc) else "",
                self.outage_limit,
            )
        if now - self._down_since > self.outage_limit:
            self._close(
                FRONTIER_UNREACHABLE,
                f"The shared frontier in Redis was unreachable for more than "
                f"{self.outage_limit:.3g} s (DISTRIBUTED_REDIS_OUTAGE): the worker stops "
                f"with {len(self._held)} requests it could not queue",
            )

    def _reachable(self) -> None:
        assert self._down_since is not None
        seconds = time.monotonic() - self._down_since
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(self._errors.items()))
        self._down_since = None
        self._errors.clear()
        log.info("The shared frontier in Redis answers again after %.1f s (%s)", seconds, counts)
        if self._check_frontier():
            held, self._held = list(self._held), deque()
            for request in held:
                self.enqueue_request(request)

    def _check_frontier(self) -> bool:
        """Whether the frontier's mark is still the one this worker saw at open; when it
        is not, the worker closes (``frontier_lost``)."""
        try:
            epoch = self.server.get(self.frontier_key)
        except REDIS_DOWN as exc:
            self._unreachable(exc)
            return False
        self._checked_at = time.monotonic()
        if epoch == self._epoch:
            return True
        self._close(
            FRONTIER_LOST,
            f"The shared frontier in Redis was lost: its mark {self.frontier_key!r} is gone, "
            "so Redis restarted without persistence (or the crawl's keys were deleted) and "
            "the queued requests and the seen-set went with it. The worker stops; re-seed "
            "the crawl, and give Redis persistence (appendonly yes) so that a restart keeps "
            "the frontier (docs/distributed.md, Faults)",
        )
        return False

    def _close(self, reason: str, message: str) -> None:
        if self._closing:
            return
        self._closing = True
        log.error("%s (finish_reason %r)", message, reason)
        engine = getattr(self.crawler, "engine", None)
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason=reason))

    def _count_stat(self, name: str) -> None:
        stats: Any = getattr(self, "stats", None)
        if stats is not None:
            stats.inc_value(f"frontier/{name}")
