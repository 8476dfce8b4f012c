"""The store's URL rules: evidence adds up, one counterexample retires, users pin and ban,
skipped requests come back, and schema 5 is an in-place upgrade of schema 4."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from simhash_filter.cli import main
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.records import StoreError
from simhash_filter.store.schema import SCHEMA_VERSION
from simhash_filter.store.url_rules import RuleDelta, SkippedRequest, UrlRuleStore
from simhash_filter.urls.rules import PARAM, RuleState, UrlRule
from simhash_filter.urls.universal import TRACKING

SPEC = "test-spec"
RULE = UrlRule("site.example", PARAM, "/news/?replytocom")


def _open(url: str) -> FingerprintStore:
    return FingerprintStore.open(url, StoreOptions(spec=SPEC))


def test_evidence_adds_up_and_a_counterexample_retires(db_url: str) -> None:
    with _open(db_url) as store:
        rules = UrlRuleStore(store)
        (stored,) = rules.record([RuleDelta(RULE, support=2)])
        assert (stored.state, stored.support) == (RuleState.CANDIDATE, 2)
        assert rules.activate(RULE).state is RuleState.ACTIVE
        (stored,) = rules.record([RuleDelta(RULE, support=1, sampled_checks=3)])
        assert (stored.support, stored.sampled_checks) == (3, 3)
        (stored,) = rules.record([RuleDelta(RULE, counterexamples=1)])
        assert stored.state is RuleState.RETIRED
        assert rules.activate(RULE).state is RuleState.RETIRED  # never back by itself


def test_a_candidate_with_a_counterexample_never_activates(db_url: str) -> None:
    with _open(db_url) as store:
        rules = UrlRuleStore(store)
        rules.record([RuleDelta(RULE, support=5, counterexamples=1)])
        assert rules.activate(RULE).state is RuleState.RETIRED


def test_pinned_and_banned_rules_keep_their_state(db_url: str) -> None:
    with _open(db_url) as store:
        rules = UrlRuleStore(store)
        (stored,) = rules.record([RuleDelta(RULE, support=1)])
        assert rules.set_state(stored.id, RuleState.PINNED).state is RuleState.PINNED
        (stored,) = rules.record([RuleDelta(RULE, counterexamples=1)])
        assert stored.state is RuleState.PINNED
        assert stored.counterexamples == 1
        rules.set_state(stored.id, RuleState.BANNED)
        assert rules.activate(RULE).state is RuleState.BANNED
        with pytest.raises(StoreError, match="no URL rule 999"):
            rules.set_state(999, RuleState.PINNED)


def test_skips_are_counted_and_given_back_once(db_url: str) -> None:
    tracking = UrlRule("site.example", TRACKING, "utm_*")
    with _open(db_url) as store:
        rules = UrlRuleStore(store)
        rules.record([RuleDelta(RULE, support=3)])
        rules.record_skips(
            [
                SkippedRequest(RULE, "http://site.example/news/a?replytocom=1"),
                SkippedRequest(RULE, "http://site.example/news/a?replytocom=1"),
                SkippedRequest(RULE, "http://site.example/news/b?replytocom=2"),
                SkippedRequest(tracking, "http://site.example/news/a?utm_source=x"),
            ]
        )
        by_rule = {stored.rule: stored for stored in rules.rules()}
        assert by_rule[RULE].fetches_saved == 2
        assert by_rule[tracking].state is RuleState.ACTIVE  # universal: skipping from the start
        assert rules.take_skipped(RULE) == [
            "http://site.example/news/a?replytocom=1",
            "http://site.example/news/b?replytocom=2",
        ]
        assert rules.take_skipped(RULE) == []


def test_rules_filter_by_state_and_host(db_url: str) -> None:
    other = UrlRule("other.example", PARAM, "/?ref")
    with _open(db_url) as store:
        rules = UrlRuleStore(store)
        rules.record([RuleDelta(RULE, support=1), RuleDelta(other, support=1)])
        rules.activate(other)
        assert [r.rule for r in rules.rules(states=[RuleState.ACTIVE])] == [other]
        assert [r.rule for r in rules.rules(host="site.example")] == [RULE]


def _as_schema_4(store: FingerprintStore) -> None:
    """Make the database what a schema-4 crawl left: no rule tables, version 4 (3 on
    SQLite, which keeps the tables of 3)."""
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE skipped_requests"))
        conn.execute(text("DROP TABLE rule_witnesses"))
        conn.execute(text("DROP TABLE url_rules"))
        old = "3" if conn.dialect.name == "sqlite" else "4"
        conn.execute(text(f"UPDATE meta SET value = '{old}' WHERE key = 'schema_version'"))


def test_a_schema_4_database_is_upgraded_in_place(db_url: str) -> None:
    with _open(db_url) as store:
        store.check_and_add("http://site.example/a", 0x1234)
        _as_schema_4(store)
    with FingerprintStore.open_existing(db_url) as reader:  # a reader opens it as it is
        assert UrlRuleStore(reader).rules() == []
        assert reader.lookup("http://site.example/a") is not None
    with _open(db_url) as store:  # a writer adds the tables, keeps every page
        with store.engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            version = conn.execute(
                text("SELECT value FROM meta WHERE key = 'schema_version'")
            ).scalar_one()
        assert {"url_rules", "rule_witnesses", "skipped_requests"} <= tables
        assert version == str(SCHEMA_VERSION)
        assert store.lookup("http://site.example/a") is not None
        assert UrlRuleStore(store).record([RuleDelta(RULE, support=1)])[0].support == 1


def test_crawlers_sharing_postgresql_share_rules(pg_url: str) -> None:
    with _open(pg_url) as first, _open(pg_url) as second:
        learner, other = UrlRuleStore(first), UrlRuleStore(second)
        learner.record([RuleDelta(RULE, support=2)])
        other.record([RuleDelta(RULE, support=1)])  # evidence from both adds up
        learner.activate(RULE)
        (seen,) = other.rules(states=[RuleState.ACTIVE])
        assert (seen.rule, seen.support) == (RULE, 3)
        other.record([RuleDelta(RULE, counterexamples=1)])
        assert learner.rules()[0].state is RuleState.RETIRED


def test_the_committed_schema_4_database_is_upgraded_by_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The database an earlier tree wrote (tests/data) gains the rule tables on a writer's
    open, keeps its pages, and its logged drops teach rules (`rules learn`)."""
    old = Path(__file__).resolve().parents[1] / "data" / "schema4-v0.1.0.db"
    copy = tmp_path / "old.db"
    shutil.copyfile(old, copy)
    url = f"sqlite:///{copy}"
    with FingerprintStore.open_existing(url) as reader:
        spec, rule, pages = reader.spec, reader.rule, reader.stats().pages
        assert UrlRuleStore(reader).rules() == []
    with FingerprintStore.open(url, StoreOptions(spec=spec, rule=rule)) as writer:
        assert writer.stats().pages == pages
        assert UrlRuleStore(writer).has_tables()
        with writer.engine.connect() as conn:
            version = conn.execute(
                text("SELECT value FROM meta WHERE key = 'schema_version'")
            ).scalar_one()
        assert version == str(SCHEMA_VERSION)
    assert main(["--db", url, "rules", "learn", "--json"]) == 0
    learned = {(r["kind"], r["pattern"]): r for r in json.loads(capsys.readouterr().out)}
    print_rule = learned[("prefix", "/print/ -> /news/")]
    assert (print_rule["support"], print_rule["state"]) == (1, "candidate")  # one pair: not yet
