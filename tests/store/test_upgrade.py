"""A schema-4 database opens under schema 5 and is upgraded in place: the new nullable
column added, the schema version raised, every page and band key as it was (no reindex); a
schema-7 database gains schema 8's table; a current one opens without reflecting its tables,
and an unknown or too old one is still refused."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine.reflection import Inspector

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.store import (
    FingerprintStore,
    StoreError,
    StoreOptions,
    VerdictKind,
    passage_index,
)
from simhash_filter.store.schema import SCHEMA_VERSION
from simhash_filter.store.templates import PageShare, TemplateStore
from simhash_filter.store.upgrade import ADDED_COLUMNS

FINGERPRINTER = Fingerprinter()
_RNG = random.Random(5)
TEXTS = {
    f"https://site.example/{n}": " ".join(
        "".join(_RNG.choices("abcdefghijklmnopqrstuvwxyz", k=7)) for _ in range(80)
    )
    for n in range(5)
}


def _as_schema_4(url: str) -> None:
    """Take the database back to schema 4: the columns added since dropped, version 4."""
    engine = create_engine(url)
    with engine.begin() as conn:
        for table, name in ADDED_COLUMNS:
            conn.execute(text(f"ALTER TABLE {table.name} DROP COLUMN {name}"))
        conn.execute(text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))
    engine.dispose()


def _columns_and_version(url: str) -> tuple[set[str], str, list[Any]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("pages")}
        version = conn.execute(
            text("SELECT value FROM meta WHERE key = 'schema_version'")
        ).scalar_one()
        pages = [tuple(r) for r in conn.execute(text("SELECT id, url FROM pages ORDER BY id"))]
    engine.dispose()
    return columns, version, pages


def test_a_schema_4_database_is_upgraded_when_it_opens(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, words in TEXTS.items():
            store.check_and_add(url, FINGERPRINTER.fingerprint(words))  # type: ignore[arg-type]
    _as_schema_4(db_url)
    columns, version, pages = _columns_and_version(db_url)
    assert "dropped_at" not in columns
    assert version == "4"
    with FingerprintStore.open_existing(db_url) as store:  # (the command line's open)
        assert store.stats().schema_version == SCHEMA_VERSION == 8
        assert store.stats().pages == len(TEXTS)
    columns, version, after = _columns_and_version(db_url)
    assert "dropped_at" in columns
    assert (version, after) == (str(SCHEMA_VERSION), pages)
    with FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec)
    ) as store:  # (the crawl's)
        url, words = next(iter(TEXTS.items()))
        verdict = store.check_and_add(url, FINGERPRINTER.fingerprint(words))  # type: ignore[arg-type]
        assert verdict.kind is VerdictKind.UNCHANGED  # its band keys found it as they were


def test_a_schema_7_database_gains_the_pages_template_shares(db_url: str) -> None:
    """Schema 8 adds ``template_pages`` alone: a 7 opens, gains it, and keeps its pages and
    the template it learned."""
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, words in TEXTS.items():
            store.check_and_add(url, FINGERPRINTER.fingerprint(words))  # type: ignore[arg-type]
        TemplateStore(store).learn([("site.example", (1, 2))] * 3)
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE template_pages"))
        conn.execute(text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))
    engine.dispose()
    _, version, pages = _columns_and_version(db_url)
    assert version == "7"
    with FingerprintStore.open_existing(db_url) as store:
        assert store.stats().schema_version == SCHEMA_VERSION == 8
        templates = TemplateStore(store)
        assert templates.has_tables()
        assert templates.template("site.example", 3).blocks == frozenset({1, 2})
        templates.learn([], [PageShare("https://site.example/0", 0.4)])
        assert templates.page_share("https://site.example/0") == PageShare(
            "https://site.example/0", 0.4, False
        )
    _, version, after = _columns_and_version(db_url)
    assert (version, after) == ("8", pages)


def _filled(url: str) -> None:
    with FingerprintStore.open(url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for page, words in TEXTS.items():
            store.check_and_add(page, FINGERPRINTER.fingerprint(words))  # type: ignore[arg-type]


def _no_reflection(monkeypatch: pytest.MonkeyPatch) -> None:
    def reflected(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the open reflected the schema")

    for name in ("get_columns", "has_table", "get_table_names"):
        monkeypatch.setattr(Inspector, name, reflected)


def test_a_current_database_opens_without_reflecting_its_tables(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line's open of a database at this schema version, its passage index
    complete: the meta rows and catalogue look-ups, none of SQLAlchemy's reflection (on
    PostgreSQL most of a ``near --text``)."""
    _filled(db_url)
    _no_reflection(monkeypatch)
    with FingerprintStore.open_existing(db_url) as store:
        assert store.stats().schema_version == SCHEMA_VERSION
        assert store.stats().pages == len(TEXTS)
        assert passage_index.is_complete(store)


def test_an_older_database_still_upgrades_when_the_index_is_complete(db_url: str) -> None:
    """Only the current version skips the upgrade's checks: a 7 with every column and a
    complete passage index still gains schema 8's table and version."""
    _filled(db_url)
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE template_pages"))
        conn.execute(text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))
    with FingerprintStore.open_existing(db_url) as store:
        assert store.stats().schema_version == SCHEMA_VERSION
    with engine.connect() as conn:
        assert inspect(conn).has_table("template_pages")
    engine.dispose()


@pytest.mark.parametrize(
    ("version", "says"),
    [(str(SCHEMA_VERSION + 1), "re-crawl"), ("1", "re-crawl"), ("2", "reindex --index")],
)
def test_an_unknown_or_old_schema_is_still_refused(db_url: str, version: str, says: str) -> None:
    _filled(db_url)
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE meta SET value = '{version}' WHERE key = 'schema_version'"))
    engine.dispose()
    with pytest.raises(StoreError, match=rf"schema version {version};.*{says}"):
        FingerprintStore.open_existing(db_url)
