"""Stored texts (issue 20): packed and capped, written beside the verdicts on both
back-ends (kept pages, changed pages, drops, bulk batches), and additive on old databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from simhash_filter.core.stored_text import MAX_TEXT_BYTES, cap_text, pack_text, unpack_text
from simhash_filter.store import (
    FingerprintStore,
    PageRow,
    StoreOptions,
    VerdictKind,
    reports,
    texts,
)

SPEC = "simhash-test;f=64;tok=words;w=tf"
BASE = 0x0123_4567_89AB_CDEF


def test_pack_round_trip_and_cap() -> None:
    assert unpack_text(pack_text("Grüße, 世界")).text == "Grüße, 世界"
    assert not unpack_text(pack_text("short")).truncated
    long = "é" * MAX_TEXT_BYTES  # two bytes a character: cut in half, on a character
    stored = unpack_text(pack_text(long))
    assert stored.truncated
    assert stored.text == "é" * (MAX_TEXT_BYTES // 2)
    data, cut = cap_text("ab\x00c", limit=10)
    assert data == b"abc"
    assert not cut
    assert len(pack_text("x" * 10_000_000)) < 1000  # 10 MB of one line: capped, compressed
    with pytest.raises(ValueError, match="not a stored text"):
        unpack_text(b"plain bytes")


def _text_of_page(store: FingerprintStore, url: str) -> str | None:
    page = store.lookup(url)
    assert page is not None
    blob = texts.page_texts(store, [page.page_id]).get(page.page_id)
    return None if blob is None else unpack_text(blob).text


def _texts_of_drops(store: FingerprintStore, url: str) -> list[str | None]:
    drops = reports.drops_of_url(store, url)
    found = texts.drop_texts(store, [d.duplicate_id for d in drops])
    return [
        unpack_text(found[d.duplicate_id]).text if d.duplicate_id in found else None
        for d in reversed(drops)  # oldest first
    ]


def test_texts_go_with_kept_pages_and_drops(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        kept = store.check_and_add("https://a.example/1", BASE, text=pack_text("the original"))
        dropped = store.check_and_add("https://b.example/1", BASE ^ 1, text=pack_text("the copy"))
        plain = store.check_and_add("https://c.example/1", BASE ^ (0xFFFF << 20))  # no text
        assert kept.kind is VerdictKind.NEW
        assert dropped.kind is VerdictKind.DUPLICATE
        assert plain.kind is VerdictKind.NEW
        assert _text_of_page(store, "https://a.example/1") == "the original"
        assert _text_of_page(store, "https://c.example/1") is None
        assert _texts_of_drops(store, "https://b.example/1") == ["the copy"]
        # unchanged: a stored text stays (it matches the stored fingerprint)
        again = store.check_and_add("https://a.example/1", BASE, text=pack_text("re-crawl"))
        assert again.kind is VerdictKind.UNCHANGED
        assert _text_of_page(store, "https://a.example/1") == "the original"
        # unchanged: a page stored without text gains one
        store.check_and_add("https://c.example/1", BASE ^ (0xFFFF << 20), text=pack_text("late"))
        assert _text_of_page(store, "https://c.example/1") == "late"
        # changed: the new version's text replaces the old one
        changed = store.check_and_add(
            "https://a.example/1", ~BASE & (2**64 - 1), text=pack_text("v2")
        )
        assert changed.kind is VerdictKind.CHANGED
        assert _text_of_page(store, "https://a.example/1") == "v2"
        assert texts.text_counts(store) == (2, 1)


def test_bulk_batches_store_texts_in_order(db_url: str) -> None:
    rows = [
        PageRow("https://a.example/x", BASE, 10, None, pack_text("first")),
        PageRow("https://b.example/x", BASE ^ 3, 10, None, pack_text("drop one")),
        PageRow("https://b.example/x", BASE ^ 5, 10, None, pack_text("drop two")),
        PageRow("https://c.example/x", BASE ^ (0xFFFF << 30), 10, None, None),
    ]
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        kinds = [v.kind for v in store.add_many(rows)]
        assert kinds == [
            VerdictKind.NEW,
            VerdictKind.DUPLICATE,
            VerdictKind.DUPLICATE,
            VerdictKind.NEW,
        ]
        assert _texts_of_drops(store, "https://b.example/x") == ["drop one", "drop two"]
        assert _text_of_page(store, "https://a.example/x") == "first"
        assert texts.domain_text_counts(store) == {"a.example": 1}


def test_store_rejects_a_text_that_is_not_bytes(sqlite_url: str) -> None:
    with (
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC)) as store,
        pytest.raises(ValueError, match="text must be bytes"),
    ):
        store.check_and_add("https://a.example/", BASE, text="plain str")  # type: ignore[arg-type]


def test_old_database_gains_the_text_tables(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with FingerprintStore.open(url, StoreOptions(spec=SPEC)) as store:
        store.check_and_add("https://a.example/", BASE)
    with sqlite3.connect(tmp_path / "old.db") as conn:  # as a database made before them
        conn.execute("DROP TABLE page_texts")
        conn.execute("DROP TABLE drop_texts")
    with FingerprintStore.open_existing(url) as reader:  # a reader: no text, no error
        assert texts.text_counts(reader) == (0, 0)
        assert texts.page_texts(reader, [1]) == {}
    with FingerprintStore.open(url, StoreOptions(spec=SPEC)) as store:  # a writer makes them
        store.check_and_add("https://b.example/", BASE ^ 1, text=pack_text("copy"))
        assert texts.text_counts(store) == (0, 1)


@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("store_text", [False, True])
def test_the_crawl_stores_texts_only_when_asked(
    sqlite_url: str, workers: int, store_text: bool
) -> None:
    import asyncio

    from scrapy.utils.test import get_crawler

    from crawler.articles import HARBOUR_BRIDGE
    from crawler.testsite import blog_template, news_template
    from simhash_filter.crawl.config import Config
    from simhash_filter.crawl.pages.filter import PageFilter

    crawler = get_crawler()
    assert crawler.stats is not None
    config = Config(database_url=sqlite_url, workers=workers, store_text=store_text)
    page_filter = PageFilter(config, crawler.stats)
    page_filter.open()
    try:
        news = news_template(HARBOUR_BRIDGE, date="12 March 2024")
        kept = asyncio.run(page_filter.check("https://news.example/bridge", html=news))
        blog = blog_template(HARBOUR_BRIDGE, date="March 13", comments=True)
        dropped = asyncio.run(page_filter.check("https://blog.example/bridge", html=blog))
        assert (kept.outcome.value, dropped.outcome.value) == ("kept", "dropped")
    finally:
        page_filter.close()
    with FingerprintStore.open_existing(sqlite_url) as store:
        if not store_text:
            assert texts.text_counts(store) == (0, 0)
            return
        page_text = _text_of_page(store, "https://news.example/bridge")
        assert page_text is not None
        assert HARBOUR_BRIDGE.paragraphs[0][:60] in page_text
        (drop_text,) = _texts_of_drops(store, "https://blog.example/bridge")
        assert drop_text is not None
        assert HARBOUR_BRIDGE.paragraphs[-1][:60] in drop_text
