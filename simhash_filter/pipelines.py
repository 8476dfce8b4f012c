"""``NearDuplicatePipeline``: drop items whose page text is a near-duplicate of a kept page.

The work shared with :class:`~simhash_filter.middlewares.NearDuplicateMiddleware` lives in
:class:`PageFilter`: text → fingerprint → ``FingerprintStore.check_and_add``, then stats and
logs. There is one ``PageFilter`` (and one store) per crawler, whichever components use it.

Outcomes (each one a stat under ``simhash_filter/``; they are disjoint):

- ``kept``: a new page, admitted to the index; the item passes.
- ``dropped``: within ``MAX_DISTANCE`` bits of a page already kept; :class:`NearDuplicate`
  is raised (a ``DropItem``, so Scrapy also counts ``item_dropped_reasons_count/NearDuplicate``).
- ``unchanged`` / ``changed``: a URL already in the index, re-crawled, within / beyond
  ``MAX_DISTANCE`` of its stored version (a changed page that became a near-duplicate of
  *another* page is ``dropped``); the item passes.
- ``no_text``: no text field, no extractable HTML, or fewer tokens than ``MIN_TOKENS``; the
  item passes unfingerprinted (an empty page must not collide with every other empty page).
- ``errors``: the store (or anything else) failed for this page. The error is logged with
  its traceback and the item passes (``FAIL_OPEN = True``, the default) or is dropped with
  :class:`FilterUnavailable` (``FAIL_OPEN = False``: nothing unchecked gets through; the page
  is not in the index, so a later crawl checks it again). One bad page never stops a crawl.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.asyncio import is_asyncio_available, run_in_thread

from .config import Config
from .extract import extract_text
from .store.records import Verdict, VerdictKind

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from .fingerprint import Fingerprinter

__all__ = [
    "STATS_PREFIX",
    "Check",
    "FilterUnavailable",
    "NearDuplicate",
    "NearDuplicatePipeline",
    "Outcome",
    "PageFilter",
    "StoreLike",
]

logger = logging.getLogger(__name__)

STATS_PREFIX = "simhash_filter/"
_HANDOFF_SIZE = 10_000  # responses checked by the middleware whose item has not come yet
_MAX_BATCH = 64  # pages in one check-and-add transaction at most


class NearDuplicate(DropItem):
    """The item's page is a near-duplicate of a page already kept."""

    def __init__(self, url: str, duplicate_of: str, distance: int, *, log_level: str) -> None:
        super().__init__(
            f"Near-duplicate of {duplicate_of} (distance {distance}): {url}", log_level=log_level
        )
        self.url = url
        self.duplicate_of = duplicate_of
        self.distance = distance


class FilterUnavailable(DropItem):
    """The page could not be checked and ``SIMHASH_FILTER_FAIL_OPEN`` is False."""


class StoreLike(Protocol):
    """What the filter needs of a :class:`~simhash_filter.store.FingerprintStore`."""

    def check_and_add(self, url: str, fingerprint: int, *, text_length: int = 0) -> Verdict: ...

    def add_many(self, rows: Iterable[tuple[str, int, int]]) -> list[Verdict]: ...

    def close(self) -> None: ...


StoreFactory = Callable[[], StoreLike]


class Outcome(enum.Enum):
    """What the filter did with one page; each value is also its stat name."""

    KEPT = "kept"
    DROPPED = "dropped"
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    NO_TEXT = "no_text"
    ERROR = "errors"

    @property
    def passes(self) -> bool:
        """True when the page was admitted (or already stored) under this outcome."""
        return self in {Outcome.KEPT, Outcome.UNCHANGED, Outcome.CHANGED}


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

    @property
    def hex_fingerprint(self) -> str | None:
        """The fingerprint as 16 hex digits, or None."""
        return None if self.fingerprint is None else f"{self.fingerprint:016x}"


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _canonical(url: str) -> str:
    from .store import canonical_url  # the one place URLs are canonicalized

    return str(canonical_url(url))


_SHARED: weakref.WeakKeyDictionary[Crawler, PageFilter] = weakref.WeakKeyDictionary()


class PageFilter:
    """Checks page text against the fingerprint store; shared by the pipeline and the middleware.

    :meth:`check` runs extraction and fingerprinting in a worker thread, then queues the
    check-and-add: while one transaction runs in a worker thread, the pages that arrive wait
    and go into the next one together (``add_many``, the same verdicts as one call each, and
    far less time per page). :meth:`record` updates stats and logs in the reactor thread.
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
        self._store_factory = store_factory or self._open_store
        self._store: StoreLike | None = None
        self._users = 0
        self._lock = threading.Lock()
        self._handoff: OrderedDict[str, Check] = OrderedDict()
        self._queue: list[tuple[tuple[str, int, int], asyncio.Future[Verdict]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._logged_first_drop = False

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
            max_distance=self.config.max_distance,
            blocks=self.config.blocks,
        )

    # -- lifecycle (blocking; reference-counted so the pipeline and the middleware share it)

    def open(self) -> None:
        """Open the store for one more user (the first user really opens it)."""
        with self._lock:
            if self._store is None:
                self._store = self._store_factory()
            self._users += 1

    def close(self) -> None:
        """Release one user; the last one closes the store."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0 and self._store is not None:
                store, self._store = self._store, None
                store.close()

    # -- checks

    def prepare(self, url: str, text: Any, html: Any) -> Check | tuple[int, int]:
        """Blocking: the page's (fingerprint, text length), or the Check when there is none.

        The text is ``text`` when it is a non-blank str, else the main text extracted from
        ``html`` (str or bytes)."""
        try:
            if not _has_text(text):
                text = None
                if isinstance(html, bytes | str) and html:
                    text = extract_text(html, url=url, max_bytes=self.config.max_bytes)
            # the Fingerprinter fingerprints at most its max_chars (the tokenization cap)
            fingerprint = self.fingerprinter.fingerprint(text) if text else None
        except Exception as exc:  # neither raises on bad input; belt and braces
            return Check(Outcome.ERROR, url, error=exc)
        if fingerprint is None:
            return Check(Outcome.NO_TEXT, url)
        return fingerprint, len(text or "")

    async def check(self, url: str, text: Any = None, html: Any = None) -> Check:
        """Check a page: extraction and fingerprint in a worker thread, then check-and-add
        (grouped with other pages' into one transaction while the store is busy)."""
        prepared = await run_in_thread(self.prepare, url, text, html)
        if isinstance(prepared, Check):
            return prepared
        fingerprint, text_length = prepared
        try:
            verdict = await self._check_and_add(url, fingerprint, text_length)
        except Exception as exc:
            return Check(Outcome.ERROR, url, fingerprint, error=exc)
        return Check(_OUTCOME_OF[verdict.kind], url, fingerprint, verdict)

    def _open_store_or_raise(self) -> StoreLike:
        store = self._store
        if store is None:
            raise RuntimeError("the fingerprint store is not open")
        return store

    async def _check_and_add(self, url: str, fingerprint: int, text_length: int) -> Verdict:
        if not is_asyncio_available():  # another Twisted reactor: one transaction a page
            store = self._open_store_or_raise()
            return await run_in_thread(
                store.check_and_add, url, fingerprint, text_length=text_length
            )
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._queue.append(((url, fingerprint, text_length), future))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        """Group commit: pages queued while a transaction runs go into the next one."""
        try:
            while self._queue:
                batch = self._queue[:_MAX_BATCH]
                del self._queue[:_MAX_BATCH]
                rows = [row for row, _ in batch]
                try:
                    verdicts = await run_in_thread(self._add_rows, rows)
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

    def _add_rows(self, rows: list[tuple[str, int, int]]) -> list[Verdict | BaseException]:
        store = self._open_store_or_raise()
        if len(rows) == 1:
            url, fingerprint, text_length = rows[0]
            return [store.check_and_add(url, fingerprint, text_length=text_length)]
        try:
            return list(store.add_many(rows))
        except Exception:  # find the page at fault: the others still get their verdicts
            results: list[Verdict | BaseException] = []
            for url, fingerprint, text_length in rows:
                try:
                    results.append(store.check_and_add(url, fingerprint, text_length=text_length))
                except Exception as exc:
                    results.append(exc)
            return results

    # -- stats and logs (reactor thread)

    def record(self, check: Check) -> None:
        """Count the check and log what needs logging."""
        self.stats.inc_value(STATS_PREFIX + check.outcome.value)
        if check.outcome is Outcome.ERROR:
            logger.warning(
                "Could not check %s for near-duplicates (%s)",
                check.url,
                "the page passes: SIMHASH_FILTER_FAIL_OPEN"
                if self.config.fail_open
                else "the page is dropped: SIMHASH_FILTER_FAIL_OPEN is False",
                exc_info=check.error,
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

    def raise_for(self, check: Check) -> None:
        """Raise the ``DropItem`` a dropped (or, fail-closed, unchecked) page gets."""
        if check.outcome is Outcome.DROPPED:
            match = check.verdict.duplicate_of if check.verdict else None
            raise NearDuplicate(
                check.url,
                match.url if match else "?",
                match.distance if match else -1,
                log_level="INFO" if self.config.debug else "DEBUG",
            )
        if check.outcome is Outcome.ERROR and not self.config.fail_open:
            raise FilterUnavailable(
                f"Could not check {check.url} for near-duplicates "
                f"(SIMHASH_FILTER_FAIL_OPEN is False): {check.error!r}",
                log_level="WARNING",
            )

    # -- middleware → pipeline hand-off: a response checked once is not checked again

    def remember(self, check: Check) -> None:
        """Keep a response's check (not a drop) for the item the spider will make of it."""
        key = _canonical(check.url)
        with self._lock:
            self._handoff[key] = check
            self._handoff.move_to_end(key)
            while len(self._handoff) > _HANDOFF_SIZE:
                self._handoff.popitem(last=False)

    def recall(self, url: str) -> Check | None:
        """The middleware's check of ``url`` (once), or None when there is none."""
        if not self._handoff:
            return None
        key = _canonical(url)
        with self._lock:
            return self._handoff.pop(key, None)


class NearDuplicatePipeline:
    """Item pipeline that drops near-duplicate pages (``simhash_filter.NearDuplicatePipeline``).

    The page's text comes from the item's ``SIMHASH_FILTER_TEXT_FIELD`` if it has one, else
    from its ``SIMHASH_FILTER_HTML_FIELD`` (str or bytes), extracted with trafilatura. Any item
    type itemadapter supports works (dict, ``scrapy.Item``, dataclass, attrs).
    """

    def __init__(self, page_filter: PageFilter) -> None:
        self.filter = page_filter
        self.config = page_filter.config
        self._warned_fields: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = Config.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        return cls(PageFilter.for_crawler(crawler, config))

    async def open_spider(self) -> None:
        await run_in_thread(self.filter.open)

    async def close_spider(self) -> None:
        await run_in_thread(self.filter.close)

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get(self.config.url_field)
        if not isinstance(url, str) or not url:
            self.filter.stats.inc_value(STATS_PREFIX + "no_url")
            self._warn_once(
                self.config.url_field,
                "Items without a %r field (SIMHASH_FILTER_URL_FIELD) pass unchecked",
            )
            return item
        text = adapter.get(self.config.text_field)
        check = self.filter.recall(url)  # checked already by NearDuplicateMiddleware?
        if check is None or (check.outcome is Outcome.NO_TEXT and _has_text(text)):
            check = await self.filter.check(url, text, adapter.get(self.config.html_field))
            self.filter.record(check)
        self.filter.raise_for(check)
        field = self.config.fingerprint_field
        if field and check.outcome.passes and check.hex_fingerprint is not None:
            try:
                adapter[field] = check.hex_fingerprint
            except KeyError:
                self._warn_once(
                    field, "Cannot set %r (SIMHASH_FILTER_FINGERPRINT_FIELD) on this item type"
                )
        return item

    def _warn_once(self, field: str, message: str) -> None:
        if field not in self._warned_fields:
            self._warned_fields.add(field)
            logger.warning(message, field)
