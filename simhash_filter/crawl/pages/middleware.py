"""``NearDuplicateMiddleware``: ignore near-duplicate responses before the spider parses them.

A thin Scrapy adapter around the crawler's :class:`~simhash_filter.crawl.pages.filter.PageFilter`.

As in the paper, a near-duplicate page is ignored together with its outgoing links: the
downloader middleware fingerprints each HTML response (status 200) and raises
``IgnoreRequest`` for a near-duplicate, so the spider never sees it and follows none of its
links. Same settings, same store, same stats as the pipeline.

With both components enabled, each page is checked once: the middleware hands its verdict
on to the pipeline (keyed by the canonical URL, through the crawler's shared
:class:`~simhash_filter.crawl.pages.filter.PageFilter`), which then passes the item without a second
extraction, fingerprint or insert, and without counting it again. Items the middleware
never saw (other URLs, non-HTML responses) are checked by the pipeline as usual, and so is
an item with its own text field whose HTML gave the middleware no text.

Under ``SIMHASH_FILTER_KEEP = "canonical"`` a variant whose declared canonical (``<link
rel="canonical">`` or the ``Link`` header) is on its host and was never seen waits while
the canonical is fetched and checked first (:mod:`~simhash_filter.crawl.pages.detours`).

Enable it in ``DOWNLOADER_MIDDLEWARES`` (see :data:`PRIORITY`); a request with
``meta={"dont_simhash_filter": True}`` skips the check. The verdict is recorded in
``response.meta["simhash_filter"]`` (``"kept"``, ``"unchanged"``, ``"changed"``,
``"no_text"`` or ``"errors"``) for the spider to see.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse

from simhash_filter.crawl.pages.canonical_first import Waiting
from simhash_filter.crawl.pages.declared_canonical import link_canonical, strong_hint
from simhash_filter.crawl.pages.detours import REPLAY_META_KEY, CanonicalFirst
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.signals import send_superseded
from simhash_filter.urls.key import PageKey

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


__all__ = ["META_KEY", "PRIORITY", "SKIP_META_KEY", "NearDuplicateMiddleware"]

logger = logging.getLogger(__name__)

PRIORITY = 575
"""Below HttpCompressionMiddleware (590) and RedirectMiddleware (600), so the middleware sees
decompressed final responses, and above RetryMiddleware (550)."""
META_KEY = "simhash_filter"
SKIP_META_KEY = "dont_simhash_filter"


class NearDuplicateMiddleware(Waiting):
    """Downloader middleware that drops near-duplicate HTML responses (and so their links)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        return cls(PageFilter.for_crawler(crawler), crawler).connected(crawler)

    async def process_response(self, request: Request, response: Response) -> Response:
        try:
            return await self._check(request, response)
        finally:  # the canonical's outcome is known: the variants waiting for it go on
            for key in self._answered(request, response):
                self.detours.settle(key)
                self._release(key)

    async def _check(self, request: Request, response: Response) -> Response:
        if (
            request.meta.get(SKIP_META_KEY)
            or response.status != 200
            or not isinstance(response, HtmlResponse)
        ):
            return response
        canonical, key = link_canonical(response), PageKey.of(response.url)
        token = request.meta.get(REPLAY_META_KEY)
        held = self.detours.replay(token) if isinstance(token, str) else None
        check = self.filter.check_signed
        if held is not None and held.work is not None:
            result = await check(response.url, held.work, canonical=canonical, key=key)
        else:
            try:
                work = await self.filter.work(response.url, html=response.text, key=key)
            except Exception as exc:  # a worker died or timed out
                result = FilterResult(Outcome.ERROR, response.url, error=exc, key=key)
            else:
                target = strong_hint(response.url, work.hints, canonical)
                named = work.hints.og_url if work.hints else None
                if await self._hold(request, response, target, work, named=named):
                    raise CanonicalFirst(f"Waiting for the canonical of {response.url}")
                result = await check(response.url, work, canonical=canonical, key=key)
        self.filter.record(result, log_each_drop=True)
        request.meta[META_KEY] = result.outcome.value
        if result.outcome is Outcome.DROPPED and not self._follows(result):
            raise IgnoreRequest(self.filter.drop_message(result))
        if result.outcome is Outcome.ERROR and not self.config.fail_open:
            raise IgnoreRequest(
                f"Could not check {response.url} for near-duplicates "
                "(SIMHASH_FILTER_FAIL_OPEN is False)"
            )
        if result.superseded is not None and not self.filter.pipeline_attached and self.crawler:
            await send_superseded(self.crawler, result.superseded, None)
        self.filter.handoff.remember(result)
        return response

    def _follows(self, result: FilterResult) -> bool:
        """A late canonical (dropped: a copy of it was emitted first) still reaches the spider
        when the pipeline drops its item: its links are the cluster's canonical's (a variant
        such as a print view may lack them), so they are followed as if it had been kept."""
        return result.late_canonical and self.filter.pipeline_attached
