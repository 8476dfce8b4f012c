"""Every command an error message suggests works: each is run as printed (issue 31 item 1).

A crawl's settings that ask a database for another index (``INDEX``, ``MAX_DISTANCE``,
``BLOCKS``) stop the crawl with the ``reindex`` that mends it; a new threshold
(``MIN_SIMILARITY``) needs none: the stored sketches answer it.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from scrapy.settings import Settings
from support.cli_corpus import ARTICLE_A, PAGES, URL_A, run

from simhash_filter import Fingerprinter
from simhash_filter.cli import main
from simhash_filter.core.signature import MatchRule
from simhash_filter.crawl.config import Config
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.records import SchemeMismatchError, StoreError, VerdictKind

FINGERPRINTER = Fingerprinter()
SENTENCES = ARTICLE_A.split(". ")
CLOSE_COPY = ". ".join(SENTENCES[:-1]) + ". The council meets again next month."
"""ARTICLE_A with its last sentence replaced: sketch similarity about 0.79."""


def suggested(message: str) -> list[list[str]]:
    """The ``simhash-filter ...`` commands a message names, as argv lists for main()."""
    found = [shlex.split(command) for command in re.findall(r"`(simhash-filter [^`]+)`", message)]
    assert found, message
    assert all(argv[0] == "simhash-filter" for argv in found)
    return [argv[1:] for argv in found]


def config(url: str, **settings: object) -> Config:
    names = {f"SIMHASH_FILTER_{key.upper()}": value for key, value in settings.items()}
    return Config.from_settings(Settings({"SIMHASH_FILTER_DATABASE_URL": url, **names}))


def admit(store: FingerprintStore, url: str, text: str) -> VerdictKind:
    fingerprint = FINGERPRINTER.fingerprint(text)
    assert fingerprint is not None
    return store.check_and_add(url, fingerprint, sketch=FINGERPRINTER.sketch(text)).kind


def test_a_new_minimum_similarity_needs_no_reindex(sqlite_url: str) -> None:
    with config(sqlite_url).open_store(FINGERPRINTER.spec) as store:  # a default database
        assert admit(store, URL_A, ARTICLE_A) is VerdictKind.NEW
    strict = config(sqlite_url, min_similarity="0.9")
    with strict.open_store(FINGERPRINTER.spec) as store:
        assert store.rule is not None
        assert store.rule.min_similarity == 0.9
        assert store.database_rule == MatchRule.for_distance(64)
        # about 0.79 alike: a copy at 0.7, not at 0.9
        assert admit(store, "https://copy.example/a", CLOSE_COPY) is VerdictKind.NEW
    with config(sqlite_url).open_store(FINGERPRINTER.spec) as store:
        assert admit(store, "https://copy.example/b", CLOSE_COPY) is VerdictKind.DUPLICATE


@pytest.mark.parametrize(
    "settings",
    [
        {"index": "multi-index"},
        {"index": "permuted", "max_distance": "3"},
        {"max_distance": "9"},
        {"blocks": "16"},
        {"index": "multi-index", "blocks": "5", "max_distance": "8"},
    ],
    ids=lambda settings: " ".join(f"{k}={v}" for k, v in settings.items()),
)
def test_the_reindex_a_crawl_is_told_to_run_works(
    sqlite_url: str, settings: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with config(sqlite_url).open_store(FINGERPRINTER.spec) as store:
        admit(store, URL_A, ARTICLE_A)
    wanted = config(sqlite_url, **settings)
    with pytest.raises(SchemeMismatchError) as refused:
        wanted.open_store(FINGERPRINTER.spec)
    for argv in suggested(str(refused.value)):
        code, _, err = run(capsys, *argv)
        assert (code, err) == (0, ""), (argv, err)
    with wanted.open_store(FINGERPRINTER.spec) as store:
        assert store.scheme == wanted.scheme()
        assert store.rule == wanted.match_rule()
        assert store.lookup(URL_A) is not None  # every page kept through the reindex
        assert admit(store, "https://copy.example/a", ARTICLE_A.upper()) is VerdictKind.DUPLICATE


def test_a_database_without_a_rule_is_given_one_by_the_suggested_reindex(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a library caller's database: the simhash distance alone, the paper's k=3 tables
    FingerprintStore.open(sqlite_url, StoreOptions(spec=FINGERPRINTER.spec, max_distance=3)).close()
    crawl = config(sqlite_url)
    with pytest.raises(SchemeMismatchError) as refused:
        crawl.open_store(FINGERPRINTER.spec)
    for argv in suggested(str(refused.value)):
        assert run(capsys, *argv)[0] == 0, capsys.readouterr().err
    with crawl.open_store(FINGERPRINTER.spec) as store:
        # the database keeps its kind (INDEX not named), with that kind's default rule
        assert (store.scheme.kind, store.scheme.max_distance) == ("permuted", 9)
        assert store.rule == MatchRule.for_distance(9)


def test_the_suggested_reindex_of_k_beyond_the_index_works(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    FingerprintStore.open(sqlite_url, StoreOptions(spec=FINGERPRINTER.spec, max_distance=3)).close()
    code, _, err = run(capsys, "near", "0123456789abcdef", "-k", "5", "--db", sqlite_url)
    assert code == 1
    for argv in suggested(err):
        assert run(capsys, *argv)[0] == 0
    assert run(capsys, "near", "0123456789abcdef", "-k", "5", "--db", sqlite_url)[0] == 0


def test_the_suggested_conversion_of_an_older_schema_works(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    FingerprintStore.open(
        sqlite_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ).close()
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as refused:
        FingerprintStore.open_existing(sqlite_url)
    for argv in suggested(str(refused.value)):
        assert main(argv) == 0
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert store.scheme.kind == "minhash-lsh"


def test_reindex_records_a_new_minimum_similarity_without_rewriting_keys(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with config(sqlite_url).open_store(FINGERPRINTER.spec) as store:
        admit(store, URL_A, ARTICLE_A)
    code, out, err = run(capsys, "reindex", "--min-similarity", "0.9", "--db", sqlite_url)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "before  k=64 blocks=18 tables=22 min_similarity=0.7",
        "after   k=64 blocks=18 tables=22 min_similarity=0.9",
    ]
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert store.rule == MatchRule.for_distance(64, 0.9)
        assert admit(store, "https://copy.example/a", CLOSE_COPY) is VerdictKind.NEW
    for bad in ("1.5", "x", "nan"):
        code, out, err = run(capsys, "reindex", "--min-similarity", bad, "--db", sqlite_url)
        assert (code, out) == (2, "")
        assert "argument --min-similarity: " in err


def test_a_lower_threshold_under_the_bands_is_logged_with_its_cost(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    config(sqlite_url).open_store(FINGERPRINTER.spec).close()
    with caplog.at_level("INFO", logger="simhash_filter"):
        config(sqlite_url, min_similarity="0.5").open_store(FINGERPRINTER.spec).close()
    messages = [record.getMessage() for record in caplog.records]
    assert any(
        "minimum similarity 0.5 for this process (the database's own: 0.7)" in m for m in messages
    )
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1
    assert (
        "18 bands of 8 rows find a pair of similarity 0.5 with probability 7% (66% at" in warned[0]
    )


@pytest.mark.parametrize(
    "settings",
    [{"weighting": "sublinear"}, {"top_n": "40"}, {"segmenter": "jieba"}],
    ids=lambda settings: " ".join(f"{k}={v}" for k, v in settings.items()),
)
def test_the_refingerprint_a_crawl_is_told_to_run_works(
    tmp_path: Path,
    settings: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crawl refused for another WEIGHTING, TOP_N or SEGMENTER is told to export the
    stored texts and import them with the options that make its spec (issue 44 item 3):
    both commands run as printed, and the crawl then opens the new database, every page in."""
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    feed = tmp_path / "pages.jsonl"
    feed.write_text(
        "".join(json.dumps({"url": u, "text": t}) + "\n" for u, t in PAGES), encoding="utf-8"
    )
    assert run(capsys, "import", str(feed), "--store-text", "--no-progress", "--db", url)[0] == 0
    wanted = config(url, **settings)
    spec = wanted.make_fingerprinter().spec
    with pytest.raises(SchemeMismatchError) as refused:
        wanted.open_store(spec)
    commands = suggested(str(refused.value))
    assert [argv[0] for argv in commands] == ["export", "import"]
    for argv in commands:
        code, _, err = run(capsys, *argv)
        assert code == 0, (argv, err)
    new_url = f"sqlite:///{tmp_path / 'dedup-refingerprinted.db'}"
    with config(new_url, **settings).open_store(spec) as store:
        assert store.spec == spec
        assert store.stats().pages == 3  # the three articles, kept again under the new spec
        assert store.lookup(URL_A) is not None
