"""``PageFilter``: the near-duplicate check shared by the pipeline and the middleware.

Page text → signature (:mod:`~simhash_filter.pagework`) → ``FingerprintStore.check_and_add``
(grouped into shared transactions by :class:`GroupCommit`), then stats and logs. There is
one ``PageFilter`` (and one store) per crawler, whichever components use it
(:meth:`PageFilter.for_crawler`); the pipeline and the middleware are thin Scrapy adapters
around it. A response checked by the middleware is handed on to the pipeline
(:class:`Handoff`), so its item is not checked twice.

Outcomes (each one a stat under ``simhash_filter/``; they are disjoint):

- ``kept``: a new page, admitted to the index; the item passes.
- ``dropped``: a near-duplicate of a page already kept: within ``MAX_DISTANCE`` bits of it
  and confirmed by the sketches (``MIN_SIMILARITY``; the store's match rule).
- ``unchanged`` / ``changed``: a URL already in the index, re-crawled, matching / not
  matching its stored version under the same rule (a changed page that became a
  near-duplicate of *another* page is ``dropped``); the item passes.
- ``no_text``: no text field, no extractable HTML, or fewer tokens than ``MIN_TOKENS``; the
  item passes unfingerprinted (an empty page must not collide with every other empty page).
- ``too_deep``: no text because the page is nested deeper than even the ``huge_tree`` parser
  reads (2,048 elements: its text is lost in the parser); the item passes unfingerprinted,
  counted apart from ``no_text`` so that a page hiding its text this way is seen.
- ``boilerplate`` (not disjoint: also ``kept``, ``unchanged`` or ``changed``): the page's
  main text matched a stored page's, but the visible pages around them differ, so it is an
  extraction failure rather than a copy, and the page was admitted.
- ``errors``: the store (or anything else) failed for this page. The error is logged with
  its traceback and the page passes (``FAIL_OPEN = True``, the default) or is dropped
  (``FAIL_OPEN = False``: nothing unchecked gets through; the page is not in the index, so
  a later crawl checks it again). One bad page never stops a crawl. The first error of each
  kind is logged with its traceback, the next ones as one line per kind with a count
  (:class:`~simhash_filter.errorlog.RepeatedErrors`): a full disk does not flood the log.

Caps a page met on the way (``capped/<cap>``, not disjoint; :mod:`simhash_filter.extract`,
:mod:`simhash_filter.text`): ``bytes`` (``MAX_BYTES``), ``elements`` (the tree cut after
``MAX_ELEMENTS``), ``deep`` (flattened), ``too_deep``, ``marks`` (a run of combining marks
cut), ``han`` (a Han run segmented in pieces).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from scrapy.utils.asyncio import is_asyncio_available, run_in_thread

from .config import Config
from .errorlog import RepeatedErrors
from .pagework import PageWork, has_text, work_page
from .pool import PageJob, PagePool, PageResult
from .startfailure import report_start_failure
from .store.records import PageRow, Verdict, VerdictKind

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from .fingerprint import Fingerprinter

__all__ = [
    "STATS_PREFIX",
    "Check",
    "GroupCommit",
    "Handoff",
    "Outcome",
    "PageFilter",
    "StoreLike",
]

logger = logging.getLogger(__name__)

STATS_PREFIX = "simhash_filter/"
HANDOFF_SIZE = 10_000
"""Responses checked by the middleware whose item has not come yet, kept at most."""
MAX_BATCH = 64
"""Pages in one check-and-add transaction at most."""
WORKER_STATS = STATS_PREFIX + "workers/"
"""Prefix of the page pool's stats: ``pages`` signed in workers, their ``cpu_ms`` (CPU time
in the workers), ``busy_ms`` (from handing a page to a worker to its answer), ``wait_ms``
(queued for a free worker), ``restarts`` (workers replaced after a death or timeout), and
``start_cpu_ms`` (CPU time the workers took to start, set when the pool closes)."""

_T = TypeVar("_T")


async def _result(future: Future[_T]) -> _T:
    """Await a ``concurrent.futures.Future`` without blocking the reactor."""
    if is_asyncio_available():
        return await asyncio.wrap_future(future)
    return await run_in_thread(future.result)  # another Twisted reactor


class StoreLike(Protocol):
    """What the filter needs of a :class:`~simhash_filter.store.FingerprintStore`."""

    def check_and_add(
        self,
        url: str,
        fingerprint: int,
        *,
        text_length: int = 0,
        sketch: bytes | None = None,
        text: bytes | None = None,
    ) -> Verdict: ...

    def add_many(self, rows: Iterable[PageRow]) -> list[Verdict]: ...

    def close(self) -> None: ...


StoreFactory = Callable[[], StoreLike]


class Outcome(enum.Enum):
    """What the filter did with one page; each value is also its stat name."""

    KEPT = "kept"
    DROPPED = "dropped"
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    NO_TEXT = "no_text"
    TOO_DEEP = "too_deep"
    ERROR = "errors"

    @property
    def passes(self) -> bool:
        """True when the page was admitted (or already stored) under this outcome."""
        return self in {Outcome.KEPT, Outcome.UNCHANGED, Outcome.CHANGED}

    @classmethod
    def of(cls, verdict: Verdict) -> Outcome:
        """The outcome a store verdict means."""
        return _OUTCOME_OF[verdict.kind]


_OUTCOME_OF = {
    VerdictKind.NEW: Outcome.KEPT,
    VerdictKind.DUPLICATE: Outcome.DROPPED,
    VerdictKind.UNCHANGED: Outcome.UNCHANGED,
    VerdictKind.CHANGED: Outcome.CHANGED,
}


@dataclass(frozen=True, slots=True)
class Check:
    """The result of checking one page."""

    outcome: Outcome
    url: str
    fingerprint: int | None = None
    verdict: Verdict | None = None
    error: BaseException | None = None
    capped: tuple[str, ...] = ()
    """The caps the page met (:class:`~simhash_filter.pagework.PageWork`)."""

    @property
    def hex_fingerprint(self) -> str | None:
        """The fingerprint as 16 hex digits, or None."""
        return None if self.fingerprint is None else f"{self.fingerprint:016x}"


class GroupCommit:
    """Check-and-add with group commit: while one transaction runs in a worker thread, the
    pages that arrive wait and go into the next one together (``add_many``: the same
    verdicts as one call each, and far less time per page)."""

    def __init__(self, store: Callable[[], StoreLike]) -> None:
        self._store = store
        self._queue: list[tuple[PageRow, asyncio.Future[Verdict]]] = []
        self._flusher: asyncio.Future[None] | None = None

    async def check_and_add(self, row: PageRow) -> Verdict:
        """The store's verdict on ``row``, committed on return."""
        if not is_asyncio_available():  # another Twisted reactor: one transaction a page
            return await run_in_thread(self.add_rows_or_raise, [row])
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
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

    def add_rows(self, rows: list[PageRow]) -> list[Verdict | BaseException]:
        """Blocking: each row's verdict, or the error that row alone met."""
        store = self._store()
        if len(rows) > 1:
            try:
                return list(store.add_many(rows))
            except Exception:  # find the page at fault: the others still get their verdicts
                pass
        results: list[Verdict | BaseException] = []
        for row in rows:
            try:
                results.append(
                    store.check_and_add(
                        row.url,
                        row.fingerprint,
                        text_length=row.text_length,
                        sketch=row.sketch,
                        text=row.text,
                    )
                )
            except Exception as exc:
                results.append(exc)
        return results


def _canonical(url: str) -> str:
    from .store import canonical_url  # the one place URLs are canonicalized

    return str(canonical_url(url))


class Handoff:
    """The middleware → pipeline hand-off: a response checked once is not checked again.

    Keyed by canonical URL, bounded (the oldest go first), thread-safe."""

    def __init__(self, size: int = HANDOFF_SIZE) -> None:
        self._size = size
        self._checks: OrderedDict[str, Check] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, check: Check) -> None:
        """Keep a response's check (not a drop) for the item the spider will make of it."""
        key = _canonical(check.url)
        with self._lock:
            self._checks[key] = check
            self._checks.move_to_end(key)
            while len(self._checks) > self._size:
                self._checks.popitem(last=False)

    def recall(self, url: str) -> Check | None:
        """The middleware's check of ``url`` (once), or None when there is none."""
        if not self._checks:
            return None
        key = _canonical(url)
        with self._lock:
            return self._checks.pop(key, None)


_SHARED: weakref.WeakKeyDictionary[Crawler, PageFilter] = weakref.WeakKeyDictionary()


class PageFilter:
    """Checks pages against the fingerprint store; shared by the pipeline and the middleware.

    :meth:`check` runs the page work in a worker thread, then the check-and-add (group
    commit); :meth:`record` updates stats and logs in the reactor thread.
    """

    def __init__(
        self,
        config: Config,
        stats: StatsCollector,
        *,
        fingerprinter: Fingerprinter | None = None,
        store_factory: StoreFactory | None = None,
    ) -> None:
        self.config = config
        self.stats = stats
        self.fingerprinter = fingerprinter or config.make_fingerprinter()
        self.handoff = Handoff()
        self._store_factory = store_factory or self._open_store
        self._store: StoreLike | None = None
        self._users = 0
        self._lock = threading.Lock()
        self._commits = GroupCommit(self._open_store_or_raise)
        self._pool: PagePool | None = None
        self._restarts_counted = 0
        self._logged_first_drop = False
        self.errors = RepeatedErrors(logger)

    @classmethod
    def for_crawler(cls, crawler: Crawler, config: Config | None = None) -> PageFilter:
        """The crawler's one filter (created on first use), shared by every component."""
        page_filter = _SHARED.get(crawler)
        if page_filter is None:
            assert crawler.stats is not None
            page_filter = cls(config or Config.from_settings(crawler.settings), crawler.stats)
            _SHARED[crawler] = page_filter
        return page_filter

    def _open_store(self) -> StoreLike:
        from .store import FingerprintStore

        return FingerprintStore.open(
            self.config.database_url,
            spec=self.fingerprinter.spec,
            rule=self.config.match_rule(),
            index=self.config.index,
            blocks=self.config.blocks,
            durable=self.config.durable,
        )

    def _open_store_or_raise(self) -> StoreLike:
        store = self._store
        if store is None:
            raise RuntimeError("the fingerprint store is not open")
        return store

    # -- lifecycle (blocking; reference-counted so the pipeline and the middleware share it)

    def open(self) -> None:
        """Open the store (and start the page pool) for one more user (the first user
        really opens them)."""
        with self._lock:
            if self._store is None:
                try:
                    self._store = self._store_factory()
                except Exception as exc:  # the crawl stops: one clear line, no tracebacks
                    report_start_failure(exc)
                    raise
                self._pool = self._start_pool()
            self._users += 1

    def close(self) -> None:
        """Release one user; the last one stops the page pool and closes the store."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0:
                self.errors.flush()
            if self._users == 0 and self._store is not None:
                pool, self._pool = self._pool, None
                store, self._store = self._store, None
                try:
                    if pool is not None:
                        pool.close()
                        self._count_restarts(pool)  # a replacement after the last page too
                        self.stats.set_value(
                            WORKER_STATS + "start_cpu_ms", round(1000 * pool.start_cpu_seconds)
                        )
                finally:
                    store.close()

    def _start_pool(self) -> PagePool | None:
        """The page pool (``WORKERS`` > 0), or None: the thread path, also when the
        workers cannot start (logged; the crawl goes on)."""
        size = self.config.effective_workers
        if size == 0:
            return None
        pool = PagePool(
            size,
            self.fingerprinter,
            max_bytes=self.config.max_bytes,
            page_timeout=self.config.page_timeout,
        )
        try:
            pool.start()
        except Exception:
            logger.error(
                "Could not start %d near-duplicate page workers (SIMHASH_FILTER_WORKERS): "
                "the page work runs in threads",
                size,
                exc_info=True,
            )
            return None
        # a filter dropped without close() (a test, an aborted start) still ends its workers
        weakref.finalize(self, pool.close)
        logger.info(
            "simhash_filter: %d page workers (SIMHASH_FILTER_WORKERS), pids %s",
            size,
            " ".join(map(str, pool.pids)),
        )
        return pool

    @property
    def pool(self) -> PagePool | None:
        """The running page pool, or None (the thread path)."""
        return self._pool

    # -- checks

    def sign(self, url: str, text: object, html: object) -> PageWork:
        """Blocking: the page work (see :func:`~simhash_filter.pagework.work_page`)."""
        return work_page(
            self.fingerprinter,
            url,
            text,
            html,
            max_bytes=self.config.max_bytes,
            keep_text=self.config.store_text,
        )

    async def _sign_in_pool(self, pool: PagePool, url: str, text: object, html: object) -> PageWork:
        source = html if isinstance(html, bytes | str) and html else None
        if not has_text(text) and source is None:
            return PageWork(None)
        job = PageJob(
            url, str(text) if has_text(text) else None, source, keep_text=self.config.store_text
        )
        try:
            result: PageResult = await _result(pool.submit(job))
        finally:
            self._count_restarts(pool)
        self.stats.inc_value(WORKER_STATS + "pages")
        self.stats.inc_value(WORKER_STATS + "cpu_ms", round(1000 * result.cpu_seconds))
        self.stats.inc_value(WORKER_STATS + "busy_ms", round(1000 * result.busy_seconds))
        self.stats.inc_value(WORKER_STATS + "wait_ms", round(1000 * result.wait_seconds))
        return PageWork(result.signature, result.capped)

    def _count_restarts(self, pool: PagePool) -> None:
        new = pool.restarts - self._restarts_counted
        if new > 0:
            self.stats.inc_value(WORKER_STATS + "restarts", new)
            self._restarts_counted += new

    async def check(self, url: str, text: object = None, html: object = None) -> Check:
        """Check a page: the page work in the page pool (or a worker thread), then
        check-and-add (grouped with other pages' into one transaction while the store is
        busy)."""
        pool = self._pool
        try:
            if pool is None:
                work = await run_in_thread(self.sign, url, text, html)
            else:
                work = await self._sign_in_pool(pool, url, text, html)
        except Exception as exc:  # a worker died or timed out; the page work itself does not
            return Check(Outcome.ERROR, url, error=exc)
        signature, capped = work
        if signature is None:
            outcome = Outcome.TOO_DEEP if "too_deep" in capped else Outcome.NO_TEXT
            return Check(outcome, url, capped=capped)
        row = PageRow(
            url,
            signature.fingerprint,
            signature.text_length,
            signature.sketch,
            signature.stored_text,
        )
        try:
            verdict = await self._commits.check_and_add(row)
        except Exception as exc:
            return Check(Outcome.ERROR, url, signature.fingerprint, error=exc, capped=capped)
        return Check(Outcome.of(verdict), url, signature.fingerprint, verdict, capped=capped)

    # -- stats and logs (reactor thread)

    def record(self, check: Check) -> None:
        """Count the check and log what needs logging."""
        self.stats.inc_value(STATS_PREFIX + check.outcome.value)
        for cap in check.capped:
            self.stats.inc_value(STATS_PREFIX + "capped/" + cap)
        if check.verdict is not None and check.verdict.boilerplate_of is not None:
            self.stats.inc_value(STATS_PREFIX + "boilerplate")
            if self.config.debug:
                logger.debug(
                    "simhash_filter: %s admitted: its text matches %s, the pages around it "
                    "differ (an extraction failure, not a copy)",
                    check.url,
                    check.verdict.boilerplate_of.url,
                )
        if check.outcome is Outcome.ERROR:
            assert check.error is not None
            self.errors.error(
                f"Could not check {check.url} for near-duplicates ("
                + (
                    "the page passes: SIMHASH_FILTER_FAIL_OPEN"
                    if self.config.fail_open
                    else "the page is dropped: SIMHASH_FILTER_FAIL_OPEN is False"
                )
                + ")",
                check.error,
            )
        elif check.outcome is Outcome.DROPPED:
            if self.config.debug:
                logger.info("%s", self.drop_message(check))
            elif not self._logged_first_drop:
                logger.info(
                    "%s - no more near-duplicates will be shown at INFO level "
                    "(see SIMHASH_FILTER_DEBUG to show all of them)",
                    self.drop_message(check),
                )
            self._logged_first_drop = True
        elif self.config.debug:
            logger.debug("simhash_filter: %s %s", check.outcome.value, check.url)

    @staticmethod
    def drop_message(check: Check) -> str:
        """``Near-duplicate of <url> (distance <d>): <url>``."""
        match = check.verdict.duplicate_of if check.verdict else None
        if match is None:
            return f"Near-duplicate: {check.url}"
        return f"Near-duplicate of {match.url} (distance {match.distance}): {check.url}"
