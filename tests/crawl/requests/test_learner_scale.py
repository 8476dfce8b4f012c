"""The learner at scale (issue 45): a bounded backlog whose overflow is counted, evidence
written in batches through the store's writer queue, bounded memory."""

from __future__ import annotations

import random
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler
from sqlalchemy import event

from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.requests import rule_book, rule_learner
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.request_filter import (
    MAX_BACKLOG,
    RULE_STATS,
    RequestFilter,
)
from simhash_filter.crawl.requests.rule_book import RuleBook
from simhash_filter.crawl.requests.rule_index import RuleIndex
from simhash_filter.crawl.requests.rule_learner import RuleLearner
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.url_rules import RuleDelta, SkippedRequest, UrlRuleStore
from simhash_filter.urls.rules import PARAM, PREFIX, RuleState, UrlRule

H = "site.example"


class _Stuck:
    """An executor whose jobs never run (a learner's thread that fell behind)."""

    def __init__(self) -> None:
        self.jobs: list[Future[Any]] = []

    def submit(self, job: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.jobs.append(future)
        return future


class _Learner:
    def observe(self, *args: Any) -> list[object]:
        return []


def test_the_backlog_is_bounded_and_what_overflows_it_is_counted() -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    crawler.stats.open_spider()  # type: ignore[union-attr]
    extension = RequestFilter.from_crawler(crawler)
    thread = _Stuck()
    extension.learner = _Learner()  # type: ignore[assignment]
    extension._thread = thread  # type: ignore[assignment]
    for k in range(MAX_BACKLOG + 7):
        extension._on_result(FilterResult(Outcome.KEPT, f"http://{H}/p/{k}"))
    stats = crawler.stats
    assert stats is not None
    assert len(thread.jobs) == MAX_BACKLOG
    assert stats.get_value(RULE_STATS + "observations_dropped") == 7
    assert stats.get_value(RULE_STATS + "backlog_max") == MAX_BACKLOG
    for future in thread.jobs[:10]:  # the thread catches up: room for ten more
        future.set_result([])
    extension._on_result(FilterResult(Outcome.KEPT, f"http://{H}/p/next"))
    assert extension.backlog == MAX_BACKLOG - 9
    assert stats.get_value(RULE_STATS + "observations_dropped") == 7


class Crawl:
    """A learner on a real store, its evidence written every ``batch`` observations."""

    def __init__(self, path: Path, **learner: Any) -> None:
        self.store = FingerprintStore.open(
            f"sqlite:///{path / 'rules.db'}", StoreOptions(spec="test")
        )
        config = Config(rule_min_support=3, rule_sample=20)
        self.rules = UrlRuleStore(self.store)
        self.learner = RuleLearner(config, RuleBook(config), self.rules, **learner)
        self.learner.load()
        self._fingerprints = random.Random(7)

    def keep(self, url: str) -> list[object]:
        assert self.store.check_and_add(url, self._fingerprints.getrandbits(64)).admitted
        return list(self.learner.observe(Outcome.KEPT, url, None))

    def drop(self, url: str, copy_of: str) -> list[object]:
        return list(self.learner.observe(Outcome.DROPPED, url, copy_of))

    def stored(self) -> set[UrlRule]:
        return {stored.rule for stored in self.rules.rules(host=H)}


def test_evidence_is_written_once_a_batch(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path, batch=4, batch_seconds=3600)
    rule = UrlRule(H, PREFIX, "/print/ -> /")
    crawl.keep(f"http://{H}/news/0")
    crawl.drop(f"http://{H}/print/news/0", f"http://{H}/news/0")
    crawl.keep(f"http://{H}/news/1")
    assert crawl.stored() == set()
    assert crawl.learner.writes == 0
    assert crawl.learner.pending == 3
    crawl.drop(f"http://{H}/print/news/1", f"http://{H}/news/1")  # the fourth: written
    assert rule in crawl.stored()
    assert crawl.learner.writes == 1
    crawl.keep(f"http://{H}/news/2")
    crawl.drop(f"http://{H}/print/news/2", f"http://{H}/news/2")
    assert rule not in crawl.learner.book.ruleset.rules
    crawl.learner.flush()  # the close: what is pending, in one transaction
    assert crawl.learner.writes == 2
    assert rule in crawl.learner.book.ruleset.rules


def test_a_counterexample_to_a_rule_in_force_is_written_at_once(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path, batch=1000, batch_seconds=3600)
    rule = UrlRule(H, PREFIX, "/print/ -> /")
    for k in range(3):
        crawl.keep(f"http://{H}/news/{k}")
        crawl.drop(f"http://{H}/print/news/{k}", f"http://{H}/news/{k}")
    crawl.learner.flush()
    assert rule in crawl.learner.book.ruleset.rules
    crawl.keep(f"http://{H}/news/9")
    retired = crawl.keep(f"http://{H}/print/news/9")  # kept as new: the rule was wrong
    assert [item.rule for item in retired] == [rule]  # type: ignore[attr-defined]
    assert rule not in crawl.learner.book.ruleset.rules


def test_the_skips_and_the_evidence_go_in_one_transaction(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path)
    commits: list[int] = []
    event.listen(crawl.store.engine, "commit", lambda conn: commits.append(1))
    rule = UrlRule(H, PARAM, "/doc/?view")
    crawl.rules.record(
        [RuleDelta(rule, witnesses=("view=a",))], [SkippedRequest(rule, f"http://{H}/doc/1?view=b")]
    )
    assert len(commits) == 1
    assert crawl.rules.take_skipped(rule) == [f"http://{H}/doc/1?view=b"]


class _Queue:
    """The store's writer queue, recording who waits in it."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def __enter__(self) -> None:
        self.log.append("queue")

    def __exit__(self, *exc: object) -> None:
        self.log.append("out")


def test_the_rule_writes_wait_in_the_stores_writer_queue(tmp_path: Path) -> None:
    """On SQLite the page checks queue for the write lock in the store's writer queue; a
    rule write that took SQLite's lock outside it left page checks in the busy wait, where
    they failed (issue 45: 77 pages unchecked in a single-process crawl)."""
    store = FingerprintStore.open(f"sqlite:///{tmp_path / 'rules.db'}", StoreOptions(spec="test"))
    log: list[str] = []
    store.writer_queue = _Queue(log)  # type: ignore[assignment]
    event.listen(store.engine, "begin", lambda conn: log.append("begin"))
    event.listen(store.engine, "commit", lambda conn: log.append("commit"))
    rules = UrlRuleStore(store)
    rule = UrlRule(H, PARAM, "/doc/?view")
    rules.record([RuleDelta(rule, witnesses=("view=a",))])
    rules.record_skips([SkippedRequest(rule, f"http://{H}/doc/1?view=b")])
    rules.take_skipped(rule)
    writes = [part for part in "|".join(log).split("|out") if "commit" in part]
    assert len(writes) == 3
    assert all(part.strip("|").startswith("queue|begin") for part in writes)


def test_candidates_of_a_host_are_bounded(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path, max_candidates=5)
    for k in range(30):  # every article's folder proposes its own ?ref candidates
        crawl.keep(f"http://{H}/a{k}/news.html")
        crawl.drop(f"http://{H}/a{k}/news.html?ref=feed", f"http://{H}/a{k}/news.html")
    assert crawl.learner._index.candidates(H) <= 5
    assert len(crawl.learner._rules) <= 5 + 10  # the candidates and the decided rules
    stored = {s.rule: s for s in crawl.rules.rules(host=H)}
    assert len(stored) > 30  # the store keeps them all; memory only the recent ones
    wide = UrlRule(H, PARAM, "/?ref=feed")  # what every pair supports still adds up
    assert stored[wide].state is RuleState.ACTIVE


def test_the_index_finds_a_pages_rules_by_parameter_and_folder() -> None:
    index = RuleIndex(max_candidates=3)
    near = UrlRule(H, PARAM, "/a/?ref")
    far = UrlRule(H, PARAM, "/b/?ref")
    other = UrlRule(H, PARAM, "/a/?view")
    path = UrlRule(H, PREFIX, "/print/ -> /")
    for rule in (near, far, other, path):
        index.add(rule, candidate=rule.kind == PARAM)
    assert index.applying(H, f"http://{H}/a/x/news.html?ref=feed") == {near, path}
    assert index.applying(H, f"http://{H}/a/x/news.html") == {path}
    assert index.applying(H, f"http://{H}/a/x?%72ef=1") == {near, other, path}
    assert index.add(UrlRule(H, PARAM, "/c/?ref"), candidate=True) == [near]  # the oldest


def test_the_images_remembered_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rule_learner, "MAX_IMAGES", 10)
    crawl = Crawl(tmp_path)
    crawl.keep(f"http://{H}/doc/0")
    crawl.drop(f"http://{H}/doc/0?view=a", f"http://{H}/doc/0")  # candidates for ?view
    for k in range(1, 40):  # kept: what the candidates map them onto is remembered
        crawl.keep(f"http://{H}/doc/{k}?view=v{k}")
    assert len(crawl.learner._images) == 10


def test_the_fingerprints_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rule_book, "MAX_FINGERPRINTS", 8)
    book = RuleBook(Config())
    fingerprinter = RuleFingerprinter(book, RequestFingerprinter())
    for k in range(30):
        fingerprinter.fingerprint(Request(f"http://{H}/p/{k}"))
    assert len(book._given) <= 8
    assert len(book._prints) <= 8
    assert book.form_of(Request(f"http://{H}/p/29")).repeat  # the newest are remembered
    assert not book.form_of(Request(f"http://{H}/p/0")).repeat


def test_a_page_check_meeting_a_rule_write_waits_for_it_and_is_checked(tmp_path: Path) -> None:
    """One process, SQLite, a short lock timeout: a page check arrives while the learner's
    transaction holds the write lock. It waits in the writer queue for the rule write and
    gets its verdict; before, it waited in SQLite's busy wait and failed (StoreBusy: the
    page passed unchecked)."""
    store = FingerprintStore.open(
        f"sqlite:///{tmp_path / 'rules.db'}?timeout=0.3", StoreOptions(spec="test")
    )
    rules = UrlRuleStore(store)
    inside, release = threading.Event(), threading.Event()

    def hold(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO url_rules") and not release.is_set():
            inside.set()
            release.wait(10)  # the rule write holds the lock until the page check is done

    event.listen(store.engine, "before_cursor_execute", hold)
    writer = threading.Thread(
        target=rules.record, args=([RuleDelta(UrlRule(H, PARAM, "/a/?ref"), witnesses=("x",))],)
    )
    writer.start()
    assert inside.wait(10)
    verdicts: list[object] = []
    page = threading.Thread(
        target=lambda: verdicts.append(_checked(store, f"http://{H}/a/news.html"))
    )
    page.start()
    page.join(2)  # past the lock timeout: a check in SQLite's busy wait has failed by now
    release.set()
    page.join(10)
    writer.join(10)
    assert verdicts == [True]
    store.close()


def _checked(store: FingerprintStore, url: str) -> object:
    try:
        return store.check_and_add(url, 12345).admitted
    except Exception as exc:  # StoreBusy: the page would pass unchecked
        return exc


def test_evidence_is_written_when_no_observation_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small or slow crawl learns as it goes: with nothing queued behind it, the learner
    writes without waiting for its batch."""
    monkeypatch.setattr(rule_learner, "IDLE_WRITE_SECONDS", 0.0)
    waiting = [True]
    crawl = Crawl(tmp_path, batch=1000, batch_seconds=3600, idle=lambda: not waiting[0])
    crawl.keep(f"http://{H}/news/0")
    crawl.drop(f"http://{H}/print/news/0", f"http://{H}/news/0")
    assert crawl.learner.writes == 0  # observations queued behind: they go together
    waiting[0] = False
    crawl.keep(f"http://{H}/news/1")
    assert crawl.learner.writes == 1
    assert UrlRule(H, PREFIX, "/print/ -> /") in crawl.stored()
