"""Hostile pages cost bounded, linear work (issue 19): the caps apply before each step that
is super-linear, the thread path keeps the event loop ticking, workers die with their crawl
and enforce their own page budget, deeply nested pages are fingerprinted, repeated errors
are summarized. Conditions, not timings: the speed of each page kind is in
``bench/bench_hostile.py``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sqlite3
import unicodedata
from collections.abc import Iterable
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler
from support.helpers import run
from support.hostile import SPIN, SpinningFingerprinter
from support.processes import gone, killed_script, wait_until

import simhash_filter.core.text as text_module
import simhash_filter.page.extract as extract_module
from crawler.testsite.hostile import KINDS, hostile_page
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.text import (
    MAX_HAN_RUN,
    MAX_NON_STARTERS,
    Tokenizer,
    cap_non_starters,
    fold,
)
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.error_log import RepeatedErrors, error_kind
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.pipeline import FilterUnavailable, NearDuplicatePipeline
from simhash_filter.page.extract import MAX_ELEMENTS, MAX_VISIBLE_CHARS, extract_page
from simhash_filter.page.pool import PageJob, _Worker
from simhash_filter.page.work import work_page
from simhash_filter.page.worker import Setup
from simhash_filter.store.records import PageRow, StoreError, Verdict

MAX_BYTES = 2 * 1024 * 1024
FP = Fingerprinter()
WORDS = "the harbour bridge opened in march after nine years of work on its steel arch "
MARKS = "\u0301\u0316\u0334\u0345\u05b0\u0323\u0300\u0327"


def _longest_mark_run(text: str) -> int:
    longest = run_length = 0
    for ch in text:
        run_length = run_length + 1 if unicodedata.combining(ch) else 0
        longest = max(longest, run_length)
    return longest


# -- 1. caps before each super-linear step ---------------------------------------------------


def test_nfkc_never_sees_a_long_run_of_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = unicodedata.normalize

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(unicodedata, name)

        @staticmethod
        def normalize(form: Any, text: str) -> str:
            seen.append(_longest_mark_run(text))
            return real(form, text)

    monkeypatch.setattr(text_module, "unicodedata", Recording())
    hostile = "a" + MARKS * 5_000 + " " + WORDS * 3
    assert FP.sign(hostile, page_text=hostile) is not None
    assert seen
    assert max(seen) <= MAX_NON_STARTERS


def test_the_mark_cap_leaves_real_text_alone() -> None:
    texts = [
        "Tiếng Việt có nhiều dấu: người, được, những",  # stacked Vietnamese marks
        "हिन्दी में मात्राएँ और अनुस्वार",
        "العَرَبِيَّةُ بِالتَّشْكِيلِ",
        "a\u0301\u0316\u0334",
        WORDS,
    ]
    for text in texts:
        assert cap_non_starters(text) == text
        assert fold(text) == unicodedata.normalize("NFKC", text).casefold()
    assert len(cap_non_starters("a" + "\u0301" * 100)) == 1 + MAX_NON_STARTERS


def test_jieba_sees_han_runs_of_bounded_length(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces: list[int] = []
    real = text_module.segment_function

    def recording(name: str, dictionary: str | None, hmm: bool) -> Any:
        segment = real(name, dictionary, hmm)

        def inner(runs: str) -> list[str]:
            # a page's Han runs come in one call, a line feed between them, and the
            # segmenter segments each alone (tests/core/test_signature_identity.py)
            pieces.extend(len(run) for run in runs.split("\n"))
            return segment(runs)

        return inner

    monkeypatch.setattr(text_module, "segment_function", recording)
    tokens = Tokenizer().tokenize("丂" * (2 * MAX_HAN_RUN + 10) + "。北京大学的学生")
    assert tokens
    assert max(pieces) == MAX_HAN_RUN
    assert len(pieces) == 4
    pieces.clear()
    short = "北京大学的学生在图书馆里读书" * 10
    assert Tokenizer().tokenize(short) == list(text_module.jieba_tokenizer().lcut(short))
    assert pieces == [len(short)]


def test_trafilatura_gets_at_most_max_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = extract_module._main_text

    def recording(tree: Any, url: str | None) -> str | None:
        sizes.append(sum(1 for _ in tree.iter()))
        return real(tree, url)

    monkeypatch.setattr(extract_module, "_main_text", recording)
    page = hostile_page("headings", 1_000_000)
    result = extract_page(page)
    assert sizes == [MAX_ELEMENTS]
    assert result.capped == ("elements",)
    assert result.text
    assert result.text.startswith("head")
    small = hostile_page("headings", 10_000)
    assert extract_page(small).capped == ()


def test_the_element_cap_keeps_the_first_part_of_the_page_in_order() -> None:
    page = "<html><body><article>" + "".join(
        f"<p>paragraph {n} {WORDS}</p>" for n in range(MAX_ELEMENTS + 500)
    )
    tree = extract_module.parse_bounded(page.encode())
    assert sum(1 for _ in tree.iter()) == MAX_ELEMENTS
    texts = [p.text for p in tree.iter("p")]
    assert texts == [f"paragraph {n} {WORDS}" for n in range(len(texts))]


def test_the_visible_text_is_capped() -> None:
    page = ("<html><body><div>" + WORDS * 10_000 + "</div></body></html>").encode()
    visible = extract_page(page).visible
    assert visible is not None
    assert len(visible) <= MAX_VISIBLE_CHARS


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_hostile_kind_is_worked_through(kind: str) -> None:
    for size in (10_000, 100_000):
        work = work_page(
            FP, "https://h.example/", None, hostile_page(kind, size), max_bytes=MAX_BYTES
        )
        assert set(work.capped) <= {"bytes", "elements", "deep", "too_deep", "marks", "han"}
    big = work_page(
        FP, "https://h.example/", None, hostile_page(kind, 3 * MAX_BYTES), max_bytes=MAX_BYTES
    )
    assert "bytes" in big.capped


# -- 4. deeply nested pages ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [254, 300, 1500])
def test_a_deeply_nested_page_is_fingerprinted(depth: int) -> None:
    article = "<p>" + WORDS * 20 + "</p>"
    page = "<html><body>" + "<div>" * depth + article + "</div>" * depth + "</body></html>"
    flat = "<html><body><div>" + article + "</div></body></html>"
    work = work_page(FP, "https://h.example/deep", None, page, max_bytes=MAX_BYTES)
    assert work.signature is not None
    assert work.capped == ("deep",)
    same = work_page(FP, "https://h.example/flat", None, flat, max_bytes=MAX_BYTES).signature
    assert same is not None
    assert work.signature.fingerprint == same.fingerprint


def test_a_page_too_deep_for_any_parser_is_a_named_outcome(sqlite_url: str) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    pipeline = NearDuplicatePipeline(
        PageFilter(Config(database_url=sqlite_url, workers=0), crawler.stats)
    )
    run(pipeline.open_spider())
    try:
        page = "<html><body>" + "<div>" * 3000 + "<p>" + WORDS * 20 + "</p></body></html>"
        run(pipeline.process_item({"url": "https://h.example/too-deep", "html": page}))
        deep = "<html><body>" + "<div>" * 400 + "<p>" + WORDS * 20 + "</p></body></html>"
        run(pipeline.process_item({"url": "https://h.example/deep", "html": deep}))
    finally:
        run(pipeline.close_spider())
    values = crawler.stats.get_stats()
    assert values.get("simhash_filter/too_deep") == 1
    assert values.get("simhash_filter/kept") == 1
    assert values.get("simhash_filter/capped/deep") == 1
    assert values.get("simhash_filter/capped/too_deep") == 1
    assert "simhash_filter/no_text" not in values


# -- 2. the thread path keeps the event loop ticking ----------------------------------------


@pytest.mark.parametrize("kind", ["headings", "marks-nav-han-article", "han-unjoinable", "deep"])
def test_the_thread_path_keeps_the_loop_ticking(kind: str, sqlite_url: str) -> None:
    """The event loop's heartbeat (a task ticking every 10 ms, like the crawl's LogStats
    LoopingCall) ticks while the thread path works on a hostile page at the byte cap: no
    step of the page work holds the GIL for the whole page."""
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(Config(database_url=sqlite_url, workers=0), crawler.stats)
    ticks = 0
    during: list[int] = []
    real_sign = page_filter.sign

    def sign(url: str, text: object, html: object, template: Any = None) -> Any:
        before = ticks
        work = real_sign(url, text, html, template)
        during.append(ticks - before)
        return work

    page_filter.sign = sign  # type: ignore[method-assign]

    async def main() -> None:
        nonlocal ticks

        async def heartbeat() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.ensure_future(heartbeat())
        try:
            await page_filter.check("https://h.example/", None, hostile_page(kind, MAX_BYTES))
        finally:
            beat.cancel()

    page_filter.open()
    try:
        run(main())
    finally:
        page_filter.close()
    assert len(during) == 1
    assert during[0] >= 2


# -- 3. workers die with their crawl and keep their own budget -------------------------------


def test_a_busy_worker_ends_when_its_crawl_is_sigkilled(tmp_path: Path) -> None:
    """The worker spins in C code holding the GIL (it never reads its socket again); the
    crawl process is SIGKILLed; the kernel ends the worker (its lifeline pipe closed)."""
    source = f"""
        import sys, time
        sys.path[:0] = {[str(Path(__file__).parents[1]), str(Path(__file__).parents[2])]!r}
        from simhash_filter.page.pool import PageJob, PagePool
        from support.hostile import SPIN, SpinningFingerprinter

        pool = PagePool(1, SpinningFingerprinter(), max_bytes=1000, page_timeout=600)
        pool.start()
        pool.submit(PageJob("https://h.example/spin", SPIN, None))
        while pool.in_work == 0:
            time.sleep(0.01)
        print(*pool.pids, flush=True)
        sys.stdin.read()  # until killed
        """
    with killed_script(tmp_path / "crawl.py", source) as (_, pids):
        (pid,) = pids
        assert not gone(pid)
    wait_until(lambda: gone(pid), "the busy worker ended with its crawl")


def test_a_worker_ends_itself_past_its_page_budget() -> None:
    """No crawler timer involved: the worker's own RLIMIT_CPU ends it (SIGXCPU)."""
    worker = _Worker.start(Setup(SpinningFingerprinter(), 1000, 1.0, 0))
    try:
        worker.conn.send(PageJob("https://h.example/spin", SPIN, None))
        assert wait([worker.conn], timeout=300)  # end-of-file: the worker is gone
        assert worker.process.wait(timeout=60) == -signal.SIGXCPU
    finally:
        worker.kill()


# -- 5. repeated errors are summarized -------------------------------------------------------


class FullDisk:
    """A store on a full disk: every write fails as SQLite's does."""

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]:
        (url, *_), *more = list(rows)
        if more:
            raise StoreError("database or disk is full")
        try:  # one page: as SQLite's error reaches the store
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"could not store {url}: database or disk is full") from exc

    def close(self) -> None:
        pass


@pytest.mark.parametrize("fail_open", [True, False])
def test_a_full_disk_logs_little(fail_open: bool, caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    pipeline = NearDuplicatePipeline(
        PageFilter(Config(workers=0, fail_open=fail_open), crawler.stats, store_factory=FullDisk)
    )
    texts = [f"page {n} " + WORDS * 3 for n in range(1000)]
    with caplog.at_level(logging.INFO):
        run(pipeline.open_spider())

        async def crawl() -> None:
            for n, text in enumerate(texts):
                with contextlib.suppress(FilterUnavailable):  # fail-closed
                    await pipeline.process_item({"url": f"https://h.example/{n}", "text": text})

        run(crawl())
        run(pipeline.close_spider())
    assert crawler.stats.get_value("simhash_filter/errors") == 1000
    formatter = logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s")
    logged = [formatter.format(r) for r in caplog.records if r.levelno >= logging.INFO]
    assert sum(len(line) for line in logged) < 100_000
    assert sum("Traceback" in line for line in logged) == 1
    assert any("999 more pages could not be checked" in line for line in logged)


def test_repeated_errors_one_line_per_kind_per_interval() -> None:
    now = [0.0]
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    log = logging.getLogger("test_hostile.errors")
    log.addHandler(Collect())
    log.propagate = False
    errors = RepeatedErrors(log, interval=60, clock=lambda: now[0])
    assert errors.error("first", ValueError("a"))
    assert errors.error("other kind", KeyError("b"))
    for _ in range(5):
        assert not errors.error("again", ValueError("c"))
    assert len(records) == 2
    now[0] = 61.0
    errors.error("again", ValueError("d"))
    assert records[2:] == [
        "simhash_filter: 6 more pages could not be checked (ValueError; the last: ValueError: d)"
    ]
    errors.flush()
    assert len(records) == 3
    chained = StoreError("x")
    chained.__cause__ = OSError("disk")
    assert error_kind(chained) == "StoreError < OSError"
