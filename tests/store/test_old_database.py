"""A database written by an earlier tree opens and answers (tests/data/README.md says how
it was made): its pages, its drops, a lookup, and a new copy checked against it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from crawler.articles import ENGLISH_ARTICLES
from simhash_filter import Fingerprinter
from simhash_filter.cli import main
from simhash_filter.store import FingerprintStore
from simhash_filter.store.records import VerdictKind

OLD_DATABASE = Path(__file__).resolve().parents[1] / "data" / "schema4-v0.1.0.db"


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    copy = tmp_path / "old.db"
    shutil.copyfile(OLD_DATABASE, copy)
    return copy


def _text(index: int) -> str:
    article = ENGLISH_ARTICLES[index]
    return article.title + "\n\n" + "\n\n".join(article.paragraphs)


def test_the_old_database_answers_the_command_line(
    old_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(old_db), "dupes", "--json"]) == 0
    drops = {row["url"]: row["duplicate_of"] for row in json.loads(capsys.readouterr().out)}
    assert drops == {
        "https://example.org/print/harbour-bridge.html": (
            "https://example.org/news/harbour-bridge.html"
        ),
        "https://example.org/blog/urban-beekeeping/?utm_source=rss": (
            "https://example.org/news/urban-beekeeping.html"
        ),
    }
    assert main(["--db", str(old_db), "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["pages"] == 8


def test_the_old_database_checks_a_new_copy(old_db: Path) -> None:
    store = FingerprintStore.open_existing(f"sqlite:///{old_db}")
    try:
        record = store.lookup("https://example.org/news/harbour-bridge.html")
        assert record is not None
        fingerprinter = Fingerprinter()
        text = _text(2)
        verdict = store.check_and_add(
            "https://example.org/mirror/volcano.html",
            fingerprinter.fingerprint(text),
            sketch=fingerprinter.sketch(text),
            text_length=len(text),
        )
        assert verdict.kind is VerdictKind.DUPLICATE
        assert verdict.duplicate_of is not None
        assert (
            verdict.duplicate_of.url == f"https://example.org/news/{ENGLISH_ARTICLES[2].slug}.html"
        )
    finally:
        store.close()
