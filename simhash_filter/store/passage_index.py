"""The stored texts' own text index (schema 6): which kept pages hold a passage's terms,
for ``near --text`` on a paragraph without reading every stored text.

A page's entry is the distinct terms of its stored text (core/passage.py: words, CJK
bigrams), written and removed in the transaction that writes or removes the text
(texts.py, supersede.py), so the index holds exactly the stored page texts. SQLite: an
FTS5 table ``page_passages`` without content (the stored text is compressed elsewhere),
``detail=none`` (a group of terms is matched with AND: no positions needed), the ``ascii``
tokenizer (each space-separated term one token, as core/passage.py cut it); an entry is
removed with FTS5's ``delete`` command and its old terms (SQLite 3.40 has no
``contentless_delete``). PostgreSQL: a table ``page_passages`` of ``tsvector`` terms
(``array_to_tsvector``: no parser, no positions) under a GIN index. A database made before
it gains it when it opens (upgrade.py): the table made, then filled from the stored texts
:data:`FILL_CHUNK` texts a write transaction, its progress in the ``meta`` row
``passage_index`` (the last page id filled; ``complete`` at the end), so an interrupted
fill resumes and a crawl writing meanwhile waits one chunk at most.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence

from sqlalchemy import Connection, Engine, select, text
from sqlalchemy.exc import OperationalError

from simhash_filter.core.passage import text_terms
from simhash_filter.core.stored_text import unpack_text

from .engine import WRITE_OPTION, has_table
from .locks import SCHEMA_LOCK
from .reading import ReadableStore, reading
from .schema import meta_table, page_texts_table
from .statements import chunked

log = logging.getLogger(__name__)

TABLE = "page_passages"
STATE_KEY = "passage_index"
COMPLETE = "complete"
FILL_CHUNK = 500
"""Stored texts indexed a write transaction while an older database's index is filled."""
_IN_CHUNK = 500


def has_index(conn: Connection) -> bool:
    """Whether the database has the passage index table."""
    return has_table(conn, TABLE)


def create_index(conn: Connection) -> None:
    """Make the (empty) index table, in the caller's write transaction (none on an SQLite
    built without FTS5: ``near --text`` then reads every stored text, as before schema 6)."""
    if conn.dialect.name == "sqlite":
        try:
            conn.exec_driver_sql(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
                "terms, content='', detail=none, tokenize='ascii')"
            )
        except OperationalError as exc:  # an SQLite built without FTS5: no index
            if "no such module" not in str(exc):
                raise
            log.warning("SQLite without FTS5: near --text will read every stored text")
    else:
        conn.execute(
            text(f"CREATE TABLE IF NOT EXISTS {TABLE} (page_id BIGINT PRIMARY KEY, terms tsvector)")
        )
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS {TABLE}_terms ON {TABLE} USING gin (terms)"))


def _set_state(conn: Connection, value: str) -> None:
    m = meta_table.c
    conn.execute(meta_table.delete().where(m.key == STATE_KEY))
    conn.execute(meta_table.insert().values(key=STATE_KEY, value=value))


def _state(conn: Connection) -> str | None:
    m = meta_table.c
    value = conn.execute(select(m.value).where(m.key == STATE_KEY)).scalar()
    return None if value is None else str(value)


def mark_complete(conn: Connection) -> None:
    """Record a new (empty) index as complete: a new database's, made with its texts."""
    _set_state(conn, COMPLETE)


def _terms(blob: bytes) -> list[str]:
    return text_terms(unpack_text(blob).text)


def _indexed(conn: Connection, page_ids: Collection[int]) -> set[int]:
    """Which of these pages have an entry (SQLite: FTS5's ``docsize`` rows, one a row)."""
    table = f"{TABLE}_docsize" if conn.dialect.name == "sqlite" else TABLE
    key = "id" if conn.dialect.name == "sqlite" else "page_id"
    found: set[int] = set()
    for chunk in chunked(sorted(page_ids), _IN_CHUNK):
        marks = ", ".join(str(int(i)) for i in chunk)
        found.update(
            r[0]
            for r in conn.exec_driver_sql(f"SELECT {key} FROM {table} WHERE {key} IN ({marks})")
        )
    return found


def stored(conn: Connection, page_ids: Collection[int]) -> set[int]:
    """Which of these pages have a stored text."""
    return set(_old_texts(conn, page_ids, blobs=False))


def _old_texts(
    conn: Connection, page_ids: Collection[int], *, blobs: bool = True
) -> dict[int, bytes]:
    t = page_texts_table.c
    found: dict[int, bytes] = {}
    column = t.text if blobs else t.page_id
    for chunk in chunked(sorted(page_ids), _IN_CHUNK):
        for page_id, blob in conn.execute(select(t.page_id, column).where(t.page_id.in_(chunk))):
            found[page_id] = bytes(blob) if blobs else b""
    return found


def _sqlite_delete(conn: Connection, page_ids: Collection[int]) -> None:
    """Remove these pages' entries (before their stored texts change or go: FTS5 removes
    an entry of a table without content by its old terms, read from the stored text)."""
    indexed = _indexed(conn, page_ids)
    if not indexed:
        return
    old = _old_texts(conn, indexed)
    rows = [(i, " ".join(_terms(old[i]))) for i in sorted(indexed) if i in old]
    sql = f"INSERT INTO {TABLE}({TABLE}, rowid, terms) VALUES ('delete', ?, ?)"
    conn.exec_driver_sql(sql, rows)


def index_texts(conn: Connection, new: Mapping[int, bytes]) -> None:
    """Index these pages' new stored texts, replacing their entries, in the transaction
    that writes the texts, before it writes them (SQLite reads the old ones). Nothing
    without the index table (a database the upgrade has not reached)."""
    if not new or not has_index(conn):
        return
    index_terms(conn, {i: _terms(blob) for i, blob in new.items()})


def index_terms(conn: Connection, new: Mapping[int, Sequence[str]]) -> None:
    """:func:`index_texts` with the texts' terms already cut (``core.passage.text_terms``
    of the texts the transaction writes: SQLite removes an entry by the stored text's
    terms), for a caller that cut them elsewhere (a bulk fill's workers)."""
    if not new or not has_index(conn):
        return
    if conn.dialect.name == "sqlite":
        _sqlite_delete(conn, new.keys())
        rows = [(i, " ".join(terms)) for i, terms in sorted(new.items())]
        sql = f"INSERT INTO {TABLE}(rowid, terms) VALUES (?, ?)"
        conn.exec_driver_sql(sql, rows)
        return
    conn.execute(
        text(
            f"INSERT INTO {TABLE} (page_id, terms) "
            "VALUES (:i, array_to_tsvector(CAST(:t AS text[]))) "
            "ON CONFLICT (page_id) DO UPDATE SET terms = excluded.terms"
        ),
        [{"i": i, "t": list(terms)} for i, terms in sorted(new.items())],
    )


def unindex_texts(conn: Connection, page_ids: Collection[int]) -> None:
    """Remove these pages' entries, in the transaction that removes their stored texts,
    before it removes them."""
    if not page_ids or not has_index(conn):
        return
    if conn.dialect.name == "sqlite":
        _sqlite_delete(conn, page_ids)
        return
    marks = ", ".join(str(int(i)) for i in page_ids)
    conn.exec_driver_sql(f"DELETE FROM {TABLE} WHERE page_id IN ({marks})")


# -- the upgrade from schema 5: made and filled


def _fill_chunk(conn: Connection, after: int) -> int | None:
    """Index the stored texts of the next :data:`FILL_CHUNK` pages after ``after`` that
    have no entry yet; the last page id read (None: no more)."""
    t = page_texts_table.c
    rows = conn.execute(
        select(t.page_id, t.text).where(t.page_id > after).order_by(t.page_id).limit(FILL_CHUNK)
    ).all()
    if not rows:
        return None
    indexed = _indexed(conn, [r[0] for r in rows])
    index_texts(conn, {page_id: bytes(blob) for page_id, blob in rows if page_id not in indexed})
    return int(rows[-1][0])


def build_index(engine: Engine) -> None:
    """The upgrade from schema 5 (one step, self-contained): where the database has stored
    texts and no complete passage index, make the index table and fill it from the stored
    texts, a chunk a write transaction, resuming where an earlier fill stopped. Nothing
    (one read) when it is complete or there are no text tables."""
    with engine.connect() as conn:
        with conn.begin():
            if not has_text_table(conn) or (has_index(conn) and _state(conn) == COMPLETE):
                return
        conn.execution_options(**{WRITE_OPTION: True})
        filled = 0
        while True:
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
                create_index(conn)
                state = _state(conn)
                if state == COMPLETE:
                    return
                last = _fill_chunk(conn, int(state or 0))
                _set_state(conn, COMPLETE if last is None else str(last))
            if last is None:
                break
            filled += FILL_CHUNK
            if filled % (FILL_CHUNK * 20) == 0:
                log.info("passage index of %s: filled up to page id %d", engine.url, last)


def has_text_table(conn: Connection) -> bool:
    """Whether the database has a ``page_texts`` table (what the index is made of)."""
    return has_table(conn, page_texts_table.name)


# -- reading


def _match(dialect: str, group: Iterable[str]) -> str:
    """A group of terms as one query: all of them (FTS5's or a tsquery's syntax)."""
    if dialect == "sqlite":
        return " AND ".join('"' + t.replace('"', '""') + '"' for t in group)
    return " & ".join("'" + t.replace("'", "''").replace("\\", "\\\\") + "'" for t in group)


def is_complete(store: ReadableStore) -> bool:
    """Whether the passage index holds every stored page text (else: being filled, or
    not made: a database the upgrade has not reached)."""
    with reading(store) as conn:
        return has_index(conn) and _state(conn) == COMPLETE


def candidates(store: ReadableStore, groups: list[list[str]], limit: int) -> dict[int, int]:
    """The kept pages (in the index: ``dropped_at`` unset) holding every term of a group,
    each with how many of ``groups`` it holds; at most ``limit`` pages a group."""
    found: dict[int, int] = {}
    with reading(store) as conn:
        if store.dialect == "sqlite":
            sql = (
                f"SELECT {TABLE}.rowid FROM {TABLE} JOIN pages p ON p.id = {TABLE}.rowid "
                f"WHERE {TABLE} MATCH :q AND p.dropped_at IS NULL LIMIT :n"
            )
        else:
            sql = (
                f"SELECT x.page_id FROM {TABLE} x JOIN pages p ON p.id = x.page_id "
                "WHERE x.terms @@ CAST(:q AS tsquery) AND p.dropped_at IS NULL LIMIT :n"
            )
        for group in groups:
            query = _match(store.dialect, group)
            for (page_id,) in conn.execute(text(sql), {"q": query, "n": limit}):
                found[page_id] = found.get(page_id, 0) + 1
    return found
