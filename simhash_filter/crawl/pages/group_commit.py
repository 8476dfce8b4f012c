"""Check-and-add with group commit: the pages that arrive while one transaction runs go
into the next one together.

The crawl's pages come one at a time from the reactor; a transaction per page would spend
most of its time committing. :class:`GroupCommit` runs the store's ``add_many`` (the same
verdicts as one ``check_and_add`` a page) in a worker thread, and finds the page at fault
when a batch fails so the others still get their verdicts.

A batch that timed out on a lock (``StoreBusy``) or met an outage the store's retry did not
cover (``StoreUnavailable``) is not retried page by page with the full wait each: after an
outage every page gets the error at once; after a lock timeout each page is tried alone with
a short wait (``WaitBounds.short_wait``: a page that conflicts with no stuck lock needs none),
for one more lock timeout in all, and the pages left get the error.

A transaction also *lingers* before it starts, at most :data:`LINGER` seconds, while more
pages are on their way (``more_coming``: the filter's pages in the page work): in a crawl
bound by the page work pages arrive far apart next to a transaction's time, so without it
most transactions carry one page, each paying the transaction's fixed cost
(bench/history/cost.md, 2026-11-27).
The verdicts are the same (``add_many`` in arrival order); only the first page of a
transaction waits, by the bound at most.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from scrapy.utils.asyncio import is_asyncio_available, run_in_thread

from simhash_filter.store.faults import WaitBounds
from simhash_filter.store.page_store import PageStore
from simhash_filter.store.records import (
    PageRow,
    StoreBusy,
    StoreUnavailable,
    Verdict,
)

__all__ = ["LINGER", "MAX_BATCH", "GroupCommit", "StoreFactory"]

MAX_BATCH = 64
"""Pages in one check-and-add transaction at most."""
LINGER = 0.05
"""Seconds a transaction waits at most for more pages before it starts, while more are on
their way (bench/history/cost.md: the group commit's linger)."""


StoreFactory = Callable[[], PageStore]


class GroupCommit:
    """Check-and-add with group commit: while one transaction runs in a worker thread, the
    pages that arrive wait and go into the next one together (``add_many``: the same
    verdicts as one call each, and far less time per page)."""

    def __init__(
        self,
        store: Callable[[], PageStore],
        *,
        linger: float = 0.0,
        more_coming: Callable[[], bool] = lambda: False,
    ) -> None:
        """``linger``: seconds a transaction waits at most for more pages while
        ``more_coming()`` is true (0: it starts at once); :meth:`wake` tells it that
        ``more_coming()`` may have turned false."""
        self._store = store
        self._queue: list[tuple[PageRow, asyncio.Future[Verdict]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._linger = linger
        self._more_coming = more_coming
        self._arrived: asyncio.Event | None = None  # set by a page's arrival or wake()

    @property
    def waiting(self) -> int:
        """Pages queued for a transaction that has not started."""
        return len(self._queue)

    def wake(self) -> None:
        """Re-check a lingering transaction's condition now (no more pages may come)."""
        if self._arrived is not None:
            self._arrived.set()

    async def check_and_add(self, row: PageRow) -> Verdict:
        """The store's verdict on ``row``, committed on return."""
        if not is_asyncio_available():  # another Twisted reactor: one transaction a page
            return await run_in_thread(self.add_rows_or_raise, [row])
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
        self.wake()
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        return await future

    def add_rows_or_raise(self, rows: list[PageRow]) -> Verdict:
        """Blocking: one row's verdict (its error raised)."""
        (result,) = self.add_rows(rows)
        if isinstance(result, BaseException):
            raise result
        return result

    async def _flush(self) -> None:
        try:
            while self._queue:
                await self._wait_for_more()
                batch = self._queue[:MAX_BATCH]
                del self._queue[:MAX_BATCH]
                try:
                    verdicts = await run_in_thread(self.add_rows, [row for row, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), result in zip(batch, verdicts, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, BaseException):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._flusher = None
            self._arrived = None  # (an event belongs to one event loop)

    async def _wait_for_more(self) -> None:
        """Linger: until the batch is full, no more pages are on their way, or the bound
        ran out since the wait began."""
        if self._linger <= 0:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._linger
        if self._arrived is None:
            self._arrived = asyncio.Event()
        while len(self._queue) < MAX_BATCH and self._more_coming():
            left = deadline - loop.time()
            if left <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except TimeoutError:
                return

    def add_rows(self, rows: list[PageRow]) -> list[Verdict | BaseException]:
        """Blocking: each row's verdict, or the error that row alone met (see the module
        doc for a batch that timed out or met an outage)."""
        store = self._store()
        failed: Exception | None = None
        if len(rows) > 1:
            try:
                return list(store.add_many(rows))
            except StoreUnavailable as exc:  # the server is away: no page would get through
                return [exc] * len(rows)
            except StoreBusy as exc:
                if exc.whole_database:  # (SQLite's one write lock): every page would wait
                    return [exc] * len(rows)
                failed = exc
            except Exception:  # find the page at fault: the others still get their verdicts
                pass
        bounds: WaitBounds = getattr(store, "bounds", None) or WaitBounds()
        return self._one_by_one(store, rows, bounds, failed)

    def _one_by_one(
        self, store: PageStore, rows: list[PageRow], bounds: WaitBounds, busy: Exception | None
    ) -> list[Verdict | BaseException]:
        """Each row alone; once one timed out on a lock (``busy``), the others wait only
        briefly, and for one lock timeout in all; once one met an outage, none is tried."""
        deadline = time.monotonic() + (bounds.lock_timeout or 0.0)
        results: list[Verdict | BaseException] = []
        for row in rows:
            if busy is not None and (_everywhere(busy) or time.monotonic() >= deadline):
                results.append(busy)
                continue
            try:
                wait = None if busy is None else bounds.short_wait()
                (verdict,) = store.add_many([row], wait=wait)
                results.append(verdict)
            except (StoreBusy, StoreUnavailable) as exc:
                if busy is None:
                    deadline = time.monotonic() + (bounds.lock_timeout or 0.0)
                busy = exc
                results.append(exc)
            except Exception as exc:
                results.append(exc)
        return results


def _everywhere(error: Exception) -> bool:
    """Whether ``error`` would meet every page: an outage, or SQLite's one write lock."""
    return isinstance(error, StoreUnavailable) or (
        isinstance(error, StoreBusy) and error.whole_database
    )
