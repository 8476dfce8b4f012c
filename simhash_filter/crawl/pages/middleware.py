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

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.asyncio import run_in_thread

from simhash_filter.core.keep import KEEP_CANONICAL
from simhash_filter.crawl.pages.detours import (
    DETOUR_META_KEY,
    REPLAY_META_KEY,
    CanonicalFirst,
    Detours,
    Held,
)
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.hints import link_canonical, strong_hint
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX, FilterResult, Outcome
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.signals import send_superseded
from simhash_filter.store.hints import hint_key
from simhash_filter.store.urls import url_domain

if TYPE_CHECKING:
    from typing import Self

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from simhash_filter.page.work import PageWork

__all__ = ["META_KEY", "PRIORITY", "SKIP_META_KEY", "NearDuplicateMiddleware"]

logger = logging.getLogger(__name__)

PRIORITY = 575
"""Below HttpCompressionMiddleware (590) and RedirectMiddleware (600), so the middleware sees
decompressed final responses, and above RetryMiddleware (550)."""
META_KEY = "simhash_filter"
SKIP_META_KEY = "dont_simhash_filter"


class NearDuplicateMiddleware:
    """Downloader middleware that drops near-duplicate HTML responses (and so their links)."""

    def __init__(self, page_filter: PageFilter, crawler: Crawler | None = None) -> None:
        self.filter = page_filter
        self.config = page_filter.config
        self.crawler = crawler  # schedules canonicals first (None: no detours, no signal)
        self.detours = Detours()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        middleware = cls(PageFilter.for_crawler(crawler), crawler)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        return middleware

    async def spider_opened(self) -> None:
        try:
            await run_in_thread(self.filter.open)
        except Exception as exc:  # logged by the filter; a signal handler cannot fail the crawl
            raise CloseSpider("simhash_filter_store_unavailable") from exc

    async def spider_closed(self) -> None:
        await self._check_unreleased()
        await run_in_thread(self.filter.close)

    async def _check_unreleased(self) -> None:
        """Variants still waiting when the spider closes (a close that was not idle:
        ``CLOSESPIDER_*``, a shutdown) are checked now, so one that is no copy is in the index
        rather than lost; their items never reach the spider, so they are counted and logged."""
        held = self.detours.drain()
        for variant in held:
            response = variant.response
            check = await self.filter.decide(
                response.url, variant.work, canonical=link_canonical(response)
            )
            self.filter.record(check)
        if held:
            self.filter.stats.inc_value(STATS_PREFIX + "canonical_first_at_close", len(held))
            logger.warning(
                "simhash_filter: %d variant(s) waiting for their canonical when the spider "
                "closed were checked without reaching the spider",
                len(held),
            )

    def spider_idle(self) -> None:
        """Release every variant still waiting (its canonical never answered): the crawl
        goes on until they are checked."""
        if self._release(None, every=True):
            raise DontCloseSpider

    def request_dropped(self, request: Request) -> None:
        """A canonical's request the scheduler refused (the dupefilter: fetched already)."""
        self._release(request.meta.get(DETOUR_META_KEY))

    def process_request(self, request: Request) -> Response | None:
        """Answer a held variant's replay from memory (no second download)."""
        token = request.meta.get(REPLAY_META_KEY)
        held = self.detours.peek(token) if isinstance(token, str) else None
        return None if held is None else held.response.replace(request=request)

    def process_exception(self, request: Request, exception: BaseException) -> None:
        """A canonical's download failed: the variants waiting for it are checked now."""
        self._release(request.meta.get(DETOUR_META_KEY))

    async def process_response(self, request: Request, response: Response) -> Response:
        try:
            return await self._check(request, response)
        finally:  # the canonical's outcome is known: the variants waiting for it go on
            for key in {request.meta.get(DETOUR_META_KEY), *_keys(request.url, response.url)}:
                if key is not None and self.detours.waits_for(key):
                    self._release(key)

    async def _check(self, request: Request, response: Response) -> Response:
        if (
            request.meta.get(SKIP_META_KEY)
            or response.status != 200
            or not isinstance(response, HtmlResponse)
        ):
            return response
        canonical = link_canonical(response)
        token = request.meta.get(REPLAY_META_KEY)
        held = self.detours.replay(token) if isinstance(token, str) else None
        if held is not None:
            check = await self.filter.decide(response.url, held.work, canonical=canonical)
        else:
            try:
                work = await self.filter.work(response.url, html=response.text)
            except Exception as exc:  # a worker died or timed out
                check = FilterResult(Outcome.ERROR, response.url, error=exc)
            else:
                if await self._wait_for_canonical(request, response, work, canonical):
                    raise CanonicalFirst(f"Waiting for the canonical of {response.url}")
                check = await self.filter.decide(response.url, work, canonical=canonical)
        self.filter.record(check, log_each_drop=True)
        request.meta[META_KEY] = check.outcome.value
        if check.outcome is Outcome.DROPPED:
            raise IgnoreRequest(self.filter.drop_message(check))
        if check.outcome is Outcome.ERROR and not self.config.fail_open:
            raise IgnoreRequest(
                f"Could not check {response.url} for near-duplicates "
                "(SIMHASH_FILTER_FAIL_OPEN is False)"
            )
        if check.superseded is not None and not self.filter.pipeline_attached and self.crawler:
            await send_superseded(self.crawler, check.superseded, None)
        self.filter.handoff.remember(check)
        return response

    async def _wait_for_canonical(
        self, request: Request, response: Response, work: PageWork, canonical: str | None
    ) -> bool:
        """Hold the variant and schedule its canonical, when the page declares (strongly) a
        canonical on its own host that was never seen
        (:mod:`~simhash_filter.crawl.pages.detours`)."""
        engine = self._engine()
        if (
            engine is None
            or self.config.keep != KEEP_CANONICAL
            or request.method != "GET"
            or work.signature is None
            or DETOUR_META_KEY in request.meta
            or REPLAY_META_KEY in request.meta
        ):
            return False
        target = strong_hint(response.url, work.hints, canonical)
        own = _key(response.url)
        if target is None or own is None or target == own or url_domain(target) != url_domain(own):
            return False
        if not self.detours.waits_for(target) and await self.filter.was_seen(target):
            return False
        first = self.detours.hold(target, Held(request, response, work))
        if first is None:
            return False
        if first:
            engine.crawl(
                Request(
                    target,
                    callback=request.callback,
                    errback=request.errback,
                    cb_kwargs=dict(request.cb_kwargs),
                    priority=request.priority + 1,
                    meta={DETOUR_META_KEY: target},
                )
            )
        self.filter.stats.inc_value(STATS_PREFIX + "canonical_first")
        return True

    def _release(self, key: object, *, every: bool = False) -> int:
        """Schedule the replays of the variants waiting for the canonical ``key`` (a str;
        anything else releases nothing), or, with ``every``, of all of them."""
        engine = self._engine()
        if engine is None or not (every or isinstance(key, str)):
            return 0
        replays = self.detours.release(None if every else str(key))
        for replay in replays:
            engine.crawl(replay)
        return len(replays)

    def _engine(self) -> ExecutionEngine | None:
        """The running crawl's engine, or None (no crawler, or not started)."""
        try:
            return self.crawler.engine if self.crawler is not None else None
        except RuntimeError:  # Crawler.engine before the crawl starts
            return None


def _key(url: str) -> str | None:
    """``url`` in the store's canonical form (None: not a URL)."""
    return hint_key(url)


def _keys(*urls: str) -> set[str | None]:
    return {_key(url) for url in urls}
