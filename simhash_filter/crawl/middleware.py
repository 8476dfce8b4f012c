"""``NearDuplicateMiddleware``: ignore near-duplicate responses before the spider parses them.

A thin Scrapy adapter around the crawler's :class:`~simhash_filter.crawl.filter.PageFilter`.

As in the paper, a near-duplicate page is ignored together with its outgoing links: the
downloader middleware fingerprints each HTML response (status 200) and raises
``IgnoreRequest`` for a near-duplicate, so the spider never sees it and follows none of its
links. Same settings, same store, same stats as the pipeline.

With both components enabled, each page is checked once: the middleware hands its verdict
on to the pipeline (keyed by the canonical URL, through the crawler's shared
:class:`~simhash_filter.crawl.filter.PageFilter`), which then passes the item without a second
extraction, fingerprint or insert, and without counting it again. Items the middleware
never saw (other URLs, non-HTML responses) are checked by the pipeline as usual, and so is
an item with its own text field whose HTML gave the middleware no text.

Enable it in ``DOWNLOADER_MIDDLEWARES`` (see :data:`PRIORITY`); a request with
``meta={"dont_simhash_filter": True}`` skips the check. The verdict is recorded in
``response.meta["simhash_filter"]`` (``"kept"``, ``"unchanged"``, ``"changed"``,
``"no_text"`` or ``"errors"``) for the spider to see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import CloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.asyncio import run_in_thread

from .filter import PageFilter
from .outcomes import Outcome
from .start_failure import crawl_config

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

__all__ = ["META_KEY", "PRIORITY", "SKIP_META_KEY", "NearDuplicateMiddleware"]

PRIORITY = 575
"""Below HttpCompressionMiddleware (590) and RedirectMiddleware (600), so the middleware sees
decompressed final responses, and above RetryMiddleware (550)."""
META_KEY = "simhash_filter"
SKIP_META_KEY = "dont_simhash_filter"


class NearDuplicateMiddleware:
    """Downloader middleware that drops near-duplicate HTML responses (and so their links)."""

    def __init__(self, page_filter: PageFilter) -> None:
        self.filter = page_filter
        self.config = page_filter.config

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawl_config(crawler.settings)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        middleware = cls(PageFilter.for_crawler(crawler, config))
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    async def spider_opened(self) -> None:
        try:
            await run_in_thread(self.filter.open)
        except Exception as exc:  # logged by the filter; a signal handler cannot fail the crawl
            raise CloseSpider("simhash_filter_store_unavailable") from exc

    async def spider_closed(self) -> None:
        await run_in_thread(self.filter.close)

    async def process_response(self, request: Request, response: Response) -> Response:
        if (
            request.meta.get(SKIP_META_KEY)
            or response.status != 200
            or not isinstance(response, HtmlResponse)
        ):
            return response
        check = await self.filter.check(response.url, html=response.text)
        self.filter.record(check, log_each_drop=True)
        request.meta[META_KEY] = check.outcome.value
        if check.outcome is Outcome.DROPPED:
            raise IgnoreRequest(self.filter.drop_message(check))
        if check.outcome is Outcome.ERROR and not self.config.fail_open:
            raise IgnoreRequest(
                f"Could not check {response.url} for near-duplicates "
                "(SIMHASH_FILTER_FAIL_OPEN is False)"
            )
        self.filter.handoff.remember(check)
        return response
