"""``PageFilter``: the near-duplicate check shared by the pipeline and the middleware.

Page text → signature (:mod:`~simhash_filter.page.work`, in the page pool or a thread) →
``FingerprintStore.check_and_add`` (grouped into shared transactions by
:class:`~simhash_filter.crawl.pages.group_commit.GroupCommit`), then stats and logs (the
outcomes: :mod:`simhash_filter.crawl.pages.outcomes`). There is one ``PageFilter`` (and one
store) per crawler, kept on the crawler itself (:meth:`PageFilter.for_crawler`), whichever
components use it; the pipeline and the middleware are thin Scrapy adapters around it. A
response checked by the middleware is handed on to the pipeline
(:class:`~simhash_filter.crawl.pages.handoff.Handoff`), so its item is not checked twice.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy.utils.asyncio import is_asyncio_available, run_in_thread

from simhash_filter.core.keep import KEEP_FIRST, KEEP_SUPERSEDE, could_prefer_new
from simhash_filter.core.signature import marks_listing
from simhash_filter.core.template import HostTemplate
from simhash_filter.crawl.config import Config, unknown_settings
from simhash_filter.crawl.pages.declared_canonical import declared_url, named_canonical
from simhash_filter.crawl.pages.error_log import RepeatedErrors
from simhash_filter.crawl.pages.group_commit import (
    LINGER,
    MAX_BATCH,
    GroupCommit,
    StoreFactory,
)
from simhash_filter.crawl.pages.handoff import Handoff
from simhash_filter.crawl.pages.journal import CatchUpCount, UncheckedJournal
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX, FilterResult, Outcome, measures
from simhash_filter.crawl.pages.signed_again import YoungPages, after_copy
from simhash_filter.crawl.pages.templates import HostTemplates
from simhash_filter.crawl.per_crawler import crawler_config, crawler_shared
from simhash_filter.crawl.start_failure import report_start_failure
from simhash_filter.page.pool import PageJob, PagePool, PageResult, PoolNotStarted
from simhash_filter.page.work import PageWork, has_text, work_page
from simhash_filter.store.page_store import PageStore
from simhash_filter.store.records import (
    Match,
    PageRow,
    StoreError,
    Supersession,
    Verdict,
    VerdictKind,
)
from simhash_filter.urls.key import PageKey

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from simhash_filter.core.fingerprint import Fingerprinter

__all__ = ["WORKER_STATS", "PageFilter"]

logger = logging.getLogger(__name__)

WORKER_STATS = STATS_PREFIX + "workers/"
"""Prefix of the page pool's stats: ``pages`` signed in workers, their ``cpu_ms`` (CPU time
in the workers), ``busy_ms`` (from handing a page to a worker to its answer), ``wait_ms``
(queued for a free worker), ``restarts`` (workers replaced after a death or timeout), and
``start_cpu_ms`` (CPU time the workers took to start: set when the pool has started, so
that stats written when the spider closes hold it, and again after a restart)."""
UNCHECKED_STATS = STATS_PREFIX + "unchecked/"
"""Prefix of the stats of pages that passed unchecked (FAIL_OPEN): ``journaled`` (kept for a
later check), ``caught_up`` (checked once the store was back), ``emitted_duplicates`` (copies
then: their items had passed; logged as drops), ``caught_up_no_text`` (recorded by the
exact-content key, as a ``no_text`` page is) and ``lost`` (journal full, or store not back)."""
CATCH_UP_BACKOFF = 10.0
"""Seconds between two catch-ups that met the store still failing."""

_T = TypeVar("_T")


async def _result(future: Future[_T]) -> _T:
    """Await a ``concurrent.futures.Future`` without blocking the reactor."""
    if is_asyncio_available():
        return await asyncio.wrap_future(future)
    return await run_in_thread(future.result)  # another Twisted reactor


_NOT_A_COPY = {
    "boilerplate": "the pages around it differ (an extraction failure)",
    "listing": "one of the two pages lists several entries and the other does not",
}
"""Why a page whose text matches a kept page's is admitted, by its stat's name."""


class PageFilter:
    """Checks pages against the fingerprint store; shared by the pipeline and the middleware.

    :meth:`check` runs the page work in the page pool (or a thread when there is none),
    then the check-and-add (group commit); :meth:`record` updates stats and logs in the
    reactor thread.
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
        self._store: PageStore | None = None
        self._users = 0
        self._lock = threading.Lock()
        self._in_work = 0  # pages in the page work: their check-and-add comes next
        self._commits = GroupCommit(
            self._open_store_or_raise, linger=LINGER, more_coming=lambda: self._in_work > 0
        )
        self._pool: PagePool | None = None
        self._restarts_counted = 0
        self._logged_first_drop = False
        self._logged_first_supersede = False
        self.pipeline_attached = False
        """True when the pipeline uses this filter: it sends ``page_superseded``, with the item."""
        self.errors = RepeatedErrors(logger, schedule=_call_later)
        """The pages that could not be checked (``simhash_filter/errors``)."""
        self.keep_errors = RepeatedErrors(
            logger, schedule=_call_later, counted="keep-policy errors (the pages stay copies)"
        )
        """The keep policy's errors (``simhash_filter/errors/keep_policy``): the page was
        checked, only the swap failed."""
        self.journal = UncheckedJournal()
        self._catching_up = False
        self._next_catch_up = 0.0
        self._caught_up = CatchUpCount()
        self._tasks: set[asyncio.Future[None]] = set()
        self.listeners: list[Callable[[FilterResult], None]] = []
        """Called with every recorded result (the URL rules learn from the verdicts)."""
        self.templates = HostTemplates(config.template_min_pages)
        """The hosts' templates, learned from the pages admitted (crawl/pages/templates.py)."""
        self.young = YoungPages()  # pages kept while their host was young (signed_again.py)

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> PageFilter:
        """The crawler's one filter, shared by every component (made by the first that asks:
        :mod:`~simhash_filter.crawl.per_crawler`)."""
        return crawler_shared(crawler, PageFilter, lambda: cls._made_for(crawler))

    @classmethod
    def _made_for(cls, crawler: Crawler) -> PageFilter:
        assert crawler.stats is not None
        config = crawler_config(crawler)
        for unknown in unknown_settings(crawler.settings):  # once a crawler
            logger.warning(
                "simhash_filter: unknown setting %s is ignored%s",
                unknown.name,
                f" (did you mean {unknown.nearest}?)" if unknown.nearest else "",
            )
        return cls(config, crawler.stats)

    def _open_store(self) -> PageStore:
        return self.config.open_store(self.fingerprinter.spec)

    def _open_store_or_raise(self) -> PageStore:
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
                self.templates.attach(self._store)
            self._users += 1

    def close(self) -> None:
        """Release one user; the last one stops the page pool and closes the store."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0 and self._store is not None:
                self._catch_up_at_close()
            if self._users == 0:
                self.errors.flush()
                self.keep_errors.flush()
            if self._users == 0 and self._store is not None:
                pool, self._pool = self._pool, None
                store, self._store = self._store, None
                try:
                    self.templates.close()
                    if pool is not None:
                        pool.close()
                        self._count_restarts(pool)  # a replacement after the last page too
                finally:
                    store.close()

    def _start_pool(self) -> PagePool | None:
        """The page pool (``WORKERS`` > 0), starting in a thread (the pipeline waits for
        it before the crawl begins), or None: the thread path, which the crawl also takes when
        the workers cannot start (logged; the pages queued meanwhile go there too)."""
        size = self.config.effective_workers
        if size == 0:
            return None
        pool = PagePool(
            size,
            self.fingerprinter,
            max_bytes=self.config.max_bytes,
            page_timeout=self.config.page_timeout,
            niceness=self.config.worker_niceness,
        )
        pool.ready.add_done_callback(lambda ready: self._pool_started(pool, ready))
        pool.start(wait=False)
        # a filter dropped without close() (a test, an aborted start) still ends its workers
        weakref.finalize(self, pool.close)
        return pool

    def _pool_started(self, pool: PagePool, ready: Future[None]) -> None:
        """In the pool's starting thread: log the workers, or fall back to threads."""
        error = ready.exception()
        if error is None:
            self._record_start_cpu(pool)
            logger.info(
                "simhash_filter: %d page workers (SIMHASH_FILTER_WORKERS), pids %s",
                pool.size,
                " ".join(map(str, pool.pids)),
            )
            return
        if self._pool is pool:
            self._pool = None
        logger.error(
            "Could not start %d near-duplicate page workers (SIMHASH_FILTER_WORKERS): "
            "the page work runs in threads",
            pool.size,
            exc_info=error,
        )

    @property
    def store(self) -> PageStore | None:
        """The open store, or None (not open yet, or closed)."""
        return self._store

    @property
    def pool(self) -> PagePool | None:
        """The running page pool, or None (the thread path)."""
        return self._pool

    # -- checks

    def sign(
        self, url: str, text: object, html: object, template: HostTemplate | None = None
    ) -> PageWork:
        """Blocking: the page work (see :func:`~simhash_filter.page.work.work_page`)."""
        return work_page(
            self.fingerprinter,
            url,
            text,
            html,
            max_bytes=self.config.max_bytes,
            keep_text=self.config.store_text,
            template=template,
            give_text=self.config.add_text,
        )

    async def _sign_in_pool(
        self, pool: PagePool, url: str, text: object, html: object, template: HostTemplate | None
    ) -> PageWork:
        source = html if isinstance(html, bytes | str) and html else None
        if not has_text(text) and source is None:
            return PageWork(None)
        job = PageJob(
            url,
            str(text) if has_text(text) else None,
            source,
            keep_text=self.config.store_text,
            template=template,
            give_text=self.config.add_text,
        )
        try:
            result: PageResult = await _result(pool.submit(job))
        finally:
            self._count_restarts(pool)
        self.stats.inc_value(WORKER_STATS + "pages")
        self.stats.inc_value(WORKER_STATS + "cpu_ms", round(1000 * result.cpu_seconds))
        self.stats.inc_value(WORKER_STATS + "busy_ms", round(1000 * result.busy_seconds))
        self.stats.inc_value(WORKER_STATS + "wait_ms", round(1000 * result.wait_seconds))
        return PageWork(result.signature, result.capped, result.hints, result.main_text)

    def _count_restarts(self, pool: PagePool) -> None:
        new = pool.restarts - self._restarts_counted
        if new > 0:
            self.stats.inc_value(WORKER_STATS + "restarts", new)
            self._restarts_counted += new
            self._record_start_cpu(pool)  # the replacements' start

    def _record_start_cpu(self, pool: PagePool) -> None:
        self.stats.set_value(WORKER_STATS + "start_cpu_ms", round(1000 * pool.start_cpu_seconds))

    async def work(
        self, url: str, text: object = None, html: object = None, *, key: PageKey | None = None
    ) -> PageWork:
        """The page work of a page (its signature, caps and HTML hints) in the page pool or
        a worker thread; raises when a worker died or timed out (or ``url`` is not a URL).
        ``key``: the page's URL keys, when the caller made them."""
        pool = self._pool
        self._in_work += 1
        try:
            host = (key or PageKey.of(url)).domain
            template = await self.templates.for_page(host, extracted=not has_text(text) and html)
            if pool is not None:
                try:
                    return await self._sign_in_pool(pool, url, text, html, template)
                except PoolNotStarted:  # never handed to a worker: the thread path signs it
                    pass
            return await run_in_thread(self.sign, url, text, html, template)
        finally:
            self._in_work -= 1
            if not self._in_work:
                self._commits.wake()

    async def check(
        self, url: str, text: object = None, html: object = None, *, canonical: object = None
    ) -> FilterResult:
        """The page work (pool or thread), then :meth:`check_signed`. ``canonical``: a canonical
        URL the page declares outside its HTML (the ``Link`` header, an item field)."""
        try:
            key = PageKey.of(url)
            work = await self.work(url, text, html, key=key)
        except Exception as exc:  # not a URL; a worker died or timed out
            return FilterResult(Outcome.ERROR, url, error=exc)
        return await self.check_signed(url, work, canonical=canonical, key=key)

    async def check_signed(
        self, url: str, work: PageWork, *, canonical: object = None, key: PageKey | None = None
    ) -> FilterResult:
        """Check-and-add of a page whose page work is done (grouped with other pages' into one
        transaction while the store is busy), then the keep policy. ``key``: as for
        :meth:`work`; the page's URL keys, made once and carried in its records."""
        signature, capped, hints, main_text = work
        key = (key or PageKey.of(url)).declaring(declared_url(url, hints, canonical))
        if signature is None:
            outcome = Outcome.TOO_DEEP if "too_deep" in capped else Outcome.NO_TEXT
            named = await named_canonical(self.store, url, key)
            return FilterResult(outcome, url, capped=capped, key=key, canonical=named)
        judged = await self.templates.judged(self.store, signature, self.stats)
        signature = judged.signature
        row = PageRow(
            url,
            signature.fingerprint,
            signature.text_length,
            signature.sketch,
            signature.stored_text,
            key.declared,
            key,
        )
        try:
            verdict = await self._commits.check_and_add(row)
        except Exception as exc:
            if self.config.fail_open and isinstance(exc, StoreError):  # it passes unchecked
                self._journal(row)
            return FilterResult(
                Outcome.ERROR, url, signature.fingerprint, error=exc, capped=capped, key=key
            )
        try:
            superseded, late = await self._keep(row, verdict)
        except Exception as exc:  # the verdict stands: the page stays a logged copy
            self.stats.inc_value(STATS_PREFIX + "errors/keep_policy")
            self.keep_errors.error(
                f"Could not apply the keep policy to {url} (SIMHASH_FILTER_KEEP)", exc
            )
            superseded, late = None, False
        if superseded is not None:
            verdict = Verdict(VerdictKind.NEW, superseded.new_url, signature.fingerprint)
        else:
            await after_copy(self.store, judged, verdict, self.stats)
        self._catch_up_soon()
        self.templates.admitted(key.domain, signature, verdict, self.stats)
        self.young.remember(key.domain, signature, verdict, main_text)
        await self.young.sign_again(key.domain, self.templates, self.store, self.work, self.stats)
        outcome = Outcome.of(verdict)
        if signature.exact and outcome.passes:  # recorded for its exact copies, passes as ever
            outcome = Outcome.NO_TEXT
        names = None if outcome is Outcome.DROPPED else await named_canonical(self.store, url, key)
        return FilterResult(
            outcome, url, signature.fingerprint, verdict, capped=capped, key=key,
            superseded=superseded, exact=signature.exact,
            listing=marks_listing(signature.sketch), text=main_text,
            late_canonical=late, canonical=names,
        )  # fmt: skip

    async def was_seen(self, url: str) -> bool:
        """True when ``url`` is a kept page or a logged copy (an error: True, so nothing is
        held for it)."""
        try:
            return await run_in_thread(self._open_store_or_raise().was_seen, url)
        except Exception:
            logger.debug("simhash_filter: could not look %s up", url, exc_info=True)
            return True

    async def _keep(self, row: PageRow, verdict: Verdict) -> tuple[Supersession | None, bool]:
        """The keep policy on a copy that could be kept instead: ``"supersede"`` swaps them (a
        Supersession); ``"canonical"`` records the copy as the cluster's canonical (True)."""
        kept = verdict.duplicate_of
        if (
            kept is None
            or verdict.kind is not VerdictKind.DUPLICATE
            or self.config.keep == KEEP_FIRST
            or not could_prefer_new(verdict.url, row.declared, kept.url)
        ):
            return None, False
        store = self._open_store_or_raise()
        if self.config.keep == KEEP_SUPERSEDE:
            return await run_in_thread(store.supersede, row, kept), False
        return None, await run_in_thread(store.mark_canonical, row, kept)

    # -- pages that passed unchecked (journal.py)

    def _journal(self, row: PageRow) -> None:
        if self.journal.add(row):
            self.stats.inc_value(UNCHECKED_STATS + "journaled")
        else:
            self.stats.inc_value(UNCHECKED_STATS + "lost")

    def _catch_up_soon(self) -> None:
        """Check the journal's pages in the background, now that a check succeeded (one
        catch-up at a time; not again for a while after one met the store failing)."""
        if self._catching_up or not len(self.journal) or not is_asyncio_available():
            return
        if time.monotonic() < self._next_catch_up:
            return
        self._catching_up = True
        task = asyncio.ensure_future(self._catch_up())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _catch_up(self) -> None:
        try:
            while rows := self.journal.take(MAX_BATCH):
                try:
                    results = await run_in_thread(self._commits.add_rows, rows)
                except asyncio.CancelledError:  # the loop ends: checked again at the close
                    self.journal.put_back(rows)
                    raise
                if not self._record_caught_up(rows, results):
                    self._next_catch_up = time.monotonic() + CATCH_UP_BACKOFF
                    break
        except Exception:  # the store closed under it: the close counts what is left
            logger.debug("catch-up of unchecked pages stopped", exc_info=True)
        finally:
            self._catching_up = False

    def _record_caught_up(self, rows: list[PageRow], results: list[Any]) -> bool:
        """Count the journal's pages just checked; put back those that met the store
        failing again (False then)."""
        again = []
        for row, result in zip(rows, results, strict=True):
            if isinstance(result, Verdict):
                self._caught_up.add(result)
                self.stats.inc_value(UNCHECKED_STATS + "caught_up")
                if result.kind is VerdictKind.DUPLICATE:
                    self.stats.inc_value(UNCHECKED_STATS + "emitted_duplicates")
                elif not row.text_length:  # signed by its bytes: a no_text page, not kept
                    self.stats.inc_value(UNCHECKED_STATS + "caught_up_no_text")
            elif isinstance(result, StoreError):  # the store still fails: later
                again.append(row)
            else:  # this page cannot be checked (not the store's state): counted, let go
                self.stats.inc_value(UNCHECKED_STATS + "lost")
        self.journal.put_back(again)
        if not len(self.journal) and self._caught_up.pages:
            logger.info("simhash_filter: %s", self._caught_up.summary())
            self._caught_up = CatchUpCount()
        return not again

    def _catch_up_at_close(self) -> None:
        """Blocking, before the store closes: check what the journal holds; what the store
        still cannot take is counted lost, in one warning."""
        while rows := self.journal.take(MAX_BATCH):
            if not self._record_caught_up(rows, self._commits.add_rows(rows)):
                break
        left = self.journal.take(len(self.journal))
        if left:
            self.stats.inc_value(UNCHECKED_STATS + "lost", len(left))
            logger.warning(
                "simhash_filter: %d pages passed unchecked and the store did not take them "
                "before the crawl ended: they are not in the index (a later crawl checks them)",
                len(left),
            )

    # -- stats and logs (reactor thread)

    def record(self, result: FilterResult, *, log_each_drop: bool = False) -> None:
        """Count the check and log what needs logging: the first drop at INFO with a hint,
        every drop at INFO under ``DEBUG``; ``log_each_drop`` (the middleware, whose
        ``IgnoreRequest`` Scrapy does not log, unlike the pipeline's ``DropItem``) the
        others at DEBUG. The listeners are told too."""
        for listener in self.listeners:
            listener(result)
        self.stats.inc_value(STATS_PREFIX + result.outcome.value)
        if result.exact:
            self.stats.inc_value(STATS_PREFIX + "exact_content")
        for cap in result.capped:
            self.stats.inc_value(STATS_PREFIX + "capped/" + cap)
        if result.superseded is not None:
            self._record_supersede(result.superseded)
        if result.late_canonical:
            self.stats.inc_value(STATS_PREFIX + "late_canonical")
        if result.verdict is not None:
            self._record_not_a_copy(result.url, "boilerplate", result.verdict.boilerplate_of)
            self._record_not_a_copy(result.url, "listing", result.verdict.listing_of)
        if result.outcome is Outcome.ERROR:
            assert result.error is not None
            self.errors.error(
                f"Could not check {result.url} for near-duplicates ("
                + (
                    "the page passes: SIMHASH_FILTER_FAIL_OPEN; it is checked when the store "
                    "is back"
                    if self.config.fail_open
                    else "the page is dropped: SIMHASH_FILTER_FAIL_OPEN is False"
                )
                + ")",
                result.error,  # a lock timeout or an outage: its first line, no traceback
            )
        elif result.outcome is Outcome.DROPPED:
            if self.config.debug:
                logger.info("%s", self.drop_message(result))
            elif not self._logged_first_drop:
                logger.info(
                    "%s - no more near-duplicates will be shown at INFO level "
                    "(see SIMHASH_FILTER_DEBUG to show all of them)",
                    self.drop_message(result),
                )
            elif log_each_drop:
                logger.debug("%s", self.drop_message(result))
            self._logged_first_drop = True
        elif self.config.debug:
            logger.debug("simhash_filter: %s %s", result.outcome.value, result.url)

    def _record_not_a_copy(self, url: str, kind: str, match: Match | None) -> None:
        """A page admitted although its text matches ``match``: counted under ``kind``, and
        named at DEBUG (``SIMHASH_FILTER_DEBUG``)."""
        if match is None:
            return
        self.stats.inc_value(STATS_PREFIX + kind)
        if self.config.debug:
            logger.debug(
                "simhash_filter: %s admitted: its text matches %s, but %s (not a copy)",
                url,
                match.url,
                _NOT_A_COPY[kind],
            )

    def _record_supersede(self, superseded: Supersession) -> None:
        self.stats.inc_value(STATS_PREFIX + "superseded")
        message = "Kept %s in place of %s, its copy kept before (SIMHASH_FILTER_KEEP)"
        if self.config.debug or not self._logged_first_supersede:
            logger.info(
                message + ("" if self.config.debug else " - no more will be shown at INFO level"),
                superseded.new_url,
                superseded.old_url,
            )
            self._logged_first_supersede = True
        else:
            logger.debug(message, superseded.new_url, superseded.old_url)

    @staticmethod
    def drop_message(result: FilterResult) -> str:
        """``Near-duplicate of <url> (similarity <s>, distance <d> bits): <url>``."""
        match = result.verdict.duplicate_of if result.verdict else None
        if match is None:
            return f"Near-duplicate: {result.url}"
        return f"Near-duplicate of {match.url} ({measures(match)}): {result.url}"


def _call_later(delay: float, callback: Callable[[], None]) -> Any:
    """``callback`` after ``delay`` seconds on the running event loop (the reactor's),
    or None when none runs (the count line then waits for the next error or the close)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, callback)
