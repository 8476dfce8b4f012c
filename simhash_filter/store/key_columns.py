"""PostgreSQL's key layout: a page's table keys in its own ``pages`` row.

On SQLite a page's table keys are rows of ``bands``, a WITHOUT ROWID table (the index is
the table). On PostgreSQL every row also costs a 24-byte header, a line pointer and a heap
tuple beside its index entry, so 18 key rows weighed twice the page itself. There, table
t's key of a page is the column ``band_<t>`` of the page's row (NULL where the page has
no key in table t: a minhash-lsh page is under its bands or, without a usable sketch,
under the fallback tables, never both), each column under a partial B-tree
(``WHERE band_<t> IS NOT NULL``). A probe of (t, key) is one scan of column t's index, and
the candidate's fingerprint, URL and sketch are in the row it finds.

The statements name their columns, so they are made here for a table count; the write
paths' SQL (pg.py, pg_pipeline.py, decide_function.sql, statements.py) takes its key
parts from these functions, and the tests pin that every path reads and writes the same
keys. Table numbers are the scheme's (``TableKey``), keys signed as stored (encoding.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from sqlalchemy import BigInteger, Column, MetaData, Table, text
from sqlalchemy.engine import Connection

from simhash_filter.index.schemes import TableKey

from .batch import KeyRow, PageUpdate
from .encoding import to_sql_int
from .schema import pages_table

COLUMN_PREFIX = "band_"


def column_name(table_no: int) -> str:
    """The ``pages`` column holding table ``table_no``'s key."""
    return f"{COLUMN_PREFIX}{table_no}"


def column_names(n_tables: int) -> list[str]:
    """The key columns of a scheme of ``n_tables`` tables, in table order."""
    return [column_name(t) for t in range(n_tables)]


def index_name(table_no: int) -> str:
    """The partial B-tree over table ``table_no``'s column."""
    return f"{pages_table.name}_{column_name(table_no)}"


def keys_by_table(items: Iterable[TableKey], n_tables: int) -> list[int | None]:
    """A page's index keys as its row holds them: table t's key at t, None where it has
    none (ValueError for a table outside the scheme or a table keyed twice)."""
    row: list[int | None] = [None] * n_tables
    for t, key in items:
        if not 0 <= t < n_tables or row[t] is not None:
            raise ValueError(f"band table {t} outside 0..{n_tables - 1} or keyed twice")
        row[t] = key
    return row


def signed_keys_by_table(items: Iterable[TableKey], n_tables: int) -> list[int | None]:
    """:func:`keys_by_table` of unsigned keys, each as the column stores it (signed)."""
    return keys_by_table(((t, to_sql_int(key)) for t, key in items), n_tables)


def key_rows(
    inserts: Iterable[KeyRow], deletes: Iterable[KeyRow], n_tables: int
) -> dict[int, list[int | None]]:
    """The key columns each page of a batch gets (page ref → signed keys by table, None
    for a table it has no key in) from batch.py's key rows: a page's inserts are all its
    keys, so its row's columns are set whole and its deletes need no statement of their
    own; a page whose keys are deleted and none inserted (it left the index) gets None in
    every column."""
    by_page: dict[int, list[TableKey]] = {}
    for row in inserts:
        by_page.setdefault(row.page_ref, []).append((row.table_no, row.key))
    for row in deletes:
        by_page.setdefault(row.page_ref, [])
    return {ref: signed_keys_by_table(items, n_tables) for ref, items in by_page.items()}


class KeyedUpdate(NamedTuple):
    """A stored page's update and the key columns it gets with it (signed, by table)."""

    update: PageUpdate
    keys: list[int | None]


def split_updates(
    updates: Sequence[PageUpdate], row_keys: Mapping[int, list[int | None]]
) -> tuple[list[PageUpdate], list[KeyedUpdate]]:
    """The page updates whose page keeps its keys, and those whose page gets new ones
    (:func:`key_rows`): one UPDATE sets a row's fields and keys together, since each
    UPDATE that changes a key column writes the row again into every index of ``pages``.
    ValueError for a stored page whose keys change without an update (batch.py updates
    every page a row changed)."""
    updated = {u.page_id for u in updates}
    stray = sorted(ref for ref in row_keys if ref > 0 and ref not in updated)
    if stray:
        raise ValueError(f"pages {stray} get new table keys without an update")
    plain = [u for u in updates if u.page_id not in row_keys]
    keyed = [KeyedUpdate(u, row_keys[u.page_id]) for u in updates if u.page_id in row_keys]
    return plain, keyed


def add_columns(conn: Connection, n_tables: int) -> None:
    """Add the key columns to ``pages`` (a new database, or ``reindex`` after
    :func:`drop_columns`); :func:`add_indexes` makes their indexes, after the caller has
    filled them where it fills them."""
    adds = ", ".join(f"ADD COLUMN {name} bigint" for name in column_names(n_tables))
    conn.execute(text(f"ALTER TABLE {pages_table.name} {adds}"))


def index_sql(table_no: int) -> str:
    """The statement that makes the partial B-tree of table ``table_no``'s column."""
    name = column_name(table_no)
    return (
        f"CREATE INDEX {index_name(table_no)} ON {pages_table.name} ({name}) "
        f"WHERE {name} IS NOT NULL"
    )


def add_indexes(conn: Connection, n_tables: int) -> None:
    """The partial B-tree of each key column."""
    for t in range(n_tables):
        conn.execute(text(index_sql(t)))


PRESENT_COLUMNS_SQL = (
    f"SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('{pages_table.name}') "
    f"AND attnum > 0 AND NOT attisdropped AND attname ~ '^{COLUMN_PREFIX}[0-9]+$' "
    f"ORDER BY substr(attname, {len(COLUMN_PREFIX) + 1})::int"
)
"""The key columns ``pages`` has now (any table count), in table order."""


def present_columns(conn: Connection) -> list[str]:
    """:data:`PRESENT_COLUMNS_SQL`'s names."""
    return [name for (name,) in conn.execute(text(PRESENT_COLUMNS_SQL))]


def drop_columns(conn: Connection) -> None:
    """Drop every key column (and with it its index)."""
    names = present_columns(conn)
    if names:
        drops = ", ".join(f"DROP COLUMN {name}" for name in names)
        conn.execute(text(f"ALTER TABLE {pages_table.name} {drops}"))


@functools.lru_cache(maxsize=16)
def pages_with_keys(n_tables: int) -> Table:
    """``pages`` with its key columns, for SQLAlchemy statements (a Table of its own
    MetaData: schema.py's model is the columns every back-end has)."""
    columns = [Column(c.name, c.type, primary_key=c.primary_key) for c in pages_table.c]
    keys = [Column(name, BigInteger) for name in column_names(n_tables)]
    return Table(pages_table.name, MetaData(), *columns, *keys)


def _branches(n_tables: int, columns: str, where: Callable[[int], str]) -> str:
    """``(SELECT columns FROM pages WHERE where(t) UNION ALL ...)``, a branch a table."""
    return (
        "("
        + " UNION ALL ".join(
            f"SELECT {columns} FROM {pages_table.name} WHERE {where(t)}" for t in range(n_tables)
        )
        + ")"
    )


def hits_sql(n_tables: int, table_no: str, key: str, columns: str) -> str:
    """A subquery of the pages stored under (``table_no``, ``key``), SQL expressions of
    the enclosing query (a ``CROSS JOIN LATERAL`` of it is the old join with ``bands``):
    one branch a table, each gated by ``table_no = t`` (a one-time filter: a key is looked
    up in its own table's index only). ``columns``: what each branch selects from
    ``pages``."""
    return _branches(n_tables, columns, lambda t: f"{table_no} = {t} AND {column_name(t)} = {key}")


def table_hits_sql(n_tables: int, keys_of: Callable[[int], str], columns: str) -> str:
    """A subquery of the pages stored under any of a set of keys given a table at a time:
    ``keys_of(t)`` is an ``int8[]`` expression of table t's keys, looked up as
    ``band_<t> = ANY(...)`` (one index scan a table, a descent a key; no outer row to
    rescan the branches for, so it costs least where the keys come as arrays). ``columns``:
    what each branch selects from ``pages``; a page under keys of two tables comes twice."""
    return _branches(n_tables, columns, lambda t: f"{column_name(t)} = ANY({keys_of(t)})")


def key_rows_sql(n_tables: int) -> str:
    """The key rows ``(table_no, key, page_id, fingerprint)`` of every page, as SQLite's
    ``bands`` holds them, read from the page rows: for reports and checks that look at
    both back-ends' keys alike."""
    return " UNION ALL ".join(
        f"SELECT {t} AS table_no, {column_name(t)} AS key, id AS page_id, fingerprint "
        f"FROM {pages_table.name} WHERE {column_name(t)} IS NOT NULL"
        for t in range(n_tables)
    )


def key_rows_source(dialect_name: str, n_tables: int) -> str:
    """A FROM item named ``bands`` with the key rows on either back-end."""
    if dialect_name == "postgresql":
        return f"({key_rows_sql(n_tables)}) AS bands"
    return "bands"


def table_keys_sql(n_tables: int, table_no: str, key: str) -> str:
    """Aggregates over (``table_no``, ``key``) rows giving each table's key (NULL where
    none), in column order: ``max(key) FILTER (WHERE table_no = t)`` for each t."""
    return ", ".join(f"max({key}) FILTER (WHERE {table_no} = {t})" for t in range(n_tables))


def placeholders(n: int, cast: str) -> str:
    """``n`` psycopg placeholders with ``cast``, comma-joined."""
    return ", ".join([f"%s::{cast}"] * n)


def column_arrays(rows: Sequence[Sequence[int | None]], n_tables: int) -> list[list[int | None]]:
    """Per-page key rows (:func:`keys_by_table`, signed) turned into one list a column:
    the ``int8[]`` parameters an ``unnest`` of the pages' rows takes."""
    return [[row[t] for row in rows] for t in range(n_tables)]
