"""Config.from_settings: every SIMHASH_FILTER_* setting, validated, errors naming the setting."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from scrapy.settings import Settings

from simhash_filter import Fingerprinter, MatchRule
from simhash_filter.crawl.config import Config, SettingsError, UnknownSetting, unknown_settings
from simhash_filter.index.schemes import (
    LSH_CANDIDATE_DISTANCE,
    MINHASH_LSH,
    MULTI_INDEX,
    PERMUTED,
    default_index,
)
from simhash_filter.page.extract import DEFAULT_MAX_BYTES
from simhash_filter.page.pool import default_workers


def test_defaults() -> None:
    config = Config.from_settings(Settings())
    assert config == Config()
    assert config.enabled is True
    assert config.database_url == "sqlite:///dedup.db"
    assert config.max_distance is None
    assert config.min_similarity is None  # the database's own; a new one's: 0.7
    assert config.similarity == MatchRule().min_similarity
    # the minhash-lsh index: no simhash condition, the bands and the sketch decide
    assert config.effective_max_distance == LSH_CANDIDATE_DISTANCE == 64
    assert config.match_rule() == MatchRule.for_distance(64)
    assert config.index is None
    assert config.effective_index == default_index(64, sketches=True) == MINHASH_LSH
    assert (config.scheme().n_blocks, config.scheme().rows) == (18, 8)
    # a simhash index named without k1 keeps the simhash rule's k1
    multi = Config.from_settings(Settings({"SIMHASH_FILTER_INDEX": MULTI_INDEX}))
    assert multi.match_rule() == MatchRule()
    assert config.blocks is None
    assert config.effective_blocks == config.scheme().n_blocks
    assert (config.text_field, config.html_field, config.url_field) == ("text", "html", "url")
    assert config.fingerprint_field is None
    assert config.debug is False
    assert config.fail_open is True
    assert config.middleware is False
    assert config.max_bytes == DEFAULT_MAX_BYTES
    assert config.workers is None
    assert config.effective_workers == default_workers()
    assert config.page_timeout == 30.0
    assert config.store_text is False
    assert (config.lock_timeout, config.outage_retry) == (5.0, 5.0)
    assert config.fingerprinter_options() == {}
    assert config.make_fingerprinter().spec == Fingerprinter().spec


def test_every_setting_is_read() -> None:
    config = Config.from_settings(
        Settings(
            {
                "SIMHASH_FILTER_ENABLED": False,
                "SIMHASH_FILTER_DATABASE_URL": "postgresql+psycopg://db/crawl",
                "SIMHASH_FILTER_MAX_DISTANCE": 3,
                "SIMHASH_FILTER_BLOCKS": 5,
                "SIMHASH_FILTER_TEXT_FIELD": "body_text",
                "SIMHASH_FILTER_HTML_FIELD": "raw",
                "SIMHASH_FILTER_URL_FIELD": "link",
                "SIMHASH_FILTER_MIN_TOKENS": 50,
                "SIMHASH_FILTER_WEIGHTING": "tf",
                "SIMHASH_FILTER_TOP_N": 200,
                "SIMHASH_FILTER_FINGERPRINT_FIELD": "simhash",
                "SIMHASH_FILTER_DEBUG": True,
                "SIMHASH_FILTER_FAIL_OPEN": False,
                "SIMHASH_FILTER_MAX_BYTES": 1000,
                "SIMHASH_FILTER_MIDDLEWARE": True,
                "SIMHASH_FILTER_WORKERS": 3,
                "SIMHASH_FILTER_PAGE_TIMEOUT": 2.5,
                "SIMHASH_FILTER_WORKER_NICENESS": 0,
                "SIMHASH_FILTER_STORE_TEXT": True,
                "SIMHASH_FILTER_LOCK_TIMEOUT": 1.5,
                "SIMHASH_FILTER_OUTAGE_RETRY": "0",
            }
        )
    )
    assert config.effective_workers == 3
    assert config == Config(
        enabled=False,
        database_url="postgresql+psycopg://db/crawl",
        max_distance=3,
        blocks=5,
        text_field="body_text",
        html_field="raw",
        url_field="link",
        min_tokens=50,
        weighting="tf",
        top_n=200,
        fingerprint_field="simhash",
        debug=True,
        fail_open=False,
        max_bytes=1000,
        middleware=True,
        workers=3,
        page_timeout=2.5,
        worker_niceness=0,
        store_text=True,
        lock_timeout=1.5,
        outage_retry=0.0,
    )
    assert config.fingerprinter_options() == {"min_tokens": 50, "weighting": "tf", "top_n": 200}
    fingerprinter = config.make_fingerprinter()
    assert fingerprinter.min_tokens == 50
    assert fingerprinter.spec == Fingerprinter(weighting="tf", top_n=200).spec


def test_command_line_strings_are_parsed() -> None:
    """``-s KEY=VALUE`` gives strings."""
    config = Config.from_settings(
        Settings(
            {
                "SIMHASH_FILTER_ENABLED": "0",
                "SIMHASH_FILTER_MAX_DISTANCE": "5",
                "SIMHASH_FILTER_BLOCKS": "",
                "SIMHASH_FILTER_DEBUG": "true",
                "SIMHASH_FILTER_FINGERPRINT_FIELD": "None",
                "SIMHASH_FILTER_TOP_N": " 64 ",
                "SIMHASH_FILTER_WORKERS": "0",
                "SIMHASH_FILTER_PAGE_TIMEOUT": "90",
            }
        )
    )
    assert config.enabled is False
    assert config.max_distance == 5
    assert config.blocks is None
    assert config.effective_blocks == 18  # the minhash-lsh index's bands, whatever k1
    assert config.debug is True
    assert config.fingerprint_field is None
    assert config.top_n == 64
    assert config.effective_workers == 0  # the thread path
    assert config.page_timeout == 90.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ENABLED", "maybe"),
        ("DEBUG", "yes please"),
        ("FAIL_OPEN", "no way"),
        ("MIDDLEWARE", "sometimes"),
        ("MAX_DISTANCE", "three"),
        ("MAX_DISTANCE", -1),
        ("MAX_DISTANCE", 65),
        ("MAX_DISTANCE", 2.5),
        ("MAX_DISTANCE", True),
        ("BLOCKS", 0),
        ("MIN_SIMILARITY", 1.5),
        ("MIN_SIMILARITY", -0.1),
        ("MIN_SIMILARITY", "most"),
        ("INDEX", "lsh"),
        ("BLOCKS", 257),
        ("BLOCKS", "many"),
        ("MIN_TOKENS", 0),
        ("TOP_N", 0),
        ("WEIGHTING", "bm25"),
        ("WEIGHTING", "tfidf"),  # needs an IDF table, which settings cannot give
        ("WEIGHTING", 3),
        ("MAX_BYTES", 0),
        ("TEXT_FIELD", 7),
        ("DATABASE_URL", ["sqlite://"]),
        ("WORKERS", -1),
        ("WORKERS", "all"),
        ("WORKER_NICENESS", -1),
        ("WORKER_NICENESS", 20),
        ("WORKER_NICENESS", "low"),
        ("PAGE_TIMEOUT", 0),
        ("PAGE_TIMEOUT", "-3"),
        ("PAGE_TIMEOUT", "inf"),
        ("PAGE_TIMEOUT", "nan"),
        ("PAGE_TIMEOUT", "soon"),
        ("PAGE_TIMEOUT", True),
        ("LOCK_TIMEOUT", 0),
        ("LOCK_TIMEOUT", "inf"),
        ("LOCK_TIMEOUT", "nan"),
        ("LOCK_TIMEOUT", "-1"),
        ("OUTAGE_RETRY", -1),
        ("OUTAGE_RETRY", "inf"),
        ("OUTAGE_RETRY", "later"),
    ],
)
def test_bad_values_raise_naming_the_setting(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"SIMHASH_FILTER_{key}"):
        Config.from_settings(Settings({f"SIMHASH_FILTER_{key}": value}))


@pytest.mark.parametrize(("cpus", "workers"), [(1, 0), (2, 2), (6, 6), (16, 6), (96, 6)])
def test_default_workers_follow_the_cpus(cpus: int, workers: int) -> None:
    assert default_workers(cpus) == workers


def test_config_is_frozen() -> None:
    config = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_distance = 5  # type: ignore[misc]


def test_match_rule_and_index_settings() -> None:
    config = Config.from_settings(
        Settings(
            {
                "SIMHASH_FILTER_MAX_DISTANCE": "7",
                "SIMHASH_FILTER_MIN_SIMILARITY": "0.8",
                "SIMHASH_FILTER_INDEX": MULTI_INDEX,
                "SIMHASH_FILTER_BLOCKS": 4,
            }
        )
    )
    assert config.match_rule() == MatchRule(candidate_distance=7, min_similarity=0.8)
    assert config.scheme().kind == MULTI_INDEX
    assert config.effective_blocks == 4
    # the paper's rule: the simhash alone within k (every candidate is confirmed)
    paper = Config.from_settings(
        Settings(
            {
                "SIMHASH_FILTER_MAX_DISTANCE": 3,
                "SIMHASH_FILTER_MIN_SIMILARITY": 0,
                "SIMHASH_FILTER_INDEX": PERMUTED,
            }
        )
    )
    assert paper.match_rule().fallback_distance == 3
    assert paper.effective_index == PERMUTED


def test_blocks_must_fit_the_index_kind() -> None:
    settings = {"SIMHASH_FILTER_MAX_DISTANCE": 4, "SIMHASH_FILTER_INDEX": PERMUTED}
    with pytest.raises(ValueError, match="SIMHASH_FILTER_BLOCKS=4 does not fit"):
        Config.from_settings(Settings({**settings, "SIMHASH_FILTER_BLOCKS": 4}))
    assert Config.from_settings(Settings({**settings, "SIMHASH_FILTER_BLOCKS": 5})).blocks == 5


@pytest.mark.parametrize(
    ("path", "url"),
    [("dedup.db", "sqlite:///dedup.db"), ("/var/crawl/index.db", "sqlite:////var/crawl/index.db")],
)
def test_a_plain_path_is_a_sqlite_file(path: str, url: str) -> None:
    """As the command line's ``--db`` does: a value without ``://`` names a SQLite file."""
    config = Config.from_settings(Settings({"SIMHASH_FILTER_DATABASE_URL": path}))
    assert config.database_url == url


def test_unknown_names_come_with_the_nearest_known_one() -> None:
    settings = Settings(
        {
            "SIMHASH_FILTER_MIN_SIMILARTY": 0.9,
            "SIMHASH_FILTER_DATABASE": "x.db",
            "SIMHASH_FILTER_COMPLETELY_ELSE": 1,
            "SIMHASH_FILTER_MAX_DISTANCE": 3,
            "OTHER_SETTING": 1,
        }
    )
    assert unknown_settings(settings) == [
        UnknownSetting("SIMHASH_FILTER_COMPLETELY_ELSE", None),
        UnknownSetting("SIMHASH_FILTER_DATABASE", "SIMHASH_FILTER_DATABASE_URL"),
        UnknownSetting("SIMHASH_FILTER_MIN_SIMILARTY", "SIMHASH_FILTER_MIN_SIMILARITY"),
    ]
    known = {f"SIMHASH_FILTER_{f.name.upper()}": 1 for f in dataclasses.fields(Config)}
    assert unknown_settings(Settings(known)) == []


def test_a_bad_value_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="SIMHASH_FILTER_MIN_TOKENS must be an integer"):
        Config.from_settings(Settings({"SIMHASH_FILTER_MIN_TOKENS": "lots"}))


def test_an_existing_database_keeps_its_own_similarity_unless_set(tmp_path: Path) -> None:
    """A crawl that does not set MIN_SIMILARITY judges by the database's own threshold (a
    database made at 0.8 is not silently loosened to the default 0.7); one that sets it
    judges by the setting, for that crawl alone."""
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    made = Config.from_settings(
        Settings({"SIMHASH_FILTER_DATABASE_URL": url, "SIMHASH_FILTER_MIN_SIMILARITY": 0.8})
    )
    spec = made.make_fingerprinter().spec
    made.open_store(spec).close()
    plain = Config.from_settings(Settings({"SIMHASH_FILTER_DATABASE_URL": url}))
    assert plain.min_similarity is None
    store = plain.open_store(spec)
    try:
        assert store.rule is not None
        assert store.rule.min_similarity == 0.8
    finally:
        store.close()
    tighter = Config.from_settings(
        Settings({"SIMHASH_FILTER_DATABASE_URL": url, "SIMHASH_FILTER_MIN_SIMILARITY": "0.9"})
    )
    store = tighter.open_store(spec)
    try:
        assert store.rule is not None
        assert store.rule.min_similarity == 0.9
    finally:
        store.close()
    fresh = Config.from_settings(
        Settings({"SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'new.db'}"})
    )
    store = fresh.open_store(spec)
    try:
        assert store.rule is not None
        assert store.rule.min_similarity == 0.7
    finally:
        store.close()
