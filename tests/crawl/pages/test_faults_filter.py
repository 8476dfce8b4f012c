"""What the crawl side does when the store cannot check a page: a group that timed out is
not retried page by page with the full wait; a page that passed unchecked waits in the
journal and is checked and added once the store answers again (a copy found then is
counted as emitted); the count line of unchecked pages comes within the interval of the
first, not only at the close."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler
from support.helpers import run

from crawler.articles import HARBOUR_BRIDGE, NIGHT_TRAINS, URBAN_BEES
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.error_log import RepeatedErrors
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.group_commit import GroupCommit
from simhash_filter.crawl.pages.pipeline import NearDuplicatePipeline
from simhash_filter.store import (
    FingerprintStore,
    PageRow,
    StoreBusy,
    StoreOptions,
    StoreUnavailable,
    Verdict,
)
from simhash_filter.store.faults import WaitBounds

TEXTS = ["\n\n".join(a.paragraphs) for a in (HARBOUR_BRIDGE, URBAN_BEES, NIGHT_TRAINS)]


class FlakyStore:
    """A real store that fails every call while ``failing`` is set (with that error)."""

    def __init__(self, store: FingerprintStore) -> None:
        self.store = store
        self.bounds = WaitBounds(lock_timeout=2.0)
        self.failing: Exception | None = None
        self.waits: list[float | None] = []  # the ``wait`` of each page tried alone
        self.batches = 0

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]:
        rows = list(rows)
        if len(rows) > 1:
            self.batches += 1
        else:  # a page alone
            self.waits.append(wait)
        if self.failing is not None:
            raise self.failing
        return self.store.add_many(rows, wait=wait)

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def flaky(tmp_path: Path) -> FlakyStore:
    return FlakyStore(
        FingerprintStore.open(f"sqlite:///{tmp_path / 'dedup.db'}", StoreOptions(spec="x"))
    )


def rows(n: int) -> list[PageRow]:
    return [PageRow(f"https://x.example/{i}", 0x1111 << (i * 8)) for i in range(n)]


def test_a_group_that_timed_out_is_retried_with_short_waits(flaky: FlakyStore) -> None:
    flaky.failing = StoreBusy("database busy: lock timeout")
    results = GroupCommit(lambda: flaky).add_rows(rows(3))
    assert all(isinstance(r, StoreBusy) for r in results)
    assert flaky.batches == 1
    # each page tried alone, but never with the full wait again
    assert flaky.waits == [flaky.bounds.short_wait()] * 3


@pytest.mark.parametrize(
    "error",
    [StoreBusy("database is locked", whole_database=True), StoreUnavailable("refused")],
    ids=["sqlite-lock", "outage"],
)
def test_a_group_that_met_a_whole_database_fault_is_not_retried(
    flaky: FlakyStore, error: Exception
) -> None:
    flaky.failing = error
    results = GroupCommit(lambda: flaky).add_rows(rows(3))
    assert results == [error] * 3
    assert flaky.waits == []  # no page tried alone: each would meet the same fault


def filter_on(store: FlakyStore, **config: Any) -> tuple[NearDuplicatePipeline, PageFilter]:
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(
        Config(workers=0, **config), crawler.stats, store_factory=lambda: store
    )
    return NearDuplicatePipeline(page_filter), page_filter


def unchecked(page_filter: PageFilter) -> dict[str, int]:
    stats = page_filter.stats.get_stats()
    prefix = "simhash_filter/unchecked/"
    return {k.removeprefix(prefix): v for k, v in stats.items() if k.startswith(prefix)}


def test_pages_that_passed_unchecked_are_checked_when_the_store_is_back(
    flaky: FlakyStore, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline, page_filter = filter_on(flaky)

    async def crawl() -> None:
        await pipeline.open_spider()
        flaky.failing = StoreUnavailable("database unreachable: connection refused")
        for n in (0, 1):  # both pass unchecked
            item = {"url": f"https://x.example/{n}", "text": TEXTS[n]}
            assert await pipeline.process_item(item) is item
        assert len(page_filter.journal) == 2
        flaky.failing = None
        # the store is back: a copy of page 0 is kept (page 0 is in no index yet) ...
        await pipeline.process_item({"url": "https://x.example/0-copy", "text": TEXTS[0]})
        for _ in range(1000):  # ... and the catch-up runs in the background
            if not len(page_filter.journal) and not page_filter._catching_up:
                break
            await asyncio.sleep(0.01)
        await pipeline.close_spider()

    with caplog.at_level(logging.INFO, logger="simhash_filter"):
        run(crawl())
    assert unchecked(page_filter) == {"journaled": 2, "caught_up": 2, "emitted_duplicates": 1}
    with FingerprintStore.open_existing(flaky.store.display_url) as store:
        assert store.lookup("https://x.example/1") is not None  # in the index after all
        assert store.lookup("https://x.example/0") is None  # ... a copy of a kept page:
        (drop,) = list(store.duplicates())  # logged as the duplicate it is
        assert drop.url == "https://x.example/0"
        assert drop.duplicate_of_url == "https://x.example/0-copy"
    assert "2 pages that passed unchecked were checked once the store was back" in caplog.text


def test_a_short_page_that_passed_unchecked_is_caught_up_as_no_text(flaky: FlakyStore) -> None:
    """A page of too little text is recorded by its exact-content key, as a ``no_text`` page
    is: caught up, it is counted apart from the kept pages (it is in no index of them)."""
    pipeline, page_filter = filter_on(flaky)
    run(pipeline.open_spider())
    flaky.failing = StoreUnavailable("database unreachable: connection refused")
    item = {"url": "https://x.example/short", "html": b"<html><body><p>Two words.</p></body>"}
    assert run(pipeline.process_item(item)) is item
    flaky.failing = None
    run(pipeline.close_spider())  # the journal is checked at the close
    assert unchecked(page_filter) == {"journaled": 1, "caught_up": 1, "caught_up_no_text": 1}
    with FingerprintStore.open_existing(flaky.store.display_url) as store:
        record = store.lookup("https://x.example/short")
        assert record is not None
        assert record.text_length == 0  # its exact-content key, not a fingerprint of text


def test_fail_closed_pages_are_not_journaled(flaky: FlakyStore) -> None:
    pipeline, page_filter = filter_on(flaky, fail_open=False)
    run(pipeline.open_spider())
    flaky.failing = StoreUnavailable("refused")
    with pytest.raises(Exception, match="FAIL_OPEN"):
        run(pipeline.process_item({"url": "https://x.example/0", "text": TEXTS[0]}))
    assert len(page_filter.journal) == 0  # held back: nothing was emitted unchecked
    flaky.failing = None
    run(pipeline.close_spider())
    assert unchecked(page_filter) == {}


def test_the_count_line_comes_within_the_interval_without_another_error() -> None:
    records: list[str] = []
    scheduled: list[tuple[float, Callable[[], None]]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    log = logging.getLogger("test_faults_filter.errors")
    log.addHandler(Collect())
    log.propagate = False
    now = [100.0]
    errors = RepeatedErrors(
        log,
        interval=60,
        clock=lambda: now[0],
        schedule=lambda d, f: scheduled.append((d, f)) or object(),
    )
    now[0] = 130.0
    errors.error("first", StoreBusy("busy"), traceback=False)
    assert records == ["first: StoreBusy: busy (the first error of this kind; the next ones "
                       "are counted, one line per kind)"]  # fmt: skip
    errors.error("again", StoreBusy("busy 2"))
    errors.error("again", StoreBusy("busy 3"))
    assert len(scheduled) == 1  # one timer for the pending count
    delay, fire = scheduled[0]
    assert delay <= 60
    now[0] += delay
    fire()  # no further error came: the timer logs the count
    assert records[1:] == [
        "simhash_filter: 2 more pages could not be checked (StoreBusy: lock timeout; the last: "
        "StoreBusy: busy 3)"
    ]


def test_a_page_that_passed_unchecked_carries_its_fingerprint(flaky: FlakyStore) -> None:
    """Fail-open: the page work made the fingerprint before the store failed; the item that
    passes carries it (SIMHASH_FILTER_FINGERPRINT_FIELD) as a checked one does."""
    pipeline, page_filter = filter_on(flaky, fingerprint_field="fingerprint")

    async def crawl() -> tuple[dict[str, Any], dict[str, Any]]:
        await pipeline.open_spider()
        checked = {"url": "https://x.example/0", "text": TEXTS[0]}
        await pipeline.process_item(checked)
        flaky.failing = StoreUnavailable("database unreachable: connection refused")
        unchecked_item = {"url": "https://x.example/1", "text": TEXTS[1]}
        assert await pipeline.process_item(unchecked_item) is unchecked_item
        flaky.failing = None
        await pipeline.close_spider()
        return checked, unchecked_item

    checked, unchecked_item = run(crawl())
    assert page_filter.stats.get_value("simhash_filter/errors") == 1
    assert len(checked["fingerprint"]) == 16
    assert len(unchecked_item["fingerprint"]) == 16
    assert flaky.store.lookup("https://x.example/1") is not None  # caught up at the close
    assert (
        int(unchecked_item["fingerprint"], 16)
        == flaky.store.lookup("https://x.example/1").fingerprint
    )
