"""The stored texts' passage index (schema 6): written with the stored text on every write
(new, changed, filled in, superseded), answering as the scan of every stored text does,
and made and filled when a schema-5 database opens."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import create_engine, text

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.passage import query_groups, terms, text_terms
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, StoreOptions, VerdictKind, passage_index, texts
from simhash_filter.store.schema import SCHEMA_VERSION

FINGERPRINTER = Fingerprinter()
_RNG = random.Random(44)


def _words(n: int) -> str:
    return " ".join("".join(_RNG.choices("abcdefghijklmnopqrstuvwxyz", k=7)) for _ in range(n))


PAGES = {f"https://site.example/{n}": _words(120) for n in range(6)}
CHINESE = (
    "江边的老仓库将改建为住房、一座公共图书馆和一个有顶棚的农贸市场。工程明年春天开工，"
    "预计持续三年左右。在会上发言的居民欢迎建图书馆，但担心沿河狭窄街道的交通。"
)


def _add(store: FingerprintStore, url: str, body: str) -> VerdictKind:
    return store.check_and_add(
        url,
        FINGERPRINTER.fingerprint(body),  # type: ignore[arg-type]
        text_length=len(body),
        sketch=FINGERPRINTER.sketch(body),
        text=pack_text(body),
    ).kind


def _found(store: FingerprintStore, passage: str) -> set[str]:
    ids = passage_index.candidates(store, query_groups(passage), 100)
    return {u for u, i in _urls(store).items() if i in ids}


def _urls(store: FingerprintStore) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {u: i for i, u in conn.execute(text("SELECT id, url FROM pages"))}


def _entries(url: str) -> set[int]:
    """The page ids the index has an entry for (SQLite: FTS5's docsize rows)."""
    engine = create_engine(url)
    table = "page_passages_docsize" if url.startswith("sqlite") else "page_passages"
    key = "id" if url.startswith("sqlite") else "page_id"
    with engine.connect() as conn:
        found = {r[0] for r in conn.execute(text(f"SELECT {key} FROM {table}"))}
    engine.dispose()
    return found


def _stored_ids(url: str) -> set[int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = {r[0] for r in conn.execute(text("SELECT page_id FROM page_texts"))}
    engine.dispose()
    return found


def test_every_write_keeps_the_index_to_the_stored_texts(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, body in PAGES.items():
            assert _add(store, url, body) is VerdictKind.NEW
        _add(store, "https://site.example/zh", CHINESE)
        first = next(iter(PAGES))
        old = PAGES[first]
        new = _words(120)
        assert _add(store, first, new) is VerdictKind.CHANGED  # its text replaced
        assert _found(store, old[200:500]) == set()  # the old text's entry went with it
        assert _found(store, new[200:500]) == {first}
        assert _found(store, CHINESE[10:60]) == {"https://site.example/zh"}
        for url, body in list(PAGES.items())[1:]:
            assert _found(store, body[300:600]) == {url}
    assert _entries(db_url) == _stored_ids(db_url)


def test_an_unchanged_page_fills_in_its_missing_text_and_entry(db_url: str) -> None:
    url, body = next(iter(PAGES.items()))
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        fingerprint = FINGERPRINTER.fingerprint(body)
        assert fingerprint is not None
        store.check_and_add(url, fingerprint, sketch=FINGERPRINTER.sketch(body))  # no text
        assert _found(store, body[100:400]) == set()
        assert _add(store, url, body) is VerdictKind.UNCHANGED
        assert _found(store, body[100:400]) == {url}
        assert _add(store, url, body) is VerdictKind.UNCHANGED  # (a text there: left as is)
    assert _entries(db_url) == _stored_ids(db_url)


def test_a_rolled_back_write_leaves_neither_text_nor_entry(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        _add(store, "https://site.example/kept", PAGES["https://site.example/1"])
        page_id = _urls(store)["https://site.example/kept"]

        def failing_write() -> None:
            with store.engine.begin() as conn:
                passage_index.index_texts(conn, {page_id: pack_text(CHINESE)})
                conn.execute(text("UPDATE page_texts SET text = :t"), {"t": pack_text(CHINESE)})
                raise RuntimeError("the write failed")

        with pytest.raises(RuntimeError):
            failing_write()
        assert _found(store, CHINESE[10:60]) == set()
    assert _entries(db_url) == _stored_ids(db_url)


def test_terms_cut_by_the_caller_make_the_write_paths_entry(db_url: str) -> None:
    """``index_terms`` (a bulk fill's: terms cut in its workers) leaves the entry
    ``index_texts`` leaves: an entry replaced through it is found as before, by the same
    passages, and the stored texts' entries stay one a text."""
    url, body = "https://site.example/2", PAGES["https://site.example/2"]
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for page_url, page_body in PAGES.items():
            _add(store, page_url, page_body)
        page_id = _urls(store)[url]
        before = {n: _found(store, body[n : n + 300]) for n in (0, 250, 500)}
        with store.engine.begin() as conn:
            passage_index.index_terms(conn, {page_id: text_terms(body)})
        assert {n: _found(store, body[n : n + 300]) for n in (0, 250, 500)} == before
        assert before[250] == {url}
    assert _entries(db_url) == _stored_ids(db_url)


def _as_schema_5(url: str) -> None:
    """Take the database back to schema 5: no passage index, no state row, version 5."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE page_passages"))
        conn.execute(text("DELETE FROM meta WHERE key = 'passage_index'"))
        conn.execute(text("UPDATE meta SET value = '5' WHERE key = 'schema_version'"))
    engine.dispose()


def test_a_schema_5_database_gets_its_index_when_it_opens(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, body in PAGES.items():
            _add(store, url, body)
        _add(store, "https://site.example/zh", CHINESE)
    _as_schema_5(db_url)
    monkeypatch.setattr(passage_index, "FILL_CHUNK", 2)  # several chunks, resumed each
    with FingerprintStore.open_existing(db_url) as store:  # (the command line's open)
        assert store.stats().schema_version == SCHEMA_VERSION == 8
        assert passage_index.is_complete(store)
        assert _found(store, CHINESE[5:70]) == {"https://site.example/zh"}
        for url, body in PAGES.items():
            assert _found(store, body[250:500]) == {url}
    assert _entries(db_url) == _stored_ids(db_url)


def test_an_interrupted_fill_resumes(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, body in PAGES.items():
            _add(store, url, body)
    _as_schema_5(db_url)
    monkeypatch.setattr(passage_index, "FILL_CHUNK", 2)
    calls = 0
    fill_chunk = passage_index._fill_chunk

    def failing(conn: object, after: int) -> int | None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("killed")
        return fill_chunk(conn, after)  # type: ignore[arg-type]

    monkeypatch.setattr(passage_index, "_fill_chunk", failing)
    with pytest.raises(RuntimeError):
        FingerprintStore.open_existing(db_url).close()
    assert len(_entries(db_url)) == 2  # the first chunk's, committed
    monkeypatch.setattr(passage_index, "_fill_chunk", fill_chunk)
    with FingerprintStore.open_existing(db_url) as store:
        assert passage_index.is_complete(store)
        assert texts.has_page_texts(store)
    assert _entries(db_url) == _stored_ids(db_url)


def test_terms_of_a_passage_are_terms_of_its_text() -> None:
    body = PAGES["https://site.example/2"] + " " + CHINESE
    whole = set(terms(body))
    for start in range(0, len(body) - 40, 37):  # cut anywhere, mid-word too
        for group in query_groups(body[start : start + 40]):
            assert set(group) <= whole


def test_an_sqlite_without_fts5_opens_and_reads_every_text(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import Connection
    from sqlalchemy.exc import OperationalError

    run = Connection.exec_driver_sql

    def without_fts5(self: Connection, statement: str, *args: object) -> object:
        if "USING fts5" in statement:
            raise OperationalError(statement, None, Exception("no such module: fts5"))
        return run(self, statement, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Connection, "exec_driver_sql", without_fts5)
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        for url, body in PAGES.items():
            _add(store, url, body)
        assert not passage_index.is_complete(store)  # (near: the scan)
        assert texts.has_page_texts(store)
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert not passage_index.is_complete(store)
