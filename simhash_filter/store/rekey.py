"""Every page's table keys made again for a scheme (``reindex``), in the caller's
transaction: SQLite's ``bands`` rows, or PostgreSQL's key columns (key_columns.py; a
database of schema 2 or 3 loses its ``bands`` table here, which converts it).

Pages are read in id order, a chunk at a time; on PostgreSQL the columns' indexes are made
once the columns are filled (one sorted build each instead of a row at a time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection

from simhash_filter.index.schemes import IndexScheme

from . import key_columns as key_columns
from .schema import keys_table, pages_table

CHUNK = 10_000  # pages a read


def rekey(conn: Connection, scheme: IndexScheme) -> None:
    """Replace every page's table keys with ``scheme``'s."""
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        keys_table.drop(conn, checkfirst=True)
        key_columns.drop_columns(conn)
        key_columns.add_columns(conn, scheme.n_tables)
    else:
        conn.execute(delete(keys_table))
    write = _set_columns if postgres else _insert_rows
    p = pages_table.c
    last = None
    while True:
        stmt = (  # (a page out of the index, its URL dropped as a copy, stays out)
            select(p.id, p.fingerprint, p.sketch).where(p.dropped_at.is_(None)).order_by(p.id)
        )
        if last is not None:
            stmt = stmt.where(p.id > last)
        chunk = conn.execute(stmt.limit(CHUNK)).all()
        if not chunk:
            break
        write(conn, scheme, chunk)
        last = chunk[-1][0]
    if postgres:
        key_columns.add_indexes(conn, scheme.n_tables)


def _insert_rows(conn: Connection, scheme: IndexScheme, pages: Sequence[Any]) -> None:
    conn.execute(
        insert(keys_table),
        [
            {"table_no": t, "key": key, "page_id": page_id, "fingerprint": fp}
            for page_id, fp, sketch in pages
            for t, key in scheme.index_items(fp, sketch)
        ],
    )


def _set_columns(conn: Connection, scheme: IndexScheme, pages: Sequence[Any]) -> None:
    keyed = key_columns.pages_with_keys(scheme.n_tables)
    names = key_columns.column_names(scheme.n_tables)
    rows = []
    for page_id, fp, sketch in pages:
        items = scheme.index_items(fp, sketch)
        signed = key_columns.signed_keys_by_table(items, scheme.n_tables)
        rows.append({"page": page_id, **dict(zip(names, signed, strict=True))})
    stmt = update(keyed).where(keyed.c.id == bindparam("page"))
    conn.execute(stmt.values({name: bindparam(name) for name in names}), rows)
