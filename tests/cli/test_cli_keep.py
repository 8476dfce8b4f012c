"""``dupes``, ``lookup`` and ``report`` show superseded pages (the keep policy, docs/keep.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_corpus import run

from crawler.articles import ENGLISH_ARTICLES
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions

SITE = "https://site.example"
TEXT = "\n\n".join(ENGLISH_ARTICLES[0].paragraphs)


@pytest.fixture
def superseded_db(sqlite_url: str) -> str:
    """A variant kept first, then superseded by its canonical; a second variant dropped."""
    fingerprinter = Fingerprinter()
    with FingerprintStore.open(
        sqlite_url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())
    ) as store:
        canonical = f"{SITE}/story"
        for url, edit in ((f"{SITE}/story?utm_source=rss", ""), (f"{SITE}/amp/story", " AMP.")):
            sig = fingerprinter.sign(TEXT + edit)
            assert sig is not None
            row = PageRow(url, sig.fingerprint, sig.text_length, sig.sketch, pack_text(TEXT + edit))
            store.add_many([row._replace(declared=canonical)])
        sig = fingerprinter.sign(TEXT + " Web.")
        assert sig is not None
        page = PageRow(canonical, sig.fingerprint, sig.text_length, sig.sketch,
                       pack_text(TEXT + " Web."), canonical)  # fmt: skip
        (verdict,) = store.add_many([page])
        assert verdict.duplicate_of is not None
        assert store.supersede(page, verdict.duplicate_of) is not None
    return sqlite_url


def test_dupes_shows_the_superseded_page(
    superseded_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--json", "dupes", "--db", superseded_db)
    assert code == 0
    rows = {row["url"]: row for row in json.loads(out)}
    first = rows[f"{SITE}/story?utm_source=rss"]
    assert first["kind"] == "superseded"
    assert first["duplicate_of"] == f"{SITE}/story"
    assert first["canonical"] == f"{SITE}/story"
    assert "kind" not in rows[f"{SITE}/amp/story"]  # dropped: as before schema 5
    code, table, _ = run(capsys, "dupes", "--db", superseded_db)
    assert "status" in table.splitlines()[0]
    assert sum("superseded" in line for line in table.splitlines()) == 1


def test_lookup_says_superseded_and_kept(
    superseded_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "--json", "lookup", f"{SITE}/story?utm_source=rss", "--db", superseded_db
    )
    assert code == 0
    document = json.loads(out)
    assert document["status"] == "superseded"
    assert document["drops"][0]["duplicate_of"] == f"{SITE}/story"
    code, out, _ = run(capsys, "--json", "lookup", f"{SITE}/story", "--db", superseded_db)
    document = json.loads(out)
    assert document["status"] == "kept"
    assert document["canonical"] == f"{SITE}/story"
    assert {d["url"] for d in document["duplicates"]} == {
        f"{SITE}/story?utm_source=rss",
        f"{SITE}/amp/story",
    }


def test_report_shows_superseded_pages(
    superseded_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "report.html"
    code, _, _ = run(capsys, "report", "--db", superseded_db, "--out", str(out_file))
    assert code == 0
    html = out_file.read_text()
    assert 'id="superseded" data-count="1"' in html
    assert "superseded <span" in html  # the sample of the superseded page says so
    assert "replaced by" in html
