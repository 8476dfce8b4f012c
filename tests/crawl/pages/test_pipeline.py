"""NearDuplicatePipeline with a real crawler (get_crawler + build_from_crawler) and store."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import re
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import attrs
import pytest
import scrapy
from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from support import helpers
from support.helpers import filter_stats, run

import simhash_filter
from crawler.articles import HARBOUR_BRIDGE, LIBRARY, NIGHT_TRAINS, URBAN_BEES
from crawler.testsite import blog_template, news_template
from simhash_filter.core.signature import MatchRule
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.group_commit import GroupCommit
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.pages.pipeline import (
    FilterUnavailable,
    NearDuplicate,
    NearDuplicatePipeline,
    wait_started,
)
from simhash_filter.store import FingerprintStore, StoreError, StoreOptions
from simhash_filter.store.records import Match, PageRow, Verdict, VerdictKind

BRIDGE = "\n\n".join(HARBOUR_BRIDGE.paragraphs)
BEES = "\n\n".join(URBAN_BEES.paragraphs)
TRAINS = "\n\n".join(NIGHT_TRAINS.paragraphs)
LIBRARY_TEXT = "\n\n".join(LIBRARY.paragraphs)


make_pipeline = functools.partial(helpers.make_pipeline, WORKERS=0)
"""A pipeline on a database; the page work in threads unless ``WORKERS`` says otherwise (the
pool has tests of its own in test_pool.py, and a few here run both ways)."""


class PageScrapyItem(scrapy.Item):
    url = scrapy.Field()
    text = scrapy.Field()
    html = scrapy.Field()
    fingerprint = scrapy.Field()


@dataclasses.dataclass
class PageDataclass:
    url: str
    text: str | None = None
    html: str | None = None
    fingerprint: str | None = None


@attrs.define
class PageAttrs:
    url: str
    text: str | None = None
    html: str | None = None
    fingerprint: str | None = None


ITEM_TYPES: dict[str, Callable[..., Any]] = {
    "dict": dict,
    "scrapy.Item": PageScrapyItem,
    "dataclass": PageDataclass,
    "attrs": PageAttrs,
}


def test_disabled_is_not_configured(sqlite_url: str) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_ENABLED": False})
    with pytest.raises(NotConfigured, match="SIMHASH_FILTER_ENABLED"):
        build_from_crawler(NearDuplicatePipeline, crawler)


def test_bad_setting_stops_the_crawl_at_start() -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_MAX_DISTANCE": "lots"})
    with pytest.raises(ValueError, match="SIMHASH_FILTER_MAX_DISTANCE"):
        build_from_crawler(NearDuplicatePipeline, crawler)


@pytest.mark.parametrize("kind", list(ITEM_TYPES))
def test_keeps_new_pages_and_drops_near_duplicates(sqlite_url: str, kind: str) -> None:
    make = ITEM_TYPES[kind]
    pipeline = make_pipeline(sqlite_url, FINGERPRINT_FIELD="fingerprint")
    first = make(url="https://a.example/bridge", text=BRIDGE)
    assert run(pipeline.process_item(first)) is first
    other = make(url="https://a.example/bees", text=BEES)
    assert run(pipeline.process_item(other)) is other
    copy = make(url="https://b.example/mirror/bridge?ref=1", text=BRIDGE + "\n\nShare this.")
    with pytest.raises(NearDuplicate) as dropped:
        run(pipeline.process_item(copy))
    assert isinstance(dropped.value, DropItem)
    assert dropped.value.duplicate_of == "https://a.example/bridge"
    assert dropped.value.distance <= 3
    assert dropped.value.similarity is not None
    assert str(dropped.value) == (  # one similarity, named as the command line names it
        f"Near-duplicate of https://a.example/bridge (similarity "
        f"{round(dropped.value.similarity, 3):g}, distance {dropped.value.distance} bits): "
        "https://b.example/mirror/bridge?ref=1"
    )
    assert dropped.value.log_level == "DEBUG"
    assert filter_stats(pipeline) == {"kept": 2, "dropped": 1}
    fingerprint = ItemAdapter(first)["fingerprint"]
    assert isinstance(fingerprint, str)
    assert len(fingerprint) == 16
    run(pipeline.close_spider())
    with FingerprintStore.open_existing(sqlite_url) as store:
        page = store.lookup("https://a.example/bridge")
        assert page is not None
        assert f"{page.fingerprint:016x}" == fingerprint
        assert store.stats().pages == 2
        assert [d.url for d in store.duplicates()] == ["https://b.example/mirror/bridge?ref=1"]


@pytest.mark.parametrize("workers", [0, 1])
def test_html_is_extracted_when_there_is_no_text_field(sqlite_url: str, workers: int) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=workers)
    news = {
        "url": "https://news.example/bridge",
        "html": news_template(HARBOUR_BRIDGE, date="12 March 2024"),
    }
    run(pipeline.process_item(news))
    blog = {
        "url": "https://blog.example/bridge",
        "html": blog_template(HARBOUR_BRIDGE, date="March 13", comments=True).encode(),
    }
    with pytest.raises(NearDuplicate, match=re.escape("https://news.example/bridge")):
        run(pipeline.process_item(blog))
    assert filter_stats(pipeline) == {"kept": 1, "dropped": 1}
    assert pipeline.filter.stats.get_value("simhash_filter/workers/pages", 0) == 2 * workers
    run(pipeline.close_spider())


def test_text_field_wins_over_html(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url)
    run(pipeline.process_item({"url": "https://x.example/1", "text": BRIDGE}))
    item = {
        "url": "https://x.example/2",
        "text": BEES,
        "html": news_template(HARBOUR_BRIDGE, date="x"),
    }
    assert run(pipeline.process_item(item)) is item
    assert filter_stats(pipeline) == {"kept": 2}


def test_custom_field_names(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, URL_FIELD="link", TEXT_FIELD="body", HTML_FIELD="raw")
    run(pipeline.process_item({"link": "https://x.example/1", "body": BRIDGE}))
    with pytest.raises(NearDuplicate):
        run(
            pipeline.process_item(
                {"link": "https://x.example/2", "raw": news_template(HARBOUR_BRIDGE, date="x")}
            )
        )


@pytest.mark.parametrize(
    ("item", "keyed"),
    [
        ({"url": "https://x.example/short", "text": "Too short to fingerprint."}, True),
        ({"url": "https://x.example/empty", "text": "", "html": ""}, False),
        ({"url": "https://x.example/none"}, False),
        ({"url": "https://x.example/binary", "html": bytes(range(256)) * 100}, False),
        (
            {
                "url": "https://x.example/nav",
                "html": "<html><body><nav><a href='/'>Home</a></nav></body></html>",
            },
            True,
        ),
        ({"url": "https://x.example/odd", "text": 42, "html": ["not", "html"]}, False),
    ],
)
@pytest.mark.parametrize("workers", [0, 1])
def test_pages_without_text_pass_unfingerprinted(
    sqlite_url: str, item: dict[str, Any], keyed: bool, workers: int
) -> None:
    """Too little text: the item passes without a fingerprint; a page with some content is
    recorded by its exact-content key (for its exact copies), one without content is not."""
    item = dict(item)  # the pipeline takes the HTML field out of a passing item (REMOVE_HTML)
    pipeline = make_pipeline(sqlite_url, FINGERPRINT_FIELD="fingerprint", WORKERS=workers)
    assert run(pipeline.process_item(item)) is item
    assert "fingerprint" not in item
    assert filter_stats(pipeline) == {"no_text": 1} | ({"exact_content": 1} if keyed else {})
    run(pipeline.close_spider())
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert store.stats().pages == int(keyed)


def test_empty_pages_do_not_collide(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url)
    for n in range(3):
        run(pipeline.process_item({"url": f"https://x.example/{n}", "html": "<html></html>"}))
    assert filter_stats(pipeline) == {"no_text": 3}


@pytest.mark.parametrize("workers", [0, 1])
def test_exact_copies_of_a_page_with_little_text_are_dropped(sqlite_url: str, workers: int) -> None:
    """DESIGN.md invariant 2: too little text to fingerprint, yet an exact copy (white space
    aside) under another URL is a copy; a page differing by one word is not."""
    page = (
        "<html>\n<body>\n<h1>Gallery</h1>\n<p>Twelve photos of the harbour at dawn.</p>\n"
        "</body>\n</html>\n"
    )
    pipeline = make_pipeline(sqlite_url, WORKERS=workers)
    items = [
        {"url": "https://x.example/gallery", "html": page.encode()},
        {"url": "https://x.example/gallery?ref=rss", "html": page.encode()},
        {"url": "https://x.example/gallery-2", "html": page.replace("\n", "\r\n  ").encode()},
        {"url": "https://x.example/other", "html": page.replace("dawn", "dusk").encode()},
        {"url": "https://x.example/short", "text": "Too short to fingerprint."},
        {"url": "https://x.example/short-copy", "text": "Too short to fingerprint."},
    ]
    passed, drops = [], []
    for item in items:
        try:
            passed.append(run(pipeline.process_item(item))["url"])
        except NearDuplicate as drop:
            drops.append((drop.url, drop.duplicate_of))
    assert drops == [
        ("https://x.example/gallery?ref=rss", "https://x.example/gallery"),
        ("https://x.example/gallery-2", "https://x.example/gallery"),
        ("https://x.example/short-copy", "https://x.example/short"),
    ]
    assert passed == [
        "https://x.example/gallery",
        "https://x.example/other",
        "https://x.example/short",
    ]
    assert filter_stats(pipeline) == {"no_text": 3, "dropped": 3, "exact_content": 6}
    run(pipeline.close_spider())


def test_items_without_url_pass_with_a_warning(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = make_pipeline(sqlite_url)
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        for _ in range(2):
            run(pipeline.process_item({"text": BRIDGE}))
    assert filter_stats(pipeline) == {"no_url": 2}
    assert len([r for r in caplog.records if "SIMHASH_FILTER_URL_FIELD" in r.getMessage()]) == 1


def test_recrawl_reports_unchanged_and_changed(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, FINGERPRINT_FIELD="fingerprint")
    run(pipeline.process_item({"url": "https://x.example/page", "text": BRIDGE}))
    run(pipeline.process_item({"url": "https://x.example/other", "text": TRAINS}))
    again = {"url": "https://x.example/page", "text": BRIDGE}
    assert run(pipeline.process_item(again)) is again
    assert len(again["fingerprint"]) == 16
    rewritten = {"url": "https://x.example/page", "text": LIBRARY_TEXT}
    assert run(pipeline.process_item(rewritten)) is rewritten
    assert filter_stats(pipeline) == {"kept": 2, "unchanged": 1, "changed": 1}


def test_fingerprint_field_missing_from_item_type_warns_once(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    @dataclasses.dataclass
    class Bare:
        url: str
        text: str

    pipeline = make_pipeline(sqlite_url, FINGERPRINT_FIELD="simhash")
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        run(pipeline.process_item(Bare("https://x.example/1", BRIDGE)))
        run(pipeline.process_item(Bare("https://x.example/2", BEES)))
    assert filter_stats(pipeline) == {"kept": 2}
    assert len([r for r in caplog.records if "'simhash'" in r.getMessage()]) == 1


def test_first_drop_logged_at_info_with_a_hint(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = make_pipeline(sqlite_url)
    run(pipeline.process_item({"url": "https://x.example/a", "text": BRIDGE}))
    with caplog.at_level(logging.DEBUG, logger="simhash_filter"):
        for n in range(3):
            with pytest.raises(NearDuplicate):
                run(pipeline.process_item({"url": f"https://x.example/copy{n}", "text": BRIDGE}))
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1
    assert "https://x.example/copy0" in infos[0].getMessage()
    assert "SIMHASH_FILTER_DEBUG" in infos[0].getMessage()


def test_debug_logs_every_drop(sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    pipeline = make_pipeline(sqlite_url, DEBUG=True)
    run(pipeline.process_item({"url": "https://x.example/a", "text": BRIDGE}))
    with caplog.at_level(logging.INFO, logger="simhash_filter"):
        for n in range(3):
            with pytest.raises(NearDuplicate) as dropped:
                run(pipeline.process_item({"url": f"https://x.example/copy{n}", "text": BRIDGE}))
            assert dropped.value.log_level == "INFO"
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(messages) == 3
    assert all(
        "Near-duplicate of https://x.example/a (similarity 1, distance 0 bits)" in m
        for m in messages
    )


@pytest.mark.parametrize("remove_html", [True, False])
def test_a_dropped_item_leaves_its_html_behind(sqlite_url: str, remove_html: bool) -> None:
    """Scrapy logs a dropped item whole, after "Dropped:": its HTML must not be in it,
    whatever REMOVE_HTML says of passing items (issue 44 item 1)."""
    pipeline = make_pipeline(sqlite_url, REMOVE_HTML=remove_html)
    page = news_template(HARBOUR_BRIDGE, date="12 March 2024")
    kept = {"url": "https://x.example/a", "html": page}
    assert run(pipeline.process_item(kept)) is kept
    assert ("html" in kept) is not remove_html
    copy = {"url": "https://x.example/copy", "html": page, "title": "Harbour bridge"}
    with pytest.raises(NearDuplicate):
        run(pipeline.process_item(copy))
    assert copy == {"url": "https://x.example/copy", "title": "Harbour bridge"}


def test_add_text_puts_the_main_text_in_passing_items(sqlite_url: str) -> None:
    """ADD_TEXT: the text fingerprinted goes into the item's text field, for a feed that
    ``simhash-filter import`` reads back (issue 44 item 4); an item's own text is kept."""
    pipeline = make_pipeline(sqlite_url, ADD_TEXT=True)
    item = {"url": "https://x.example/a", "html": news_template(URBAN_BEES, date="1 May 2024")}
    assert run(pipeline.process_item(item)) is item
    assert "html" not in item
    assert "bees" in item["text"].lower()
    assert len(item["text"]) > 200
    own = {"url": "https://x.example/b", "text": BRIDGE}
    assert run(pipeline.process_item(own))["text"] == BRIDGE
    plain = make_pipeline(sqlite_url.replace("dedup.db", "plain.db"))
    item = {"url": "https://x.example/a", "html": news_template(URBAN_BEES, date="1 May 2024")}
    assert "text" not in run(plain.process_item(item))


class BrokenStore:
    """A store whose database has gone away."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]:
        self.calls += 1
        raise StoreError("could not connect to server: Connection refused")

    def close(self) -> None:
        self.closed = True


def broken_pipeline(**config: Any) -> tuple[NearDuplicatePipeline, BrokenStore]:
    crawler = get_crawler()
    assert crawler.stats is not None
    store = BrokenStore()
    pipeline = NearDuplicatePipeline(
        PageFilter(Config(**config), crawler.stats, store_factory=lambda: store)
    )
    run(pipeline.open_spider())
    return pipeline, store


def test_store_errors_fail_open(caplog: pytest.LogCaptureFixture) -> None:
    pipeline, store = broken_pipeline()
    item = {"url": "https://x.example/1", "text": BRIDGE}
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        assert run(pipeline.process_item(item)) is item
        assert run(pipeline.process_item({"url": "https://x.example/2", "text": BEES})) is not None
    # both pass, and wait in the journal for the store to come back
    assert filter_stats(pipeline) == {"errors": 2, "unchecked/journaled": 2}
    assert store.calls == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # the first error of its kind, in full; the second is counted
    assert warnings[0].exc_info is None  # a refused connection: its line says all
    assert "Connection refused" in warnings[0].getMessage()
    assert "SIMHASH_FILTER_FAIL_OPEN" in warnings[0].getMessage()
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        run(pipeline.close_spider())
    assert store.closed
    assert store.calls == 5  # the close tried the journal once more: the batch, each page
    assert filter_stats(pipeline) == {"errors": 2, "unchecked/journaled": 2, "unchecked/lost": 2}
    summary = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING][1:]
    assert summary == [
        "simhash_filter: 2 pages passed unchecked and the store did not take them before the "
        "crawl ended: they are not in the index (a later crawl checks them)",
        "simhash_filter: 1 more pages could not be checked "
        "(StoreError: database unreachable; the last: StoreError: could not connect to server: "
        "Connection refused)",
    ]


def test_store_errors_fail_closed() -> None:
    pipeline, _ = broken_pipeline(fail_open=False)
    with pytest.raises(FilterUnavailable, match="FAIL_OPEN") as dropped:
        run(pipeline.process_item({"url": "https://x.example/1", "text": BRIDGE}))
    assert isinstance(dropped.value, DropItem)
    # a page with too little text is checked by its exact-content key: it needs the store too
    with pytest.raises(FilterUnavailable, match="FAIL_OPEN"):
        run(pipeline.process_item({"url": "https://x.example/2", "text": "short"}))
    # a page without content needs no store: it passes either way
    assert run(pipeline.process_item({"url": "https://x.example/3", "text": " "})) is not None
    assert filter_stats(pipeline) == {"errors": 2, "no_text": 1}


@pytest.mark.parametrize("workers", [0, 2])
def test_concurrent_near_duplicates_admit_exactly_one(sqlite_url: str, workers: int) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=workers)

    async def crawl() -> list[Any]:
        items = [{"url": f"https://mirror{n}.example/bridge", "text": BRIDGE} for n in range(16)]
        return await asyncio.gather(
            *(pipeline.process_item(i) for i in items), return_exceptions=True
        )

    results = run(crawl())
    kept = [r for r in results if isinstance(r, dict)]
    dropped = [r for r in results if isinstance(r, NearDuplicate)]
    assert len(kept) == 1
    assert len(dropped) == 15
    assert {d.duplicate_of for d in dropped} == {kept[0]["url"]}
    assert filter_stats(pipeline) == {"kept": 1, "dropped": 15}
    run(pipeline.close_spider())


def test_store_is_shared_and_closed_once(sqlite_url: str) -> None:
    crawler = get_crawler(
        settings_dict={"SIMHASH_FILTER_DATABASE_URL": sqlite_url, "SIMHASH_FILTER_WORKERS": 1}
    )
    first = build_from_crawler(NearDuplicatePipeline, crawler)
    second = build_from_crawler(NearDuplicatePipeline, crawler)
    assert first.filter is second.filter
    run(first.open_spider())
    run(second.open_spider())
    run(first.close_spider())
    run(first.process_item({"url": "https://x.example/1", "text": BRIDGE}))  # still open
    pool = first.filter.pool
    assert pool is not None
    pids = pool.pids
    run(second.close_spider())
    assert first.filter._store is None
    assert first.filter.pool is None
    assert pool.pids == []
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)  # stopped and reaped
    assert filter_stats(first) == {"kept": 1}


def test_the_crawl_starts_once_the_page_workers_have(sqlite_url: str) -> None:
    # pages downloaded while the workers start would pile up in Scrapy's scraper (issue 45)
    pipeline = make_pipeline(sqlite_url, WORKERS=1, open_=False)
    run(pipeline.open_spider())
    pool = pipeline.filter.pool
    assert pool is not None
    assert pool.ready.done()
    assert pool.ready.exception() is None
    assert len(pool.pids) == 1
    run(pipeline.close_spider())


def test_waiting_for_the_workers_ends_with_a_failed_start_or_at_the_bound() -> None:
    failed: Future[None] = Future()
    failed.set_exception(RuntimeError("no workers"))
    wait_started(failed, 60.0)  # returns at once, without raising: the crawl falls back
    never: Future[None] = Future()
    wait_started(never, 0.01)  # a start that hangs delays the crawl by the bound only
    assert not never.done()


def test_package_root_exports() -> None:
    from simhash_filter.crawl.addon import Addon
    from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware

    assert simhash_filter.Addon is Addon
    assert simhash_filter.NearDuplicatePipeline is NearDuplicatePipeline
    assert simhash_filter.NearDuplicateMiddleware is NearDuplicateMiddleware
    assert simhash_filter.NearDuplicate is NearDuplicate


class PickyStore:
    """The real store, except that it fails for one URL (alone or in a batch)."""

    def __init__(self, store: FingerprintStore) -> None:
        self.store = store
        self.batches: list[int] = []

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]:
        rows = list(rows)
        if len(rows) > 1:  # a group; a page alone is not one
            self.batches.append(len(rows))
        bad = [row.url for row in rows if "bad" in row.url]
        if bad:
            raise StoreError(f"cannot store {bad[0]}" if len(rows) == 1 else "a bad row")
        return self.store.add_many(rows, wait=wait)

    def supersede(self, page: PageRow, kept: Any) -> Any:
        return self.store.supersede(page, kept)

    def mark_canonical(self, page: PageRow, kept: Any) -> bool:
        return self.store.mark_canonical(page, kept)

    def close(self) -> None:
        self.store.close()


def test_one_failing_page_in_a_batch_does_not_fail_the_others(sqlite_url: str) -> None:
    fingerprinter = Config().make_fingerprinter()
    real = FingerprintStore.open(sqlite_url, StoreOptions(spec=fingerprinter.spec))
    store = PickyStore(real)
    commits = GroupCommit(lambda: store)
    texts = [BRIDGE, BEES, TRAINS, LIBRARY_TEXT]
    rows = [
        PageRow(f"https://x.example/{n}", fingerprinter.fingerprint(t) or 0, len(t))
        for n, t in enumerate(texts)
    ]
    rows.insert(2, PageRow("https://x.example/bad", rows[0].fingerprint, 10))
    results = commits.add_rows(rows)
    assert store.batches == [5]
    assert [type(r).__name__ for r in results] == [
        "Verdict",
        "Verdict",
        "StoreError",
        "Verdict",
        "Verdict",
    ]
    store.close()


def test_concurrent_pages_share_transactions(sqlite_url: str) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    fingerprinter = Config().make_fingerprinter()
    store = PickyStore(FingerprintStore.open(sqlite_url, StoreOptions(spec=fingerprinter.spec)))
    pipeline = NearDuplicatePipeline(
        PageFilter(Config(), crawler.stats, store_factory=lambda: store)
    )
    run(pipeline.open_spider())
    texts = [BRIDGE, BEES, TRAINS, LIBRARY_TEXT] * 10

    async def crawl() -> list[Any]:
        items = [{"url": f"https://x.example/{n}", "text": t} for n, t in enumerate(texts)]
        return await asyncio.gather(
            *(pipeline.process_item(i) for i in items), return_exceptions=True
        )

    results = run(crawl())
    assert sum(isinstance(r, dict) for r in results) == 4
    assert sum(isinstance(r, NearDuplicate) for r in results) == 36
    assert filter_stats(pipeline) == {"kept": 4, "dropped": 36}
    run(pipeline.close_spider())


@pytest.mark.parametrize("workers", [0, 1])
def test_the_sketch_reaches_the_store(sqlite_url: str, workers: int) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    config = Config(workers=workers)
    spec = config.make_fingerprinter().spec
    store = FingerprintStore.open(sqlite_url, StoreOptions(spec=spec, rule=MatchRule()))
    page_filter = PageFilter(config, crawler.stats, store_factory=lambda: store)
    page_filter.open()
    try:
        news = news_template(HARBOUR_BRIDGE, date="12 March 2024")
        first = run(page_filter.check("https://news.example/bridge", html=news))
        assert first.outcome.value == "kept"
        blog = blog_template(HARBOUR_BRIDGE, date="March 13", comments=True).encode()
        copy = run(page_filter.check("https://blog.example/bridge", html=blog))
        assert copy.verdict is not None
        match = copy.verdict.duplicate_of
        assert match is not None
        # judged by the sketches (a page without one is judged by distance alone: None)
        assert match.similarity is not None
        assert match.similarity >= MatchRule().min_similarity
    finally:
        page_filter.close()


def test_boilerplate_verdicts_are_counted() -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(Config(workers=0), crawler.stats, store_factory=BrokenStore)
    other = Match("https://forum.example/thread-1", 1, 2, 1, similarity=0.9)
    url = "https://forum.example/thread-2"
    verdict = Verdict(VerdictKind.NEW, url, 3, boilerplate_of=other)
    page_filter.record(FilterResult(Outcome.KEPT, url, 3, verdict))
    page_filter.record(FilterResult(Outcome.KEPT, url, 3, Verdict(VerdictKind.NEW, url, 3)))
    assert crawler.stats.get_value("simhash_filter/boilerplate") == 1
    assert crawler.stats.get_value("simhash_filter/kept") == 2


def test_listing_verdicts_are_counted_and_named_under_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(
        Config(workers=0, debug=True), crawler.stats, store_factory=BrokenStore
    )
    archive = Match("https://blog.example/page/2/", 1, 2, 1, similarity=0.82)
    url = "https://blog.example/2024/11/post-352/"
    with caplog.at_level(logging.DEBUG, logger="simhash_filter"):
        page_filter.record(FilterResult(Outcome.KEPT, url, 3, Verdict(VerdictKind.NEW, url, 3)))
        page_filter.record(
            FilterResult(Outcome.KEPT, url, 3, Verdict(VerdictKind.NEW, url, 3, listing_of=archive))
        )
    assert crawler.stats.get_value("simhash_filter/listing") == 1
    assert crawler.stats.get_value("simhash_filter/boilerplate") is None
    assert crawler.stats.get_value("simhash_filter/kept") == 2
    named = [r.getMessage() for r in caplog.records if "lists several entries" in r.getMessage()]
    assert named == [
        f"simhash_filter: {url} admitted: its text matches {archive.url}, but one of "
        "the two pages lists several entries and the other does not (not a copy)"
    ]


@pytest.mark.parametrize("kind", list(ITEM_TYPES))
def test_passing_items_leave_without_their_html(sqlite_url: str, kind: str) -> None:
    """``REMOVE_HTML`` (default True): the README's ``"html": response.body`` would make a
    feed export fail on bytes; the field is checked, then removed (None where the item
    type cannot lose a field)."""
    pipeline = make_pipeline(sqlite_url)
    body = news_template(HARBOUR_BRIDGE, date="12 March 2024").encode()
    item = ITEM_TYPES[kind](url="https://news.example/bridge", html=body)
    assert run(pipeline.process_item(item)) is item
    exported = ItemAdapter(item).asdict()
    if kind in {"dict", "scrapy.Item"}:
        assert "html" not in exported
    else:
        assert exported["html"] is None
    assert exported["url"] == "https://news.example/bridge"
    json.dumps(exported)  # what a JSON feed export does with it
    empty = ITEM_TYPES[kind](url="https://news.example/empty", html=b"<html></html>")
    run(pipeline.process_item(empty))  # no_text passes too, and loses its HTML too
    assert not ItemAdapter(empty).get("html")
    assert filter_stats(pipeline) == {"kept": 1, "no_text": 1}
    run(pipeline.close_spider())


def test_remove_html_false_keeps_the_field(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, REMOVE_HTML=False)
    html = news_template(HARBOUR_BRIDGE, date="12 March 2024")
    item = {"url": "https://news.example/bridge", "html": html}
    assert run(pipeline.process_item(item))["html"] == html
    run(pipeline.close_spider())
