"""The pipeline's canonical first (issue 42): ``CanonicalFirstMiddleware`` holds a variant
whose declared canonical was never seen, fetches the canonical, and replays the variant from
memory once the pipeline has checked the canonical's item; nothing held on a shared frontier;
the add-on installs it in pipeline mode."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler
from support.helpers import run

from crawler.articles import HARBOUR_BRIDGE
from crawler.testsite import news_template
from simhash_filter import Addon
from simhash_filter.crawl.pages.canonical_first import CanonicalFirstMiddleware, head_canonical
from simhash_filter.crawl.pages.detours import CanonicalFirst
from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware
from simhash_filter.crawl.pages.pipeline import NearDuplicate, NearDuplicatePipeline

NEWS = news_template(HARBOUR_BRIDGE, date="12 March 2024")
CANONICAL = "https://news.example/bridge"


def page(url: str, canonical: str | None, note: str = "", **meta: Any) -> HtmlResponse:
    link = f'<link rel="Canonical alternate" href="{canonical}">' if canonical else ""
    body = NEWS.replace("<head>", f"<head>{link}", 1).replace("</body>", f"{note}</body>")
    return HtmlResponse(url, body=body.encode(), request=Request(url, meta=meta), encoding="utf-8")


def open_pair(crawler: Any) -> tuple[CanonicalFirstMiddleware, NearDuplicatePipeline]:
    middleware = build_from_crawler(CanonicalFirstMiddleware, crawler)
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    run(middleware.spider_opened())
    run(pipeline.open_spider())
    return middleware, pipeline


def crawler_with(sqlite_url: str, scheduled: list[Request], **settings: Any) -> Any:
    crawler = get_crawler(
        settings_dict={
            "SIMHASH_FILTER_DATABASE_URL": sqlite_url,
            "SIMHASH_FILTER_WORKERS": 0,
            **settings,
        }
    )
    crawler.engine = type("Engine", (), {"crawl": staticmethod(scheduled.append)})()
    return crawler


def replay_dropped(
    middleware: CanonicalFirstMiddleware,
    pipeline: NearDuplicatePipeline,
    scheduled: list[Request],
    canonical: HtmlResponse,
) -> str:
    """The canonical's item passes the pipeline, which releases the variant waiting for it:
    its replay, answered from memory, goes on and its item is dropped as the canonical's copy.
    The replay's URL."""
    item = {"url": canonical.url, "html": canonical.text}
    assert run(pipeline.process_item(item)) is item
    replay = scheduled[-1]
    answered = middleware.process_request(replay)
    assert answered is not None
    assert run(middleware.process_response(replay, answered)) is answered
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item({"url": answered.url, "html": answered.text}))
    return replay.url


def test_a_variant_waits_until_the_pipeline_checked_its_canonical(sqlite_url: str) -> None:
    scheduled: list[Request] = []
    middleware, pipeline = open_pair(crawler_with(sqlite_url, scheduled))
    variant = page(f"{CANONICAL}?utm_source=rss", "/bridge")
    assert head_canonical(variant) == CANONICAL
    with pytest.raises(CanonicalFirst):
        run(middleware.process_response(variant.request, variant))
    (detour,) = scheduled
    assert detour.url == CANONICAL
    canonical = page(CANONICAL, "/bridge", "<p>Share.</p>", **detour.meta)
    assert run(middleware.process_response(canonical.request, canonical)) is canonical
    assert len(scheduled) == 1  # not yet: the canonical's item is still to be checked
    item = {"url": canonical.url, "html": canonical.text}
    assert run(pipeline.process_item(item)) is item
    replay = scheduled[-1]
    assert replay.url == variant.url
    assert replay.dont_filter
    answered = middleware.process_request(replay)
    assert answered is not None
    assert answered.body == variant.body
    assert run(middleware.process_response(replay, answered)) is answered
    with pytest.raises(NearDuplicate):  # its item: a copy of the canonical, kept first
        run(pipeline.process_item({"url": answered.url, "html": answered.text}))
    run(pipeline.close_spider())
    run(middleware.spider_closed())


def test_a_shared_frontier_holds_nothing(sqlite_url: str) -> None:
    scheduled: list[Request] = []
    crawler = crawler_with(sqlite_url, scheduled, SCHEDULER="crawler.frontier.FrontierScheduler")
    middleware, pipeline = open_pair(crawler)
    variant = page(f"{CANONICAL}?utm_source=rss", "/bridge")
    assert run(middleware.process_response(variant.request, variant)) is variant
    assert scheduled == []
    run(pipeline.close_spider())
    run(middleware.spider_closed())


def test_the_addon_installs_it_in_pipeline_mode() -> None:
    def middlewares(**settings: Any) -> dict[Any, int]:
        crawler = get_crawler(settings_dict={"ADDONS": {Addon: 100}, **settings})
        listed = crawler.settings.getdict("DOWNLOADER_MIDDLEWARES")
        return {load_object(name): priority for name, priority in listed.items()}

    assert middlewares().get(CanonicalFirstMiddleware) == 575
    assert CanonicalFirstMiddleware not in middlewares(SIMHASH_FILTER_KEEP="first")
    both = middlewares(SIMHASH_FILTER_MIDDLEWARE=True)
    assert CanonicalFirstMiddleware not in both
    assert both[NearDuplicateMiddleware] == 575


def test_a_late_canonical_reaches_the_spider_and_its_item_is_dropped(sqlite_url: str) -> None:
    """Middleware mode: a canonical checked after its (unhinted) variant was kept is dropped
    as its copy, but its links are the canonical's, so its response reaches the spider; the
    pipeline drops its item (one row a content)."""
    crawler = crawler_with(sqlite_url, [])
    middleware = build_from_crawler(NearDuplicateMiddleware, crawler)
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    run(middleware.spider_opened())
    run(pipeline.open_spider())
    variant = page("https://news.example/archive/bridge", None)  # no hint, no view: kept first
    assert run(middleware.process_response(variant.request, variant)) is variant
    canonical = page(CANONICAL, CANONICAL, "<p>Share.</p>")
    assert run(middleware.process_response(canonical.request, canonical)) is canonical
    assert canonical.meta["simhash_filter"] == "dropped"
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item({"url": canonical.url, "html": canonical.text}))
    assert crawler.stats.get_value("simhash_filter/late_canonical") == 1
    run(pipeline.close_spider())
    run(middleware.spider_closed())


def test_a_mirror_declaring_no_canonical_waits_for_the_page_it_mirrors(sqlite_url: str) -> None:
    """A variant-first site: the mirror is met first and declares no canonical, no rule maps
    it yet; it waits while its URL without the view marker is fetched, so the canonical is
    kept and the mirror's item is dropped (one row a content, the canonical's). The default."""
    scheduled: list[Request] = []
    crawler = crawler_with(sqlite_url, scheduled)
    middleware, pipeline = open_pair(crawler)
    mirror = page("https://news.example/mirror/bridge", None)
    with pytest.raises(CanonicalFirst):
        run(middleware.process_response(mirror.request, mirror))
    (detour,) = scheduled
    assert detour.url == CANONICAL
    canonical = page(CANONICAL, None, "<p>Share.</p>", **detour.meta)
    assert run(middleware.process_response(canonical.request, canonical)) is canonical
    assert replay_dropped(middleware, pipeline, scheduled, canonical) == mirror.url
    run(pipeline.close_spider())
    run(middleware.spider_closed())


@pytest.mark.parametrize(
    ("url", "views_wait"),
    [("https://news.example/news/bridge", True), ("https://news.example/mirror/bridge", False)],
)
def test_a_page_without_a_view_marker_or_hint_is_not_held(
    sqlite_url: str, url: str, views_wait: bool
) -> None:
    """No hint, no rule: a URL without a view marker, or any with VIEWS_WAIT off, is checked."""
    scheduled: list[Request] = []
    crawler = crawler_with(sqlite_url, scheduled, SIMHASH_FILTER_VIEWS_WAIT=views_wait)
    middleware, pipeline = open_pair(crawler)
    plain = page(url, None)
    assert run(middleware.process_response(plain.request, plain)) is plain
    assert scheduled == []
    run(pipeline.close_spider())
    run(middleware.spider_closed())


def og_page(url: str, og_url: str, **meta: Any) -> HtmlResponse:
    body = NEWS.replace("<head>", f'<head><meta property="og:url" content="{og_url}">', 1)
    return HtmlResponse(url, body=body.encode(), request=Request(url, meta=meta), encoding="utf-8")


def test_a_page_whose_og_url_is_its_url_with_a_slash_waits_for_it(sqlite_url: str) -> None:
    """Met first under its slash-less URL, a page naming its URL with a slash in ``og:url``
    (a weak hint: no canonical to wait for by itself) waits for that URL: the site's own form
    is kept, and the slash-less one is dropped as its copy."""
    scheduled: list[Request] = []
    middleware, pipeline = open_pair(crawler_with(sqlite_url, scheduled))
    slashed = "https://news.example/news/bridge/"
    first = og_page(slashed.rstrip("/"), slashed)
    with pytest.raises(CanonicalFirst):
        run(middleware.process_response(first.request, first))
    (detour,) = scheduled
    assert detour.url == slashed
    canonical = og_page(slashed, slashed, **detour.meta)
    assert run(middleware.process_response(canonical.request, canonical)) is canonical
    assert replay_dropped(middleware, pipeline, scheduled, canonical) == first.url
    run(pipeline.close_spider())
    run(middleware.spider_closed())


@pytest.mark.parametrize("og_url", ["https://news.example/", "https://news.example/news/other/"])
def test_a_page_whose_og_url_is_another_page_is_not_held(sqlite_url: str, og_url: str) -> None:
    scheduled: list[Request] = []
    middleware, pipeline = open_pair(crawler_with(sqlite_url, scheduled))
    plain = og_page("https://news.example/news/bridge", og_url)
    assert run(middleware.process_response(plain.request, plain)) is plain
    assert scheduled == []
    run(pipeline.close_spider())
    run(middleware.spider_closed())
