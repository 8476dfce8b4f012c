"""Canonical first in the download path: a variant whose declared canonical was never seen
is held while that canonical is fetched, so the copy kept (and emitted) is the canonical.

:class:`Waiting` is what both downloader middlewares share (the holding, the canonical's
request, the replays answered from memory, the releases; :mod:`.detours` holds the
variants). :class:`CanonicalFirstMiddleware` is the pipeline's: with
``NearDuplicateMiddleware`` off, it reads the response's strong hint (``<link
rel="canonical">`` in its head, the ``Link`` header) without checking the page, holds the
response, and releases its variants once the canonical's item was checked by the pipeline
(any other outcome: at once). Holding is bounded: :data:`~.detours.MAX_HELD` responses,
:data:`MAX_WAIT` seconds a canonical, and an idle spider releases them all; a held response
is an ignored request, so Scrapy's back-pressure never waits on it. A close that is not idle
hands what is still held straight to the spider (:mod:`.closing`). A crawl whose frontier
is shared (scrapy-redis) holds nothing: another process could pop the replay.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, cast

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.misc import load_object

from simhash_filter.core.canonical import PageHints
from simhash_filter.core.keep import KEEP_FIRST
from simhash_filter.crawl.pages.closing import CloseWatch
from simhash_filter.crawl.pages.declared_canonical import link_canonical, strong_hint
from simhash_filter.crawl.pages.detours import (
    DETOUR_META_KEY,
    REPLAY_META_KEY,
    CanonicalFirst,
    Detours,
    Held,
)
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX, FilterResult
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.page.head_canonicals import page_hints
from simhash_filter.store.keep_evidence import host_ruleset
from simhash_filter.urls.key import hint_key, url_domain
from simhash_filter.urls.ruleset import RuleSet, url_host
from simhash_filter.urls.views import page_form

if TYPE_CHECKING:
    from typing import Self

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from simhash_filter.crawl.config import Config
    from simhash_filter.page.work import PageWork
    from simhash_filter.store.reading import ReadableStore

__all__ = ["MAX_WAIT", "CanonicalFirstMiddleware", "Waiting", "head_canonical", "head_hints"]

logger = logging.getLogger(__name__)

MAX_WAIT = 30.0
"""Seconds a variant waits for its canonical at most (then it is replayed all the same)."""
RULES_TTL = 10.0
"""Seconds a host's URL rules, read from the store, are used before they are read again."""


def head_hints(response: TextResponse) -> PageHints:
    """The canonical hints of the response's ``<head>``: ``<link rel="canonical">`` and
    ``og:url``, resolved against its ``<base href>`` and URL, read from the tree Scrapy's
    selector parsed (which the spider's own parse reuses) as the page work reads its own
    (page/head_canonicals.py)."""
    return page_hints(response.selector.root, response.url) or PageHints()


def head_canonical(response: TextResponse) -> str | None:
    """The ``<link rel="canonical">`` of the response's ``<head>`` (None: none, or several
    that disagree)."""
    return head_hints(response).link


def shared_frontier(crawler: Crawler | None) -> bool:
    """True when the crawl's scheduler is a shared frontier (scrapy-redis): a replayed
    variant could be popped by another process, which has not its response held, so
    variants are not held there (checked at once: a canonical come later is dropped)."""
    if crawler is None:
        return False
    try:
        scheduler = load_object(crawler.settings["SCHEDULER"])
    except Exception:  # not ours to judge: a scheduler Scrapy will load (or refuse) itself
        return False
    mro = getattr(scheduler, "__mro__", (scheduler,))
    return any(getattr(c, "__module__", "").startswith("scrapy_redis") for c in mro)


class Waiting:
    """Canonical first, shared by the downloader middlewares (see the module doc)."""

    def __init__(self, page_filter: PageFilter, crawler: Crawler | None = None) -> None:
        self.filter = page_filter
        self.config: Config = page_filter.config
        self.crawler = crawler  # schedules canonicals first (None: no detours, no signal)
        self.detours = Detours()
        self.shared_frontier = shared_frontier(crawler)
        self._rulesets: dict[str, tuple[float, RuleSet]] = {}  # by host, read at (monotonic)
        self._close_watch: CloseWatch | None = None
        self._closing = False  # the crawl is closing: nothing is held any more

    async def _rule_target(self, own: str) -> str | None:
        """The URL the host's rules (the keep policy's: candidates too) map ``own`` (in the
        store's form) onto, when another: the likely canonical of a page declaring none."""
        host, now = url_host(own), time.monotonic()
        cached = self._rulesets.get(host)
        if cached is None or now - cached[0] > RULES_TTL:
            store = self.filter.store
            if store is None:
                return None
            try:
                ruleset = await run_in_thread(host_ruleset, cast("ReadableStore", store), host)
            except Exception:  # no holding then: the page is checked at once
                return None
            cached = self._rulesets[host] = (now, ruleset)
        form = hint_key(cached[1].form(own).url)
        return form if form != own else None

    def connected(self, crawler: Crawler) -> Self:
        """This middleware, connected to the crawler's signals (its ``from_crawler``'s end)."""
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.request_dropped, signal=signals.request_dropped)
        return self

    async def spider_opened(self) -> None:
        try:
            await run_in_thread(self.filter.open)
        except Exception as exc:  # logged by the filter; a signal handler cannot fail the crawl
            raise CloseSpider("simhash_filter_store_unavailable") from exc
        engine = self._engine()
        if engine is not None and not self.shared_frontier and self.config.keep != KEEP_FIRST:
            self._close_watch = CloseWatch(engine, self._release_at_close)

    async def spider_closed(self) -> None:
        if self._close_watch is not None:
            self._close_watch.stop()
        await self._check_unreleased()
        await run_in_thread(self.filter.close)

    async def process_response(self, request: Request, response: Response) -> Response:
        raise NotImplementedError  # each middleware's own

    async def _release_at_close(self) -> None:
        """The crawl is closing (not idle): the scheduler is dequeued no more, so every
        variant still held or released goes through this middleware's check and straight to
        the spider, before the scraper closes; nothing is held from now on."""
        self._closing = True
        engine = self._engine()
        self.detours.release(None)
        released = 0
        for replay in self.detours.pending():
            response = self.process_request(replay)
            if response is None or engine is None:  # a replay in flight: it is on its way
                continue
            try:
                response = await self.process_response(replay, response)
            except IgnoreRequest:  # a copy, dropped
                continue
            engine.scraper.enqueue_scrape(response, replay)
            released += 1
        if released:
            self.filter.stats.inc_value(STATS_PREFIX + "released_at_close", released)

    def spider_idle(self) -> None:
        """Release every variant still waiting (its canonical never answered): the crawl
        goes on until they are checked."""
        if self._release(None, every=True):
            raise DontCloseSpider

    def request_dropped(self, request: Request) -> None:
        """A canonical's request the scheduler refused (the dupefilter): the crawl has it
        queued or fetched already; its variants wait for its response, ``MAX_WAIT`` at most."""

    def process_request(self, request: Request) -> Response | None:
        """Answer a held variant's replay from memory (no second download)."""
        token = request.meta.get(REPLAY_META_KEY)
        held = self.detours.answer(token) if isinstance(token, str) else None
        return None if held is None else held.response.replace(request=request)

    def process_exception(self, request: Request, exception: BaseException) -> None:
        """A canonical's download failed: the variants waiting for it are checked now."""
        for key in {request.meta.get(DETOUR_META_KEY), hint_key(request.url)}:
            if isinstance(key, str) and self.detours.waits_for(key):
                self.detours.settle(key)
                self._release(key)

    def _answered(self, request: Request, response: Response) -> list[str]:
        """The canonicals waited for that this response answers (also released: overdue
        ones)."""
        for key in self.detours.overdue(MAX_WAIT):
            self._release(key)
        keys = {request.meta.get(DETOUR_META_KEY), hint_key(request.url), hint_key(response.url)}
        return [k for k in keys if isinstance(k, str) and self.detours.waits_for(k)]

    async def _hold(
        self,
        request: Request,
        response: Response,
        target: str | None,
        work: PageWork | None,
        *,
        named: str | None = None,
    ) -> bool:
        """Hold the variant and schedule its canonical ``target`` (its strong hint), when
        that is on its own host and was never seen; a page declaring none: the URL the host's
        rules map it onto, else (``VIEWS_WAIT``) its URL without a view marker, or its weak
        hint ``named`` (``og:url``) when that is its URL up to a trailing slash
        (``urls/views.py``)."""
        engine = self._engine()
        if (
            engine is None
            or self._closing
            or (self._close_watch is not None and self._close_watch.closing)
            or self.shared_frontier
            or self.config.keep == KEEP_FIRST
            or request.method != "GET"
            or (work is not None and work.signature is None)
            or DETOUR_META_KEY in request.meta
            or REPLAY_META_KEY in request.meta
        ):
            return False
        own = hint_key(response.url)
        if target is None and own is not None:  # the rules' form, else the view's (a mirror)
            target = await self._rule_target(own)
            if target is None and self.config.views_wait:
                target = hint_key(page_form(own, hint_key(named)) or own)
        if target is None or own is None or target == own or url_domain(target) != url_domain(own):
            return False
        if self.detours.settled(target):
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

    async def _check_unreleased(self) -> None:
        """Variants still waiting when the spider closes (only when the close could not be
        seen in time: :mod:`.closing`) are checked now, so one that is no copy is in the index;
        their items never reach the spider, so they are counted and logged."""
        held = self.detours.drain()
        for variant in held:
            response, header = variant.response, link_canonical(variant.response)
            if variant.work is None:
                result = await self.filter.check(response.url, html=response.text, canonical=header)
            else:
                result = await self.filter.check_signed(
                    response.url, variant.work, canonical=header
                )
            self.filter.record(result)
        if held:
            self.filter.stats.inc_value(STATS_PREFIX + "canonical_first_at_close", len(held))
            logger.warning(
                "simhash_filter: %d variant(s) waiting for their canonical when the spider "
                "closed were checked without reaching the spider",
                len(held),
            )

    def _engine(self) -> ExecutionEngine | None:
        """The running crawl's engine, or None (no crawler, or not started)."""
        try:
            return self.crawler.engine if self.crawler is not None else None
        except RuntimeError:  # Crawler.engine before the crawl starts
            return None


class CanonicalFirstMiddleware(Waiting):
    """Downloader middleware of the pipeline mode (see the module doc): installed by the
    add-on when ``NearDuplicateMiddleware`` is not."""

    def __init__(self, page_filter: PageFilter, crawler: Crawler | None = None) -> None:
        super().__init__(page_filter, crawler)
        self._coming: dict[str, str] = {}  # a canonical's response URL -> the key it answers
        page_filter.listeners.append(self._checked)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not config.enabled or config.keep == KEEP_FIRST:
            raise NotConfigured("canonical first needs SIMHASH_FILTER_KEEP other than 'first'")
        return cls(PageFilter.for_crawler(crawler), crawler).connected(crawler)

    async def process_response(self, request: Request, response: Response) -> Response:
        token = request.meta.get(REPLAY_META_KEY)
        if isinstance(token, str) and self.detours.replay(token) is not None:
            return response  # a released variant: its item goes on to the pipeline
        page = response if isinstance(response, HtmlResponse) and response.status == 200 else None
        for key in self._answered(request, response):
            if page is not None:  # released once the pipeline checked the canonical's item
                self._coming[hint_key(response.url) or key] = key
            else:
                self.detours.settle(key)
                self._release(key)
        if page is None or request.meta.get("dont_simhash_filter"):
            return response
        hints = head_hints(page)
        target = strong_hint(response.url, hints, link_canonical(response))
        if await self._hold(request, response, target, None, named=hints.og_url):
            raise CanonicalFirst(f"Waiting for the canonical of {response.url}")
        return response

    def _checked(self, result: FilterResult) -> None:
        """The pipeline checked a page: the variants waiting for it go on."""
        key = self._coming.pop(hint_key(result.url) or "", None)
        if key is not None:
            self.detours.settle(key)
            self._release(key)
