"""NearDuplicateMiddleware, its hand-off to the pipeline, and the add-on."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Request, TextResponse
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler
from support.helpers import filter_stats, open_middleware, run

from crawler.articles import HARBOUR_BRIDGE, URBAN_BEES
from crawler.testsite import blog_template, news_template, portal_template
from simhash_filter import Addon
from simhash_filter.crawl.addon import import_path
from simhash_filter.crawl.pages.detours import CanonicalFirst
from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware
from simhash_filter.crawl.pages.pipeline import NearDuplicate, NearDuplicatePipeline
from simhash_filter.crawl.requests.form_first import FormFirstMiddleware
from simhash_filter.store import FingerprintStore
from simhash_filter.store.reports import iter_pages

NEWS = news_template(HARBOUR_BRIDGE, date="12 March 2024").encode()
BLOG = blog_template(HARBOUR_BRIDGE, date="March 13", comments=True).encode()
BEES = portal_template(URBAN_BEES, date="5 April 2024").encode()


def html(url: str, body: bytes, status: int = 200, **meta: Any) -> HtmlResponse:
    request = Request(url, meta=meta)
    return HtmlResponse(url, body=body, status=status, request=request, encoding="utf-8")


@pytest.fixture
def crawler(sqlite_url: str) -> Any:
    # the page work in threads: test_pool.py runs the middleware with workers
    return get_crawler(
        settings_dict={"SIMHASH_FILTER_DATABASE_URL": sqlite_url, "SIMHASH_FILTER_WORKERS": 0}
    )


def test_ignores_near_duplicate_responses(crawler: Any) -> None:
    middleware = open_middleware(crawler)
    first = html("https://news.example/bridge", NEWS)
    assert run(middleware.process_response(first.request, first)) is first
    assert first.meta["simhash_filter"] == "kept"
    other = html("https://portal.example/bees", BEES)
    assert run(middleware.process_response(other.request, other)) is other
    copy = html("https://blog.example/bridge", BLOG)
    with pytest.raises(
        IgnoreRequest,
        match=r"Near-duplicate of https://news.example/bridge "
        r"\(similarity [0-9.]+, distance \d bits\)",
    ):
        run(middleware.process_response(copy.request, copy))
    assert copy.meta["simhash_filter"] == "dropped"
    assert filter_stats(crawler) == {"kept": 2, "dropped": 1}
    run(middleware.spider_closed())


@pytest.mark.parametrize(
    "response",
    [
        html("https://x.example/404", NEWS, status=404),
        html("https://x.example/skip", NEWS, dont_simhash_filter=True),
        TextResponse(
            "https://x.example/api.json",
            body=b'{"a": 1}',
            request=Request("https://x.example/api.json"),
        ),
    ],
    ids=["404", "dont_simhash_filter", "not-html"],
)
def test_other_responses_pass_unchecked(crawler: Any, response: Any) -> None:
    middleware = open_middleware(crawler)
    assert run(middleware.process_response(response.request, response)) is response
    assert "simhash_filter" not in response.meta
    assert filter_stats(crawler) == {}


def test_pages_without_text_pass(crawler: Any) -> None:
    middleware = open_middleware(crawler)
    for n, body in enumerate(
        [b"", bytes(range(256)) * 50, portal_template(None, date="x").encode()]
    ):
        response = html(f"https://x.example/{n}", body)
        assert run(middleware.process_response(response.request, response)) is response
        assert response.meta["simhash_filter"] == "no_text"
    # the portal page (a menu, no main text) is recorded by its exact-content key; an empty
    # or binary body has no content to key
    assert filter_stats(crawler) == {"no_text": 3, "exact_content": 1}


def test_pipeline_reuses_the_middleware_verdict(crawler: Any) -> None:
    """Both enabled: one extraction, one insert, one count per page."""
    middleware = open_middleware(crawler)
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    run(pipeline.open_spider())
    assert pipeline.filter is middleware.filter
    calls: list[str] = []
    store = middleware.filter._store
    assert store is not None
    original = store.add_many

    def counting(rows: Any, **kwargs: Any) -> Any:
        rows = list(rows)
        calls.extend(row.url for row in rows)
        return original(rows, **kwargs)

    store.add_many = counting  # type: ignore[method-assign]
    response = html("https://news.example/bridge#top", NEWS)
    run(middleware.process_response(response.request, response))
    item = {"url": "https://news.example/bridge", "html": NEWS.decode()}
    assert run(pipeline.process_item(item)) is item
    empty = html("https://x.example/empty", b"")
    run(middleware.process_response(empty.request, empty))
    assert run(pipeline.process_item({"url": "https://x.example/empty", "html": ""})) is not None
    assert calls == ["https://news.example/bridge#top"]
    assert filter_stats(crawler) == {"kept": 1, "no_text": 1}
    # an item the middleware never saw is still checked by the pipeline
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item({"url": "https://elsewhere.example/copy", "html": BLOG}))
    assert filter_stats(crawler) == {"kept": 1, "no_text": 1, "dropped": 1}
    run(pipeline.close_spider())
    assert middleware.filter._store is not None  # the middleware still uses it
    run(middleware.spider_closed())
    assert middleware.filter._store is None


def test_every_drop_is_logged_first_at_info_then_debug(
    crawler: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Scrapy does not log an ``IgnoreRequest``: the middleware logs each drop itself, as
    the pipeline's ``DropItem`` is logged (the first at INFO with the hint, then DEBUG)."""
    middleware = open_middleware(crawler)
    first = html("https://news.example/bridge", NEWS)
    run(middleware.process_response(first.request, first))
    copies = [html(f"https://blog{n}.example/bridge", BLOG) for n in range(3)]
    with caplog.at_level(logging.DEBUG, logger="simhash_filter"):
        for copy in copies:
            with pytest.raises(IgnoreRequest):
                run(middleware.process_response(copy.request, copy))
    drops = [r for r in caplog.records if r.getMessage().startswith("Near-duplicate of")]
    assert [r.levelno for r in drops] == [logging.INFO, logging.DEBUG, logging.DEBUG]
    assert "SIMHASH_FILTER_DEBUG" in drops[0].getMessage()
    for record, copy in zip(drops, copies, strict=True):
        assert copy.url in record.getMessage()
    run(middleware.spider_closed())


def test_disabled_is_not_configured() -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_ENABLED": "false"})
    with pytest.raises(NotConfigured):
        build_from_crawler(NearDuplicateMiddleware, crawler)


def test_addon_repr_is_its_name() -> None:
    """Scrapy's "Enabled addons" line shows the add-on's repr: the name a project uses."""
    assert repr(Addon()) == "simhash_filter.Addon"


def test_addon_registers_the_pipeline() -> None:
    """By the import path users write: Scrapy's "Enabled item pipelines" line shows it,
    not ``<class '…'>`` (issue 44 item 6)."""
    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 100}})
    pipelines = crawler.settings.getdict("ITEM_PIPELINES")
    assert pipelines == {"simhash_filter.NearDuplicatePipeline": 250}
    assert load_object("simhash_filter.NearDuplicatePipeline") is NearDuplicatePipeline
    assert "simhash_filter.NearDuplicateMiddleware" not in crawler.settings.getdict(
        "DOWNLOADER_MIDDLEWARES"
    )
    listed = get_crawler(
        settings_dict={"ADDONS": {Addon: 100}, "ITEM_PIPELINES": {NearDuplicatePipeline: 40}}
    )
    assert listed.settings.getdict("ITEM_PIPELINES") == {NearDuplicatePipeline: 40}


def test_addon_registers_the_middleware_on_request() -> None:
    crawler = get_crawler(
        settings_dict={"ADDONS": {"simhash_filter.Addon": 100}, "SIMHASH_FILTER_MIDDLEWARE": True}
    )
    assert crawler.settings.getdict("DOWNLOADER_MIDDLEWARES") == {
        "simhash_filter.NearDuplicateMiddleware": 575,
        import_path(FormFirstMiddleware): 650,
    }
    assert load_object(import_path(FormFirstMiddleware)) is FormFirstMiddleware
    assert crawler.settings.getdict("ITEM_PIPELINES") == {
        "simhash_filter.NearDuplicatePipeline": 250
    }
    off = get_crawler(settings_dict={"ADDONS": {Addon: 100}, "SIMHASH_FILTER_FORM_FIRST": False})
    assert import_path(FormFirstMiddleware) not in off.settings.getdict("DOWNLOADER_MIDDLEWARES")


def test_addon_keeps_a_priority_the_project_chose() -> None:
    crawler = get_crawler(
        settings_dict={
            "ADDONS": {Addon: 100},
            "ITEM_PIPELINES": {"simhash_filter.NearDuplicatePipeline": 50, "myproject.Store": 300},
        }
    )
    assert crawler.settings.getdict("ITEM_PIPELINES") == {
        "simhash_filter.NearDuplicatePipeline": 50,
        "myproject.Store": 300,
    }


def test_a_variant_still_waiting_for_its_canonical_at_close_is_checked(
    crawler: Any, sqlite_url: str
) -> None:
    """A close that is not idle (CLOSESPIDER_*, a shutdown) finds a variant held for its
    canonical: it is checked then, so the page is in the index rather than lost."""
    scheduled: list[Request] = []
    crawler.engine = type("Engine", (), {"crawl": staticmethod(scheduled.append)})()
    middleware = open_middleware(crawler)
    head = b'<head><link rel="canonical" href="https://news.example/bridge"></head>'
    variant = html("https://news.example/bridge?print=1", NEWS.replace(b"<head>", head, 1))
    with pytest.raises(CanonicalFirst):
        run(middleware.process_response(variant.request, variant))
    assert [r.url for r in scheduled] == ["https://news.example/bridge"]
    run(middleware.spider_closed())  # the canonical never answered
    assert crawler.stats.get_value("simhash_filter/canonical_first_at_close") == 1
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert [page.url for page in iter_pages(store)] == ["https://news.example/bridge?print=1"]
