"""The keep policy on the crawl side: the pipeline keeps the canonical copy, counts
``superseded`` and sends ``page_superseded``; ``KEEP = "first"``; the item's canonical field."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from support.helpers import make_middleware, make_pipeline, run, stat

from crawler.articles import HARBOUR_BRIDGE, URBAN_BEES
from simhash_filter import page_superseded
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.outcomes import Outcome
from simhash_filter.crawl.pages.pipeline import NearDuplicate, NearDuplicatePipeline
from simhash_filter.store import FingerprintStore, StoreError

SITE = "https://site.example"
BRIDGE = "".join(f"<p>{p}</p>" for p in HARBOUR_BRIDGE.paragraphs)
BEES = "".join(f"<p>{p}</p>" for p in URBAN_BEES.paragraphs)


def html(body: str, canonical: str | None = None, extra: str = "") -> str:
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    head = f"<head><title>t</title>{link}</head>"
    return f"<html>{head}<body><article>{body}{extra}</article></body></html>"


def listen(pipeline: NearDuplicatePipeline) -> list[dict[str, Any]]:
    heard: list[dict[str, Any]] = []

    def handler(old_url: str, new_url: str, item: Any) -> None:
        heard.append({"old": old_url, "new": new_url, "item": item})

    assert pipeline.crawler is not None
    pipeline.crawler.signals.connect(handler, signal=page_superseded, weak=False)
    return heard


def test_the_canonical_supersedes_the_variant_kept_first(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=0)
    heard = listen(pipeline)
    variant = {"url": f"{SITE}/bridge?utm_source=rss", "html": html(BRIDGE, "/bridge")}
    assert run(pipeline.process_item(variant)) is variant
    canonical = {"url": f"{SITE}/bridge", "html": html(BRIDGE, "/bridge", "<p>Share.</p>")}
    assert run(pipeline.process_item(canonical)) is canonical  # kept, not dropped
    assert heard == [{"old": variant["url"], "new": canonical["url"], "item": canonical}]
    assert stat(pipeline, "superseded") == 1
    assert stat(pipeline, "kept") == 2
    assert stat(pipeline, "dropped") == 0
    other = {"url": f"{SITE}/amp/bridge", "html": html(BRIDGE, "/bridge", "<p>AMP.</p>")}
    with pytest.raises(NearDuplicate, match=f"Near-duplicate of {SITE}/bridge "):
        run(pipeline.process_item(other))
    run(pipeline.close_spider())
    assert len(heard) == 1


def test_keep_first_drops_the_canonical(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=0, KEEP="first")
    heard = listen(pipeline)
    run(pipeline.process_item({"url": f"{SITE}/b?s=1", "html": html(BRIDGE, "/b")}))
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item({"url": f"{SITE}/b", "html": html(BRIDGE, "/b", "<p>x</p>")}))
    run(pipeline.close_spider())
    assert heard == []
    assert stat(pipeline, "superseded") == 0


def test_the_items_canonical_field_is_a_strong_hint(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=0)
    heard = listen(pipeline)
    text = "\n\n".join(HARBOUR_BRIDGE.paragraphs)
    run(pipeline.process_item({"url": f"{SITE}/m/1", "text": text, "canonical": "/a/1"}))
    canonical = {"url": f"{SITE}/a/1", "text": text + " More.", "canonical": f"{SITE}/a/1"}
    run(pipeline.process_item(canonical))
    assert [h["new"] for h in heard] == [f"{SITE}/a/1"]
    # a field that disagrees with the page's own link makes no hint: first-come stays
    run(pipeline.process_item({"url": f"{SITE}/bees?x", "html": html(BEES)}))
    clash = {"url": f"{SITE}/bees", "html": html(BEES, "/bees", "<p>y</p>"), "canonical": "/z"}
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item(clash))
    run(pipeline.close_spider())


def test_a_dropped_variant_confirms_its_canonical(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=0)
    page_filter = pipeline.filter
    run(pipeline.process_item({"url": f"{SITE}/c", "html": html(BRIDGE, "/c")}))
    check = run(page_filter.check(f"{SITE}/c?print", html=html(BRIDGE, "/c", "<p>p</p>")))
    assert check.declared == f"{SITE}/c"
    assert check.canonical_confirmed
    wrong = run(page_filter.check(f"{SITE}/c?amp", html=html(BRIDGE, "/", "<p>a</p>")))
    assert not wrong.canonical_confirmed
    run(pipeline.close_spider())


def test_keep_setting_is_validated() -> None:
    assert Config.from_settings(Settings({"SIMHASH_FILTER_KEEP": "First"})).keep == "first"
    with pytest.raises(ValueError, match="SIMHASH_FILTER_KEEP must be one of"):
        Config.from_settings(Settings({"SIMHASH_FILTER_KEEP": "newest"}))


class NoSupersede:
    """The real store, except that supersede fails (a database error at that moment)."""

    def __init__(self, store: FingerprintStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def supersede(self, page: Any, kept: Any) -> Any:
        raise StoreError("database error: connection lost")


def test_a_failing_supersede_leaves_the_verdict(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    config = Config(database_url=sqlite_url, workers=0)
    store = NoSupersede(config.open_store(config.make_fingerprinter().spec))
    page_filter = PageFilter(config, crawler.stats, store_factory=lambda: store)
    page_filter.open()
    try:
        first = run(page_filter.check(f"{SITE}/d?x", html=html(BRIDGE, "/d")))
        assert first.outcome is Outcome.KEPT
        with caplog.at_level(logging.WARNING):
            check = run(page_filter.check(f"{SITE}/d", html=html(BRIDGE, "/d", "<p>d</p>")))
        assert check.outcome is Outcome.DROPPED  # a logged copy, as without the keep policy
        assert check.superseded is None
        assert "Could not apply the keep policy" in caplog.text
    finally:
        page_filter.close()


def test_the_middleware_reads_the_link_header(sqlite_url: str) -> None:
    middleware = make_middleware(sqlite_url, WORKERS=0)
    body = html(BRIDGE).encode()  # no <link rel="canonical">: the header alone declares it
    headers = {"Link": '</bridge>; rel="canonical", </amp/bridge>; rel="amphtml"'}
    url = f"{SITE}/bridge?utm_source=mail"
    request = Request(url)
    response = HtmlResponse(url, body=body, headers=headers, request=request, encoding="utf-8")
    run(middleware.process_response(request, response))
    run(middleware.spider_closed())
    with FingerprintStore.open_existing(sqlite_url) as store:
        page = store.lookup(url)
        assert page is not None
        assert page.canonical_url == f"{SITE}/bridge"


def test_the_example_storage_pipeline_never_stores_an_item_superseded_before_it_came(
    tmp_path: Any,
) -> None:
    """The variant's item may reach the storage pipeline after the canonical replaced it (its
    callback or an earlier pipeline still busy): it is not stored then."""
    import json

    from crawler.pipelines import KeptPagesFile

    path = tmp_path / "kept.jsonl"
    pipeline = KeptPagesFile(path)
    variant, canonical = "http://site.example/a/?amp=1", "http://site.example/a/"
    pipeline.process_item({"url": "http://site.example/b/"})
    pipeline.superseded(variant, canonical, {"url": canonical})
    pipeline.process_item({"url": canonical})
    pipeline.process_item({"url": variant})  # late: its page was superseded already
    pipeline.close()
    urls = [json.loads(line)["url"] for line in path.read_text().splitlines()]
    assert urls == ["http://site.example/b/", canonical]


@pytest.mark.postgres
def test_a_keep_policy_lock_timeout_is_one_line_and_its_own_stat(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another session holds the pages table while the swap runs: a real lock timeout. The
    page stays a logged copy; the error is counted under errors/keep_policy, not as a page
    that could not be checked, and logged as one line without the chained tracebacks."""
    import psycopg

    pipeline = make_pipeline(pg_url, WORKERS=0, LOCK_TIMEOUT=0.3)
    store = pipeline.filter.store
    assert isinstance(store, FingerprintStore)
    real_supersede = store.supersede
    locker = psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"))

    def supersede_while_locked(page: Any, kept: Any) -> Any:
        locker.execute("LOCK TABLE pages IN ACCESS EXCLUSIVE MODE")
        try:
            return real_supersede(page, kept)
        finally:
            locker.rollback()

    store.supersede = supersede_while_locked  # type: ignore[method-assign]
    try:
        run(pipeline.process_item({"url": f"{SITE}/e?s=1", "html": html(BRIDGE, "/e")}))
        canonical = {"url": f"{SITE}/e", "html": html(BRIDGE, "/e", "<p>Share.</p>")}
        with caplog.at_level(logging.INFO), pytest.raises(NearDuplicate):
            run(pipeline.process_item(canonical))  # the verdict stands: a logged copy
        run(pipeline.close_spider())
    finally:
        locker.close()
    assert stat(pipeline, "errors/keep_policy") == 1
    assert stat(pipeline, "errors") == 0  # every page was checked
    lines = [r for r in caplog.records if "Could not apply the keep policy" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].exc_info is None  # one line, no traceback
    assert "lock timeout" in lines[0].getMessage()
    assert "could not be checked" not in caplog.text
