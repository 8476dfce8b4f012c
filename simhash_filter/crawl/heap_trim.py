"""``HeapTrim``: the C heap's free memory given back to the system now and then (issue 45).

A crawl with the filter frees far more than it keeps, in several threads (the page workers'
results, SQLite's and lxml's buffers, the learner's thread), each thread allocating from a
glibc arena of its own. glibc returns only the top of an arena to the system, so what is
freed below stays in the process: on a generated-site crawl the crawl process's heap in use
stayed at ~35 MiB from 5k to 25k pages while the free heap glibc kept grew from 28 to 43 MiB
(``mallinfo2``), most of the RSS the crawl gained over the unfiltered one. Every
:data:`TRIM_SECONDS` this extension calls glibc's ``malloc_trim(0)`` in a thread, which gives
back every free page of every arena (``simhash_filter/memory/trims`` counts the calls).
When it is made (before the crawl's threads start) it also caps glibc's arenas at
:data:`ARENA_MAX` (``mallopt(M_ARENA_MAX)``; not where ``MALLOC_ARENA_MAX`` is set): by default
each thread that allocates may get one of up to eight a core, and each keeps its long-lived
blocks (SQLite's page caches, response buffers) spread over pages no trim can give back.
Without glibc (musl, macOS, Windows) it is not enabled. The add-on adds it; a project turns
it off like any extension (``EXTENSIONS = {"simhash_filter.crawl.heap_trim.HeapTrim": None}``).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from simhash_filter.crawl.per_crawler import crawler_config

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["ARENA_MAX", "TRIM_SECONDS", "HeapTrim", "cap_arenas", "malloc_trim"]

logger = logging.getLogger(__name__)

TRIMS_STAT = "simhash_filter/memory/trims"
TRIM_SECONDS = 10.0
"""Seconds between two trims (one takes milliseconds; the heap freed comes back in ~25 s)."""

ARENA_MAX = 2
"""glibc arenas the crawl process allocates from at most (the main one and one for threads)."""
_M_ARENA_MAX = -8  # glibc's malloc.h


@functools.cache
def _glibc(name: str, *argtypes: Any) -> Callable[..., int] | None:
    """The process's own C library's function ``name`` (glibc's, returning an int), or None
    where there is none (not Linux, or a C library without it: musl has no ``malloc_trim``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


def cap_arenas(limit: int = ARENA_MAX) -> bool:
    """Cap glibc's arenas at ``limit`` (see the module doc): True when set; False without
    glibc, or where the environment's ``MALLOC_ARENA_MAX`` already says."""
    mallopt = _glibc("mallopt", ctypes.c_int, ctypes.c_int)
    if mallopt is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(mallopt(_M_ARENA_MAX, limit))


def _glibc_trim() -> Callable[..., int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    return _glibc("malloc_trim", ctypes.c_size_t)


def malloc_trim() -> bool | None:
    """Give the free heap back to the system: True when glibc released some, False when
    none; None without glibc."""
    trim = _glibc_trim()
    return None if trim is None else bool(trim(0))


class HeapTrim:
    """Trims the heap every ``interval`` seconds while the spider runs (module doc)."""

    def __init__(self, crawler: Crawler, interval: float = TRIM_SECONDS, clock: Any = None) -> None:
        """``clock``: the loop's (a test's ``task.Clock``; None: the reactor)."""
        self.crawler = crawler
        self.interval = interval
        self.clock = clock
        self._loop: Any = None
        self.trims = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler_config(crawler).enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        if _glibc_trim() is None:
            raise NotConfigured("no glibc malloc_trim")
        cap_arenas()
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        from twisted.internet import task

        self._loop = task.LoopingCall(self.trim)
        if self.clock is not None:
            self._loop.clock = self.clock
        self._loop.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def trim(self) -> Any:
        """One trim, in a thread of the reactor's pool (a Deferred the loop waits for)."""
        from twisted.internet import threads

        self.trims += 1
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(TRIMS_STAT)
        done = threads.deferToThread(malloc_trim)
        done.addErrback(lambda failure: logger.debug("simhash_filter: malloc_trim: %s", failure))
        return done
