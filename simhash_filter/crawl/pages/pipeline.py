"""``NearDuplicatePipeline``: drop items whose page text is a near-duplicate of a kept page.

A thin Scrapy adapter: it reads the item's fields and turns the
:class:`~simhash_filter.crawl.pages.filter.PageFilter`'s outcome into a ``DropItem`` or a pass
(the outcomes and their stats are described in :mod:`simhash_filter.crawl.pages.outcomes`). A
near-duplicate raises :class:`NearDuplicate` (so Scrapy also counts
``item_dropped_reasons_count/NearDuplicate``); a page that could not be checked raises
:class:`FilterUnavailable` when ``SIMHASH_FILTER_FAIL_OPEN`` is False.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import MutableMapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.asyncio import run_in_thread

from simhash_filter.crawl.pages.error_log import first_line
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX, FilterResult, Outcome, measures
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.signals import send_superseded
from simhash_filter.page.work import has_text
from simhash_filter.store.records import Match

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["FilterUnavailable", "NearDuplicate", "NearDuplicatePipeline"]

logger = logging.getLogger(__name__)


def _remove_field(item: Any, adapter: ItemAdapter, field: str) -> None:
    """The HTML field out of an item the pipeline passes (``REMOVE_HTML``): its page is
    checked (or cannot be: no URL), and a feed export cannot write bytes. A dict or
    ``scrapy.Item`` loses the field; a dataclass or attrs item, which cannot, gets None."""
    if field not in adapter:
        return
    if isinstance(item, MutableMapping):
        del item[field]
    else:
        adapter[field] = None


class NearDuplicate(DropItem):
    """The item's page is a near-duplicate of a page already kept: ``Near-duplicate of
    <kept url> (similarity 0.953, distance 3 bits): <url>``."""

    def __init__(
        self,
        url: str,
        duplicate_of: str,
        distance: int,
        *,
        log_level: str,
        similarity: float | None = None,
    ) -> None:
        shown = Match(duplicate_of, 0, distance, 0, similarity)
        super().__init__(
            f"Near-duplicate of {duplicate_of} ({measures(shown)}): {url}", log_level=log_level
        )
        self.url = url
        self.duplicate_of = duplicate_of
        self.distance = distance
        self.similarity = similarity


class FilterUnavailable(DropItem):
    """The page could not be checked and ``SIMHASH_FILTER_FAIL_OPEN`` is False."""


POOL_START_WAIT = 120.0
"""Seconds the crawl waits at most for its page workers to start before its first request."""


def wait_started(ready: Future[None], timeout: float) -> None:
    """Until the page workers have started (or failed to), ``timeout`` seconds at most.

    Pages downloaded meanwhile have nowhere to go: each waits in Scrapy's scraper with its
    response, its parsed tree, its item and the scraper's ``CONCURRENT_ITEMS`` tasks, up to
    ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` bytes of responses (hundreds of small pages), and the
    crawl process keeps the memory they took once they are gone."""
    with contextlib.suppress(TimeoutError):
        ready.exception(timeout)


class NearDuplicatePipeline:
    """Item pipeline that drops near-duplicate pages (``simhash_filter.NearDuplicatePipeline``).

    The page's text comes from the item's ``SIMHASH_FILTER_TEXT_FIELD`` if it has one, else
    from its ``SIMHASH_FILTER_HTML_FIELD`` (str or bytes), extracted with trafilatura; the HTML
    field leaves a passing item unless ``SIMHASH_FILTER_REMOVE_HTML`` is False. Any item
    type itemadapter supports works (dict, ``scrapy.Item``, dataclass, attrs).
    """

    def __init__(self, page_filter: PageFilter, crawler: Crawler | None = None) -> None:
        self.filter = page_filter
        self.config = page_filter.config
        self.crawler = crawler  # sends page_superseded (None: no signal, e.g. a bare test)
        page_filter.pipeline_attached = True
        self._warned_fields: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        return cls(PageFilter.for_crawler(crawler), crawler)

    async def open_spider(self) -> None:
        await run_in_thread(self.filter.open)
        pool = self.filter.pool
        if pool is not None:  # the crawl starts once Scrapy has awaited this
            await run_in_thread(wait_started, pool.ready, POOL_START_WAIT)

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
            if self.config.remove_html:  # (every item that passes: a feed takes no bytes)
                _remove_field(item, adapter, self.config.html_field)
            return item
        text = adapter.get(self.config.text_field)
        result = self.filter.handoff.recall(url)  # checked already by NearDuplicateMiddleware?
        if result is None or (result.outcome is Outcome.NO_TEXT and has_text(text)):
            html, canonical = adapter.get(self.config.html_field), self._canonical(adapter)
            result = await self.filter.check(url, text, html, canonical=canonical)
            self.filter.record(result)
        try:
            self._raise_for(result)
        except DropItem:
            # Scrapy logs a dropped item whole ("Dropped: ..." and the item): its page is
            # checked, and its HTML must not fill the log (nothing passes it on either)
            _remove_field(item, adapter, self.config.html_field)
            raise
        if self.config.remove_html:
            _remove_field(item, adapter, self.config.html_field)
        if self.config.add_text and result.text is not None and not has_text(text):
            self._set(adapter, self.config.text_field, result.text, "SIMHASH_FILTER_ADD_TEXT")
        field = self.config.fingerprint_field
        # a page that passed unchecked (fail-open) carries the fingerprint its page work made
        emitted = result.outcome.passes or result.outcome is Outcome.ERROR
        if field and emitted and result.hex_fingerprint is not None:
            self._set(adapter, field, result.hex_fingerprint, "SIMHASH_FILTER_FINGERPRINT_FIELD")
        field = self.config.canonical_url_field
        if field and result.canonical is not None:
            self._set(adapter, field, result.canonical, "SIMHASH_FILTER_CANONICAL_URL_FIELD")
        if result.superseded is not None and self.crawler is not None:
            await send_superseded(self.crawler, result.superseded, item)  # the item as it leaves
        return item

    def _set(self, adapter: ItemAdapter, field: str, value: str, setting: str) -> None:
        """``field`` of a passing item set, or one warning when its type has no such field."""
        try:
            adapter[field] = value
        except KeyError:
            self._warn_once(field, f"Cannot set %r ({setting}) on this item type")

    def _canonical(self, adapter: ItemAdapter) -> str | None:
        """The item's declared canonical URL (``SIMHASH_FILTER_CANONICAL_FIELD``), if a str."""
        value = adapter.get(self.config.canonical_field)
        return value if isinstance(value, str) and value.strip() else None

    def _raise_for(self, result: FilterResult) -> None:
        """Raise the ``DropItem`` a dropped (or, fail-closed, unchecked) page gets."""
        if result.outcome is Outcome.DROPPED:
            match = result.verdict.duplicate_of if result.verdict else None
            raise NearDuplicate(
                result.url,
                match.url if match else "?",
                match.distance if match else -1,
                log_level="INFO" if self.config.debug else "DEBUG",
                similarity=match.similarity if match else None,
            )
        if result.outcome is Outcome.ERROR and not self.config.fail_open:
            assert result.error is not None
            raise FilterUnavailable(  # the filter logged the error (the first of a kind in full)
                f"Could not check {result.url} for near-duplicates "
                f"(SIMHASH_FILTER_FAIL_OPEN is False): {first_line(result.error)}",
                log_level="DEBUG",
            )

    def _warn_once(self, field: str, message: str) -> None:
        if field not in self._warned_fields:
            self._warned_fields.add(field)
            logger.warning(message, field)
