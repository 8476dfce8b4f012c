"""``simhash-filter rules``: list, learn from logged drops, pin, ban and reset."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from simhash_filter.cli import main
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.url_rules import RuleDelta, UrlRuleStore
from simhash_filter.urls.rules import PARAM, PREFIX, UrlRule

H = "site.example"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Pages kept and dropped as a crawl before URL rules would have left them: print
    views dropped as copies of their articles, and `?p=` pages that are different pages."""
    url = f"sqlite:///{tmp_path / 'rules.db'}"
    rng = random.Random(3)
    with FingerprintStore.open(url, StoreOptions(spec="test")) as store:
        for k in range(4):
            fingerprint = rng.getrandbits(64)
            assert store.check_and_add(f"http://{H}/news/{k}", fingerprint).admitted
            dropped = store.check_and_add(f"http://{H}/print/news/{k}", fingerprint)
            assert not dropped.admitted
        home = rng.getrandbits(64)
        store.check_and_add(f"http://{H}/", home)
        for k in (1, 2):
            store.check_and_add(f"http://{H}/?p={k}", rng.getrandbits(64))
        for k in (900, 901, 902):  # unknown ids show the home page
            store.check_and_add(f"http://{H}/?p={k}", home)
    return url


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main(["--db", argv[0], *argv[1:], "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_learn_activates_what_the_history_supports_and_nothing_it_contradicts(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    learned = _json(capsys, db, "rules", "learn")
    by_pattern = {row["pattern"]: row for row in learned}  # type: ignore[union-attr]
    assert by_pattern["/print/ -> /"]["state"] == "active"
    assert by_pattern["/print/ -> /"]["support"] == 4
    assert by_pattern["/?p"]["state"] == "retired"  # ?p=1 and ?p=2 are different pages
    assert by_pattern["/?p"]["counterexamples"] >= 1
    assert _json(capsys, db, "rules", "learn") == []  # nothing new the second time


def test_list_pin_ban_and_reset(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with FingerprintStore.open_existing(db) as store:
        rules = UrlRuleStore(store)
        rules.record([RuleDelta(UrlRule(H, PREFIX, "/amp/ -> /"), support=1)])
        rules.record([RuleDelta(UrlRule("other.example", PARAM, "/?ref"), support=2)])
    assert main(["--db", db, "rules"]) == 0
    table = capsys.readouterr().out
    assert "/amp/ -> /" in table
    assert "candidate" in table
    rows = _json(capsys, db, "rules", "--host", H)
    assert [row["pattern"] for row in rows] == ["/amp/ -> /"]  # type: ignore[union-attr,index]
    rule_id = str(rows[0]["id"])  # type: ignore[index]
    assert _json(capsys, db, "rules", "pin", rule_id)[0]["state"] == "pinned"  # type: ignore[index]
    assert _json(capsys, db, "rules", "ban", rule_id)[0]["state"] == "banned"  # type: ignore[index]
    assert [r["state"] for r in _json(capsys, db, "rules", "--state", "banned")] == ["banned"]  # type: ignore[union-attr,index]
    assert _json(capsys, db, "rules", "reset", rule_id)[0]["state"] == "candidate"  # type: ignore[index]


def test_errors_and_usage(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", db, "rules", "pin", "999"]) == 1
    assert "no URL rule 999" in capsys.readouterr().err
    assert main(["--db", db, "rules", "pin"]) == 2
    assert main(["--db", db, "rules", "list", "3"]) == 2
    assert main(["--db", db, "rules", "forget", "3"]) == 2


def test_a_database_made_before_url_rules_has_none(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with FingerprintStore.open_existing(db) as store, store.engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("DROP TABLE skipped_requests"))
        conn.execute(text("DROP TABLE rule_witnesses"))
        conn.execute(text("DROP TABLE url_rules"))
    assert main(["--db", db, "rules"]) == 0
    assert "no URL rules" in capsys.readouterr().err
