"""The store's generic SQL: statements compiled once per dialect, and :class:`SqlBatchIO`,
the reader/writer through which batch.py's decision sees a database on the SQLAlchemy
write path.

Hot statements (the probe, a page by URL or id, key inserts) are compiled once and run
on the driver (``exec_driver_sql`` or a DB-API cursor), skipping SQLAlchemy's per-call
statement processing; :class:`Compiled` binds their values, given in the order the
statement names them, for positional and named drivers alike. Values cross into SQL
through encoding.py (unsigned in Python, signed in SQL).

:class:`Probe` reads the key rows under any set of (table_no, key) keys on any
back-end: for the SQLAlchemy write path, its ``near()``, ``count_candidates`` and the
reports. The PostgreSQL paths probe in SQL of their own (pg.py, pg_pipeline.py,
decide_function.sql).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    Dialect,
    Table,
    Update,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal_column,
    select,
    union_all,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from simhash_filter.index.schemes import TableKey

from . import key_columns as key_columns
from .batch import BatchIO, Changes, KeyHit, KeyRow, PageUpdate, StoredPage
from .encoding import from_sql_int, to_sql_int
from .schema import UInt64, duplicates_table, keys_table, pages_table

T = TypeVar("T")

IN_CHUNK = 5_000  # values per IN (...) list of the ad-hoc selects

Execute = Callable[[str, Any], Sequence[Any]]
"""Runs compiled SQL with bound parameters and returns every row (a cursor or a
connection, see :func:`cursor_execute` and :func:`connection_execute`)."""


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size`` (the package's one chunker: IN lists, write
    batches)."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def cursor_execute(cursor: Any) -> Execute:
    """:data:`Execute` on a DB-API cursor."""

    def execute(sql: str, params: Any) -> Sequence[Any]:
        cursor.execute(sql, params)
        return list(cursor.fetchall())

    return execute


def connection_execute(conn: Connection) -> Execute:
    """:data:`Execute` on a SQLAlchemy connection (in its transaction)."""

    def execute(sql: str, params: Any) -> Sequence[Any]:
        return conn.exec_driver_sql(sql, params).all()

    return execute


def cast_compiled(compiled: Any) -> SQLCompiler:
    """The SQL compiler behind a compiled statement (it has ``positiontup``)."""
    assert isinstance(compiled, SQLCompiler)
    return compiled


class Compiled:
    """A statement compiled for one dialect; :meth:`bind` turns values given in
    ``names`` order into the driver's parameters (a tuple or a dict)."""

    def __init__(self, stmt: ClauseElement, dialect: Dialect, names: Sequence[str]) -> None:
        compiled = cast_compiled(stmt.compile(dialect=dialect))
        self.sql = compiled.string
        self.names = tuple(names)
        self.positional = bool(dialect.positional)
        self._order: tuple[int, ...] | None = None
        if self.positional:
            position = {name: i for i, name in enumerate(self.names)}
            order = tuple(position[name] for name in compiled.positiontup or ())
            if set(order) != set(range(len(self.names))):  # (a name may be bound twice)
                raise ValueError(f"statement binds {compiled.positiontup}, given {self.names}")
            if order != tuple(range(len(order))):
                self._order = order

    def bind(self, values: Sequence[Any]) -> tuple[Any, ...] | dict[str, Any]:
        """Driver parameters for ``values`` (one per name, in ``names`` order)."""
        if not self.positional:
            return dict(zip(self.names, values, strict=True))
        if self._order is None:
            return tuple(values)
        return tuple(values[i] for i in self._order)


class Probe:
    """The key rows under any set of (table_no, key) keys: one compiled statement per
    store, whatever the number of keys.

    ``table_no = t AND key IN (<table t's keys>)`` for each table, joined by UNION ALL;
    each table's keys are one parameter: a typed ``BIGINT[]`` on PostgreSQL
    (``band_<t> = ANY(...)`` over the page rows, key_columns.py; prepared once), a JSON
    array read by ``json_each`` elsewhere (the index on (table_no, key) is searched once
    per key either way). Where no table has more than one key (the minhash-lsh and
    permuted schemes' probes), SQLite and other non-array dialects run ``table_no = t AND
    key = ?`` instead: the same rows, without building and parsing a JSON array per table.
    """

    def __init__(self, dialect: Dialect, n_tables: int) -> None:
        self._tables = n_tables
        self._arrays = dialect.name == "postgresql"
        b = keys_table.c
        parts = []
        if self._arrays:
            from sqlalchemy.dialects.postgresql import ARRAY  # here: SQLite never loads it

            keyed = key_columns.pages_with_keys(n_tables).c
            for t in range(n_tables):
                column = keyed[key_columns.column_name(t)]
                parts.append(
                    select(literal_column(str(t)), column, keyed.id, keyed.fingerprint).where(
                        column == func.any(cast(bindparam(f"k{t}"), ARRAY(BigInteger)))
                    )
                )
        else:
            for t in range(n_tables):
                in_json = b.key.in_(
                    select(literal_column("value")).select_from(func.json_each(bindparam(f"k{t}")))
                )
                parts.append(
                    select(b.table_no, b.key, b.page_id, b.fingerprint).where(
                        b.table_no == literal_column(str(t)), in_json
                    )
                )
        names = [f"k{t}" for t in range(n_tables)]
        self._statement = Compiled(union_all(*parts), dialect, names)
        self._single: Compiled | None = None  # one key (or none) a table
        if not self._arrays:
            one_key = [
                select(b.table_no, b.key, b.page_id, b.fingerprint).where(
                    b.table_no == literal_column(str(t)), b.key == bindparam(f"k{t}")
                )
                for t in range(n_tables)
            ]
            self._single = Compiled(union_all(*one_key), dialect, names)

    def rows(self, execute: Execute, keys: Iterable[TableKey]) -> Sequence[Any]:
        """The raw key rows under ``keys``: (table_no, key, page_id, fingerprint), the
        last two as stored (signed: :func:`from_sql_int` makes them unsigned)."""
        per_table: list[list[int]] = [[] for _ in range(self._tables)]
        for t, key in keys:
            per_table[t].append(to_sql_int(key))
        if not any(per_table):
            return []
        if self._single is not None and all(len(k) <= 1 for k in per_table):
            # a table without a key binds NULL: key = NULL matches no row
            single = [k[0] if k else None for k in per_table]
            return execute(self._single.sql, self._single.bind(single))
        values: list[Any] = per_table if self._arrays else [json.dumps(k) for k in per_table]
        return execute(self._statement.sql, self._statement.bind(values))

    def run(self, execute: Execute, keys: Collection[TableKey]) -> dict[TableKey, list[KeyHit]]:
        """Every key row under ``keys``, grouped by key (``{(t, key): [KeyHit]}``)."""
        found: dict[TableKey, list[KeyHit]] = defaultdict(list)
        for t, key, page_id, stored in self.rows(execute, keys):
            found[(t, from_sql_int(key))].append(KeyHit(page_id, from_sql_int(stored)))
        return found


def _stored_page_columns() -> tuple[Any, ...]:
    """The columns of a :class:`~.batch.StoredPage`, in order (see :func:`stored_page`)."""
    p = pages_table.c
    return (
        p.id,
        p.url,
        p.domain,
        p.fingerprint,
        p.text_length,
        p.sketch,
        p.dropped_at.is_not(None),
    )


@functools.lru_cache(maxsize=16)
def statements_for(dialect: Dialect, n_tables: int) -> Statements:
    """The :class:`Statements` of a dialect and a table count, compiled once."""
    return Statements(dialect, n_tables)


class Statements:
    """Every compiled statement of one store (a dialect and a table count)."""

    def __init__(self, dialect: Dialect, n_tables: int) -> None:
        self.dialect = dialect
        self.n_tables = n_tables
        self.probe = Probe(dialect, n_tables)
        # PostgreSQL keeps a page's keys in its row (key_columns.py): written with it
        self.keys_in_rows = dialect.name == "postgresql"
        self.key_columns = key_columns.column_names(n_tables) if self.keys_in_rows else []
        self.pages = key_columns.pages_with_keys(n_tables) if self.keys_in_rows else pages_table
        self.update_page = _page_update(self.pages, [])
        self.update_page_and_keys = _page_update(self.pages, self.key_columns)
        p = pages_table.c
        self.page_by_url = Compiled(
            select(*_stored_page_columns()).where(p.url == bindparam("u")), dialect, ["u"]
        )
        self.url_by_id = Compiled(select(p.url).where(p.id == bindparam("p")), dialect, ["p"])
        d = duplicates_table.c
        self.stored_as = Compiled(  # the keep policy's disproof of a hint (keep_evidence.py)
            union_all(
                select(p.url, p.id).where(p.url == bindparam("u"), p.dropped_at.is_(None)),
                select(d.url, d.duplicate_of).where(d.url == bindparam("v")),
            ),
            dialect,
            ["u", "v"],
        )
        # built once (their IN lists expand at each execution): a batch reads both
        self.pages_by_urls = select(*_stored_page_columns()).where(
            p.url.in_(bindparam("urls", expanding=True))
        )
        self.pages_by_ids = select(*_stored_page_columns()).where(
            p.id.in_(bindparam("ids", expanding=True))
        )
        key_fields = ["table_no", "key", "page_id", "fingerprint"]
        self.key_insert = Compiled(
            insert(keys_table).values({name: bindparam(name) for name in key_fields}),
            dialect,
            key_fields,
        )


class SqlBatchIO(BatchIO):
    """batch.py's reader/writer on one SQLAlchemy connection, in its transaction."""

    def __init__(self, conn: Connection, statements: Statements) -> None:
        self._conn = conn
        self._statements = statements
        self._execute = connection_execute(conn)

    def pages_by_url(self, urls: Sequence[str]) -> list[StoredPage]:
        if len(urls) == 1:  # the check_and_add hot path: a pre-compiled statement
            compiled = self._statements.page_by_url
            rows: Iterable[Any] = self._execute(compiled.sql, compiled.bind(urls))
        else:
            stmt = self._statements.pages_by_urls
            rows = (
                row
                for chunk in chunked(urls, IN_CHUNK)
                for row in self._conn.execute(stmt, {"urls": chunk})
            )
        return [stored_page(row) for row in rows]

    def probe(self, keys: Collection[TableKey]) -> Mapping[TableKey, Sequence[KeyHit]]:
        return self._statements.probe.run(self._execute, keys)

    def pages_by_id(self, page_ids: Sequence[int]) -> list[StoredPage]:
        found: list[StoredPage] = []
        stmt = self._statements.pages_by_ids
        for chunk in chunked(page_ids, IN_CHUNK):
            found.extend(stored_page(row) for row in self._conn.execute(stmt, {"ids": chunk}))
        return found

    def write(self, changes: Changes) -> dict[int, int]:
        conn, now, statements = self._conn, changes.now, self._statements
        keyed, names, pages = statements.keys_in_rows, statements.key_columns, statements.pages
        row_keys = (
            key_columns.key_rows(changes.key_inserts, changes.key_deletes, statements.n_tables)
            if keyed
            else {}
        )
        unkeyed: list[int | None] = [None] * len(names)  # a new page already out of the index
        ids: dict[int, int] = {}  # temporary ref -> page id (refs > 0 are page ids)
        if changes.new_pages:
            result = conn.execute(
                insert(pages).returning(pages.c.id, sort_by_parameter_order=True),
                [
                    {
                        "url": page.url,
                        "domain": page.domain,
                        "fingerprint": page.fingerprint,
                        "text_length": page.text_length,
                        "sketch": page.sketch,
                        "first_seen": now,
                        "last_seen": now,
                        "dropped_at": now if page.dropped else None,
                        **(
                            dict(zip(names, row_keys.get(page.ref, unkeyed), strict=True))
                            if keyed
                            else {}
                        ),
                    }
                    for page in changes.new_pages
                ],
            )
            for page, (page_id,) in zip(changes.new_pages, result.all(), strict=True):
                ids[page.ref] = page_id
        if keyed:  # a stored page's new keys go with its update
            plain, rekeyed = key_columns.split_updates(changes.page_updates, row_keys)
        else:
            self._write_key_rows(changes.key_deletes, changes.key_inserts, ids)
            plain, rekeyed = list(changes.page_updates), []
        if plain:
            conn.execute(statements.update_page, [_update_values(u, now) for u in plain])
        if rekeyed:
            conn.execute(
                statements.update_page_and_keys,
                [
                    {**_update_values(k.update, now), **dict(zip(names, k.keys, strict=True))}
                    for k in rekeyed
                ],
            )
        if changes.drops:
            conn.execute(
                insert(duplicates_table),
                [
                    {
                        "url": drop.url,
                        "domain": drop.domain,
                        "fingerprint": drop.fingerprint,
                        "duplicate_of": ids.get(drop.duplicate_of_ref, drop.duplicate_of_ref),
                        "distance": drop.distance,
                        "similarity": drop.similarity,
                        "seen_at": now,
                    }
                    for drop in changes.drops
                ],
            )
        return ids

    def _write_key_rows(
        self, deletes: Sequence[KeyRow], inserts: Sequence[KeyRow], ids: Mapping[int, int]
    ) -> None:
        """SQLite's layout: the key rows out, then in."""
        conn = self._conn
        if deletes:
            conn.execute(
                delete(keys_table).where(
                    keys_table.c.table_no == bindparam("t"),
                    keys_table.c.key == bindparam("k", type_=UInt64()),
                    keys_table.c.page_id == bindparam("p"),
                ),
                [{"t": r.table_no, "k": r.key, "p": r.page_ref} for r in deletes],
            )
        if inserts:
            # in index order: a batch's inserts walk the (table_no, key) B-tree forward
            # instead of jumping across it, so neighbouring keys share the pages read
            compiled = self._statements.key_insert
            rows = sorted(
                (
                    r.table_no,
                    to_sql_int(r.key),
                    ids.get(r.page_ref, r.page_ref),
                    to_sql_int(r.fingerprint),
                )
                for r in inserts
            )
            conn.exec_driver_sql(compiled.sql, [compiled.bind(row) for row in rows])


def _page_update(pages: Table, key_columns: Sequence[str]) -> Update:
    """A stored page's UPDATE by id (``p``): its fields and ``key_columns``, bound by name."""
    names = ("fingerprint", "text_length", "sketch", "last_seen", "dropped_at", *key_columns)
    return (
        update(pages)
        .where(pages.c.id == bindparam("p"))
        .values({name: bindparam(name) for name in names})
    )


def _update_values(u: PageUpdate, now: datetime) -> dict[str, Any]:
    """:func:`_page_update`'s values of a page update (its key columns apart)."""
    return {
        "p": u.page_id,
        "fingerprint": u.fingerprint,
        "text_length": u.text_length,
        "sketch": u.sketch,
        "last_seen": now,
        "dropped_at": now if u.dropped else None,
    }


def stored_page(row: Sequence[Any]) -> StoredPage:
    """A page row (id, url, domain, fingerprint, text_length, sketch[, dropped]) as a
    record (a page found under a band key is in the index: not dropped)."""
    page_id, url, domain, fingerprint, text_length, sketch = row[:6]
    dropped = len(row) > 6 and bool(row[6])
    return StoredPage(
        page_id,
        url,
        domain,
        from_sql_int(fingerprint),
        text_length,
        None if sketch is None else bytes(sketch),  # PostgreSQL's driver gives a memoryview
        dropped,
    )
