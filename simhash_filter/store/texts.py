"""Stored page texts (``SIMHASH_FILTER_STORE_TEXT``): their tables made on open, written
beside a batch's verdicts, and read back for the command line and the report.

``page_texts`` holds a kept page's text (replaced when the page changes; an unchanged
re-crawl fills in a missing one), ``drop_texts`` a dropped page's, keyed by its
``duplicates`` row. The bytes are :mod:`simhash_filter.core.stored_text`'s (capped and
compressed); nothing here looks inside them. The tables are additive: a database made
before them gains them when a writer opens it, and a reader treats their absence as
"no stored text".
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Dialect,
    Engine,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    func,
    inspect,
    literal_column,
    select,
)
from sqlalchemy.sql.elements import ColumnElement

from . import passage_index
from .reading import ReadableStore, reading
from .records import StoreError, Verdict, VerdictKind
from .schema import (
    TEXT_TABLES,
    drop_texts_table,
    duplicates_table,
    metadata,
    page_texts_table,
    pages_table,
)
from .side_tables import ensure_schema
from .statements import Compiled, chunked

_IN_CHUNK = 500  # ids or URLs per IN (...) list


def ensure_text_tables(engine: Engine) -> None:
    """Make the text tables where they are missing (a writer's open:
    :func:`~.side_tables.ensure_schema`)."""

    def make(conn: Connection) -> None:
        metadata.create_all(conn, tables=list(TEXT_TABLES), checkfirst=True)
        passage_index.create_index(conn)  # (new texts: an empty index, complete)
        passage_index.mark_complete(conn)

    ensure_schema(engine, has_text_tables, make)


def has_text_tables(conn: Connection) -> bool:
    """Whether the database has the text tables (a database made before them may not)."""
    inspector = inspect(conn)
    return all(inspector.has_table(table.name) for table in TEXT_TABLES)


@functools.lru_cache(maxsize=16)
def _upsert(dialect: Dialect, table: Table, replace: bool) -> Compiled:
    """``INSERT`` of one (key, text) row; a row whose key is there already replaces it
    (``replace``) or is left out. Compiled once per dialect: a group commit writes a few
    texts, and building and compiling the statement each time cost more than running it."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialects: dict[str, Any] = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}
    make_insert = dialects.get(dialect.name)
    if make_insert is None:
        raise StoreError(f"stored texts need SQLite or PostgreSQL, not {dialect.name}")
    (key,) = table.primary_key.columns
    stmt = make_insert(table).values({key.name: bindparam("k"), "text": bindparam("t")})
    if replace:
        stmt = stmt.on_conflict_do_update(index_elements=[key], set_={"text": stmt.excluded.text})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=[key])
    return Compiled(stmt, dialect, ["k", "t"])


@functools.lru_cache(maxsize=8)
def _ids_by_url(dialect: Dialect) -> Compiled:
    """The (id, url) of the pages whose URLs one parameter lists: a ``text[]`` on
    PostgreSQL, a JSON array read by ``json_each`` on SQLite (compiled once a dialect)."""
    p = pages_table.c
    condition: ColumnElement[bool]
    if dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY  # here: SQLite never loads it

        condition = p.url == func.any(cast(bindparam("u"), ARRAY(Text)))
    else:
        listed: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam("u"))
        )
        condition = p.url.in_(listed)
    return Compiled(select(p.id, p.url).where(condition), dialect, ["u"])


def _write(conn: Connection, table: Table, rows: list[tuple[int, bytes]], replace: bool) -> None:
    if rows:
        compiled = _upsert(conn.dialect, table, replace)
        conn.exec_driver_sql(compiled.sql, [compiled.bind(row) for row in rows])


def write_texts(
    conn: Connection,
    verdicts: Sequence[Verdict],
    texts: Sequence[bytes | None],
    now: datetime,
) -> None:
    """Store ``texts[i]`` (None: nothing) with what ``verdicts[i]`` did, in the caller's
    transaction: a NEW or CHANGED page's text replaces its page's, an UNCHANGED page's
    fills in a missing one, a DUPLICATE's goes with the drop logged at ``now`` (drops of
    one URL in one batch are matched to its rows in order)."""
    replace: dict[str, bytes] = {}
    fill: dict[str, bytes] = {}
    dropped: dict[str, list[bytes | None]] = defaultdict(list)
    for verdict, blob in zip(verdicts, texts, strict=True):
        if verdict.kind is VerdictKind.DUPLICATE:
            dropped[verdict.url].append(blob)
        elif blob is None:
            continue
        elif verdict.kind is VerdictKind.UNCHANGED:
            fill.setdefault(verdict.url, blob)
        else:
            replace[verdict.url] = blob
            fill.pop(verdict.url, None)
    d = duplicates_table.c
    if replace or fill:
        urls = sorted(replace.keys() | fill.keys())
        by_url = _ids_by_url(conn.dialect)
        values = urls if conn.dialect.name == "postgresql" else json.dumps(urls)
        ids = {
            url: page_id for page_id, url in conn.exec_driver_sql(by_url.sql, by_url.bind([values]))
        }
        new = [(ids[u], b) for u, b in replace.items() if u in ids]
        filled = [(ids[u], b) for u, b in fill.items() if u in ids]
        if filled:  # (an unchanged page's text fills in a missing one only)
            present = passage_index.stored(conn, [i for i, _ in filled])
            filled = [(i, b) for i, b in filled if i not in present]
        passage_index.index_texts(conn, dict(new + filled))  # (before: it reads the old)
        _write(conn, page_texts_table, new, replace=True)
        _write(conn, page_texts_table, filled, replace=False)
    wanted = sorted(url for url, blobs in dropped.items() if any(b is not None for b in blobs))
    if wanted:
        drop_ids: dict[str, list[int]] = defaultdict(list)
        for chunk in chunked(wanted, _IN_CHUNK):
            stmt = select(d.id, d.url).where(d.url.in_(chunk), d.seen_at == now).order_by(d.id)
            for duplicate_id, url in conn.execute(stmt):
                drop_ids[url].append(duplicate_id)
        drop_rows = [
            (duplicate_id, blob)
            for url in wanted
            for duplicate_id, blob in zip(drop_ids[url], dropped[url], strict=False)
            if blob is not None
        ]
        _write(conn, drop_texts_table, drop_rows, replace=True)


def write_texts_after(
    engine: Engine, verdicts: Sequence[Verdict], texts: Sequence[bytes | None], now: datetime
) -> None:
    """:func:`write_texts` in a transaction of its own, for a write path that committed
    its verdicts already (PostgreSQL's one-round-trip function)."""
    with engine.begin() as conn:
        write_texts(conn, verdicts, texts, now)


# -- reading


def _by_id(store: ReadableStore, table: Any, key: str, ids: Iterable[int]) -> dict[int, bytes]:
    wanted = sorted(set(ids))
    found: dict[int, bytes] = {}
    if not wanted:
        return found
    column = table.c[key]
    with reading(store) as conn:
        if not has_text_tables(conn):
            return found
        for chunk in chunked(wanted, _IN_CHUNK):
            for row_id, blob in conn.execute(select(column, table.c.text).where(column.in_(chunk))):
                found[row_id] = bytes(blob)
    return found


def page_texts(store: ReadableStore, page_ids: Iterable[int]) -> dict[int, bytes]:
    """The stored texts of these kept pages (a page without one is left out)."""
    return _by_id(store, page_texts_table, "page_id", page_ids)


def drop_texts(store: ReadableStore, duplicate_ids: Iterable[int]) -> dict[int, bytes]:
    """The stored texts of these drops (``duplicates`` ids; one without is left out)."""
    return _by_id(store, drop_texts_table, "duplicate_id", duplicate_ids)


def iter_page_texts(store: ReadableStore, *, chunk: int = _IN_CHUNK) -> Iterator[tuple[int, bytes]]:
    """``(page_id, stored text)`` of every page in the index that has one, in id order,
    ``chunk`` rows a statement (a scan: ``near`` reads it to find a part of a page)."""
    p, t = pages_table.c, page_texts_table.c
    last = 0
    while True:
        with reading(store) as conn:
            if not has_text_tables(conn):
                return
            rows = conn.execute(
                select(t.page_id, t.text)
                .select_from(page_texts_table.join(pages_table, p.id == t.page_id))
                .where(t.page_id > last, p.dropped_at.is_(None))
                .order_by(t.page_id)
                .limit(chunk)
            ).all()
        if not rows:
            return
        last = rows[-1][0]
        for page_id, blob in rows:
            yield page_id, bytes(blob)


def has_page_texts(store: ReadableStore) -> bool:
    """Whether any kept page has a stored text."""
    with reading(store) as conn:
        if not has_text_tables(conn):
            return False
        return conn.execute(select(page_texts_table.c.page_id).limit(1)).first() is not None


def text_counts(store: ReadableStore) -> tuple[int, int]:
    """How many kept pages and how many drops have a stored text."""
    with reading(store) as conn:
        if not has_text_tables(conn):
            return 0, 0
        pages = conn.execute(select(func.count()).select_from(page_texts_table)).scalar_one()
        drops = conn.execute(select(func.count()).select_from(drop_texts_table)).scalar_one()
    return int(pages), int(drops)


def domain_text_counts(store: ReadableStore) -> dict[str, int]:
    """Kept pages with a stored text, per domain."""
    p, t = pages_table.c, page_texts_table.c
    with reading(store) as conn:
        if not has_text_tables(conn):
            return {}
        stmt = (
            select(p.domain, func.count())
            .select_from(page_texts_table.join(pages_table, p.id == t.page_id))
            .group_by(p.domain)
        )
        return {domain: int(n) for domain, n in conn.execute(stmt)}
