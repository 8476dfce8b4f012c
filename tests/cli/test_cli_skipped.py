"""A URL the crawl skipped before download can be looked up (issue 44 item 2): ``lookup``,
``show`` and ``diff`` say it was skipped, by which rule, and the kept page it maps to;
``rules show ID`` lists what a rule skipped. A URL without a scheme is looked up as
https:// and http:// (item 6)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from support.cli_corpus import run

from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.url_rules import RuleDelta, SkippedRequest, UrlRuleStore
from simhash_filter.urls.rules import PARAM, PREFIX, RuleState, UrlRule

H = "site.example"
KEPT = f"https://{H}/news/a"
COPY = f"https://{H}/news/b"  # dropped as a copy of KEPT
TRACKED = f"https://{H}/news/a?fbclid=IwAR0xyz"
PRINTED = f"https://{H}/print/news/b"
PRINT_RULE = UrlRule(H, PREFIX, "/print/ -> /")


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'skips.db'}"
    rng = random.Random(5)
    with FingerprintStore.open(url, StoreOptions(spec="test")) as store:
        fingerprint = rng.getrandbits(64)
        assert store.check_and_add(KEPT, fingerprint).admitted
        assert not store.check_and_add(COPY, fingerprint).admitted
        rules = UrlRuleStore(store)
        rules.record_skips(
            [
                SkippedRequest(UrlRule(H, "tracking", "fbclid"), TRACKED),
                SkippedRequest(PRINT_RULE, PRINTED),
            ]
        )
        rules.activate(PRINT_RULE)
    return url


def test_lookup_of_a_skipped_url_names_its_rule_and_the_kept_page(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "lookup", TRACKED, "--db", db)
    assert code == 0
    assert "skipped before download" in out
    assert "universal tracking parameter 'fbclid'" in out
    assert f"maps to     {KEPT}" in out
    code, out, _ = run(capsys, "--json", "lookup", PRINTED, "--db", db)
    document = json.loads(out)
    assert (code, document["status"], document["reason"]) == (0, "skipped", "rule")
    assert document["maps_to"] == COPY  # the form, itself dropped as a copy of KEPT
    assert document["kept_url"] == KEPT
    assert [r["pattern"] for r in document["rules"]] == ["/print/ -> /"]


def test_lookup_of_an_unknown_url_exits_1_and_says_where_rules_map_it(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--json", "lookup", f"{KEPT}?utm_source=rss", "--db", db)
    assert code == 1
    document = json.loads(out)
    assert document["status"] == "unknown"
    assert (document["maps_to"], document["kept_url"]) == (KEPT, KEPT)
    code, out, _ = run(capsys, "lookup", "https://nowhere.example/", "--db", db)
    assert code == 1
    assert "unknown (neither kept, dropped nor skipped)" in out


def test_lookup_of_a_url_without_a_scheme(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lookup", f"{H}/news/a", "--db", db)
    assert code == 0
    assert out.startswith("status ")
    assert "kept" in out.splitlines()[0]
    assert f"looked up as {KEPT}" in err
    code, out, _ = run(capsys, "lookup", "nowhere.example/x", "--db", db)
    assert code == 1
    assert "looked up as https://nowhere.example/x and http://nowhere.example/x" in out


@pytest.mark.parametrize("command", [["show", TRACKED], ["diff", TRACKED, KEPT]])
def test_show_and_diff_of_a_skipped_url_say_it_was_skipped(
    db: str, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    code, _, err = run(capsys, *command, "--db", db)
    assert code == 1
    assert f"{TRACKED} was skipped before download" in err
    assert f"it maps to {KEPT} (kept)" in err


def test_rules_show_lists_what_a_rule_skipped(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--json", "rules", "--host", H, "--db", db)
    by_pattern = {row["pattern"]: row["id"] for row in json.loads(out)}
    code, out, _ = run(capsys, "rules", "show", str(by_pattern["/print/ -> /"]), "--db", db)
    assert code == 0
    assert "URLs it skipped (newest 1 of 1 fetches saved)" in out
    (row,) = [line for line in out.splitlines() if PRINTED in line]
    assert row.split()[-2:] == [COPY, KEPT]
    code, _, err = run(capsys, "rules", "show", "999", "--db", db)
    assert code == 1
    assert "no URL rule 999" in err


def test_the_report_shows_the_request_side(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44 item 9: fetches saved by reason, the rules skipping now with their support
    and examples, the rules retired and why."""
    retired = UrlRule(H, PARAM, "/?p")
    with FingerprintStore.open_existing(db) as store:
        rules = UrlRuleStore(store)
        rules.record([RuleDelta(PRINT_RULE, support=4, sampled_checks=2)])
        rules.record([RuleDelta(retired, support=1, counterexamples=2)])
        rules.set_state(_id(rules, retired), RuleState.RETIRED)
    report = tmp_path / "report.html"
    assert run(capsys, "report", "--out", str(report), "--db", db)[0] == 0
    html = report.read_text(encoding="utf-8")
    counts = dict(re.findall(r'id="([a-z-]+)" data-count="(\d+)"', html))
    assert counts["fetches-saved"] == "2"
    assert (counts["saved-tracking"], counts["saved-session"], counts["saved-rule"]) == (
        "1",
        "0",
        "1",
    )
    assert counts["sampled"] == "2"
    active = re.search(r'<table id="rules-active">.*?</table>', html, re.S)
    assert active is not None
    assert "/print/ -&gt; /" in active.group()
    assert PRINTED in active.group()
    assert TRACKED.replace("&", "&amp;") in active.group()
    stopped = re.search(r'<table id="rules-retired">.*?</table>', html, re.S)
    assert stopped is not None
    assert "/?p" in stopped.group()
    assert "2 counterexamples" in stopped.group()


def test_the_report_of_a_crawl_without_rules_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    with FingerprintStore.open(url, StoreOptions(spec="test")) as store:
        store.check_and_add(KEPT, 1)
    report = tmp_path / "report.html"
    assert run(capsys, "report", "--out", str(report), "--db", url)[0] == 0
    assert 'id="requests-none"' in report.read_text(encoding="utf-8")


def _id(rules: UrlRuleStore, rule: UrlRule) -> int:
    (found,) = [stored.id for stored in rules.rules() if stored.rule == rule]
    return found
