"""The "pg-pipeline" write path: PostgreSQL with psycopg, a check-and-add in two round
trips, decided in Python between them.

On a psycopg connection in pipeline mode, one transaction (the statements between two
Sync messages of the extended protocol; no ``BEGIN``, no ``COMMIT``):

- round trip 1: the advisory locks (the database-wide lock shared and the rows' key and
  URL locks in sorted order, or the database-wide lock exclusive for a bulk batch), with
  ``synchronous_commit = off`` for the transaction when the store is not durable; then, in
  one statement, the pages stored under the rows' URLs and the pages under the rows'
  probe keys (key_columns.py) within ``Judge.radius`` of the row that probes them (each
  key sent with that row's fingerprint, the distance computed on the server). The farther
  pages under the keys never leave the server: the decision needs no hit beyond the
  radius (a changed page's old keys come from its stored fingerprint and sketch).
  :func:`~simhash_filter.store.batch.decide_batch` then decides on what came back, as on
  the SQLAlchemy path;
- round trip 2: what the decision wrote, one statement per kind of change (new pages with
  their key columns, stored pages' new keys, page updates, drops), and the Sync that
  commits them.

Statements are sent after the locks in the same transaction, so each reads what every
transaction that held a conflicting lock committed (READ COMMITTED takes a snapshot per
statement).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Engine

from simhash_filter.index.schemes import IndexScheme, TableKey

from . import key_columns as key_columns
from .batch import BatchIO, Changes, Judge, KeyHit, RowToCheck, StoredPage, decide_batch
from .encoding import PgTypes, bool_array, from_sql_int, int_array
from .faults import OutageRetry
from .locks import GLOBAL_LOCK, TAKE_LOCKS, WriteLocks
from .pg import PgWritePath, popcount_sql
from .records import Verdict
from .statements import stored_page

LOCK_SHARED_AND_KEYS = (
    "pg_advisory_xact_lock_shared(%s), (SELECT "
    + TAKE_LOCKS.format(ids="%s::int8[]", shared="%s::bool[]")
    + ")"
)
LOCK_EXCLUSIVE = "pg_advisory_xact_lock(%s)"
ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true), "


class KeyStatements(NamedTuple):
    """The statements that name the key columns (key_columns.py), for a table count."""

    pages_and_probe: str
    insert_new_pages: str
    update_pages_and_keys: str


@functools.lru_cache(maxsize=16)
def key_statements(n_tables: int, *, bit_count: bool) -> KeyStatements:
    """:class:`KeyStatements` of a scheme of ``n_tables`` tables.

    ``pages_and_probe``, round trip 1's read: the pages stored under the rows' URLs
    (table_no -1), then the pages under the probe keys within the radius of the
    fingerprint that probes them. A key probed by two rows of a batch comes with each
    row's fingerprint (a page near both comes back twice); the farther pages under the
    keys never leave the server. ``insert_new_pages``: new pages with their keys, their
    ids by ordinal. ``update_pages_and_keys``: stored pages updated with new keys."""
    columns = key_columns.column_names(n_tables)
    named = ", ".join(columns)
    hits = key_columns.hits_sql(
        n_tables, "q.t", "q.key", "id, url, domain, fingerprint, text_length, sketch"
    )
    popcount = popcount_sql("b.fingerprint # q.fp", portable=not bit_count)
    keys = key_columns.placeholders(n_tables, "int8[]")
    return KeyStatements(
        pages_and_probe=(
            "SELECT -1::int2, 0::int8, id, url, domain, fingerprint, text_length, sketch, "
            "dropped_at IS NOT NULL FROM pages WHERE url = ANY(%s::text[]) UNION ALL "
            "SELECT q.t, q.key, b.id, b.url, b.domain, b.fingerprint, b.text_length, b.sketch, "
            "false "
            "FROM unnest(%s::int2[], %s::int8[], %s::int8[]) AS q(t, key, fp) "
            f"CROSS JOIN LATERAL {hits} AS b WHERE {popcount} <= %s::int4"
        ),
        insert_new_pages=(
            "WITH v AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int4[], "
            f"%s::bytea[], %s::bool[], {keys}) WITH ORDINALITY "
            f"AS v(url, domain, fingerprint, text_length, sketch, dropped, {named}, n)), "
            "p AS (INSERT INTO pages (url, domain, fingerprint, text_length, sketch, "
            f"first_seen, last_seen, dropped_at, {named}) "
            "SELECT url, domain, fingerprint, text_length, sketch, %s, %s, "
            f"CASE WHEN dropped THEN %s::timestamptz END, {named} "
            "FROM v ORDER BY n RETURNING id, url) "
            "SELECT p.id, v.n FROM p JOIN v USING (url)"
        ),
        update_pages_and_keys=update_pages_sql(columns),
    )


def update_pages_sql(key_columns: list[str]) -> str:
    """Stored pages' fingerprint, text length, sketch, last_seen and dropped_at (the time
    given where ``dropped``, else NULL), and ``key_columns``, set from arrays (one UPDATE a
    row: each that changes a key column writes the row again into every index of
    ``pages``)."""
    names = ["fingerprint", "text_length", "sketch", *key_columns]
    arrays = ["%s::int8[]", "%s::int4[]", "%s::bytea[]", "%s::bool[]"]
    arrays += ["%s::int8[]"] * len(key_columns)
    return (
        "UPDATE pages p SET "
        + ", ".join(f"{name} = u.{name}" for name in names)
        + ", last_seen = %s, dropped_at = CASE WHEN u.dropped THEN %s::timestamptz END "
        + f"FROM unnest(%s::int8[], {', '.join(arrays)}) "
        + f"AS u({', '.join(['id', *names[:3], 'dropped', *names[3:]])}) WHERE p.id = u.id"
    )


UPDATE_PAGES = update_pages_sql([])
INSERT_DROPS = """
INSERT INTO duplicates (url, domain, fingerprint, duplicate_of, distance, similarity, seen_at)
SELECT d.url, d.domain, d.fingerprint, coalesce(d.ref, p.id), d.distance, d.similarity, %s
FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int8[], %s::int4[], %s::text[],
            %s::float8[])
    WITH ORDINALITY AS d(url, domain, fingerprint, ref, distance, ref_url, similarity, n)
LEFT JOIN pages p ON d.ref IS NULL AND p.url = d.ref_url
ORDER BY d.n
"""


class ProbeRow(NamedTuple):
    """A key row under a probed key, with its page."""

    table_no: int
    key: int
    page: StoredPage


class PgPipelinePath(PgWritePath):
    """The "pg-pipeline" write path (see the module doc); ``near()`` as pg.py's."""

    name = "pg-pipeline"

    def __init__(
        self,
        engine: Engine,
        *,
        display_url: str,
        durable: bool | None,
        bit_count: bool,
        outage: OutageRetry | None = None,
    ) -> None:
        super().__init__(
            engine, display_url=display_url, durable=durable, bit_count=bit_count, outage=outage
        )
        # durable=False: SET LOCAL synchronous_commit = off; else the server's own setting
        prefix = "SELECT " + (ASYNC_COMMIT if self._async else "")
        self._lock_shared = prefix + LOCK_SHARED_AND_KEYS
        self._lock_exclusive = prefix + LOCK_EXCLUSIVE

    def _write(
        self,
        conn: Any,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
    ) -> list[Verdict]:
        types = self._types
        statements = key_statements(scheme.n_tables, bit_count=self._bit_count)
        # each probe key with the fingerprint of each row that probes it, once
        probes = list(
            dict.fromkeys((t, key, row.fingerprint) for row in rows for t, key in row.probe_keys)
        )
        # No BEGIN and no COMMIT: in pipeline mode everything up to the next Sync message is
        # one transaction. Round trip 1 ends with a Flush (the cursor's fetch), which returns
        # the results and leaves the transaction open; round trip 2 ends with the pipeline's
        # Sync, which commits it (or rolls it back after an error). With psycopg's own BEGIN,
        # the BEGIN would wait for a Sync of its own: one more round trip.
        conn.autocommit = True
        with ExitStack() as stack:
            stack.enter_context(conn.pipeline())
            if locks is None:
                conn.execute(self._lock_exclusive, (types.int8(GLOBAL_LOCK),), prepare=True)
            else:
                conn.execute(
                    self._lock_shared,
                    (types.int8(GLOBAL_LOCK), int_array(locks.ids), bool_array(locks.shared)),
                    prepare=True,
                )
            found = conn.execute(
                statements.pages_and_probe,
                (
                    sorted({row.url for row in rows}),
                    int_array([t for t, _, _ in probes]),
                    int_array([key for _, key, _ in probes]),
                    int_array([fp for _, _, fp in probes]),
                    types.int4(judge.radius),
                ),
                prepare=True,
            )
            pages: list[StoredPage] = []
            hits: list[ProbeRow] = []
            for t, key, *page in found.fetchall():  # round trip 1 (a Flush, no Sync)
                if t < 0:
                    pages.append(stored_page(page))
                else:
                    hits.append(ProbeRow(t, from_sql_int(key), stored_page(page)))
            io = _PipelinedIO(conn, types, pages, hits, stack, statements, scheme.n_tables)
            return decide_batch(rows, io, judge=judge, index_items=scheme.index_items, now=now)
        raise AssertionError("unreachable")  # ExitStack does not swallow exceptions


class _PipelinedIO(BatchIO):
    """batch.py's reader/writer over what round trip 1 fetched; :meth:`write` sends the
    changes and the committing Sync in round trip 2 (leaving pipeline mode)."""

    def __init__(
        self,
        conn: Any,
        types: PgTypes,
        pages: list[StoredPage],
        hits: list[ProbeRow],
        pipeline: ExitStack,
        statements: KeyStatements,
        n_tables: int,
    ) -> None:
        self._conn = conn
        self._statements = statements
        self._n_tables = n_tables
        self._types = types
        self._pages = pages
        self._hits: dict[TableKey, list[KeyHit]] = defaultdict(list)
        self._by_id: dict[int, StoredPage] = {}
        found: set[tuple[int, int, int]] = set()
        for hit in hits:
            if (hit.table_no, hit.key, hit.page.page_id) in found:
                continue  # the same key row, near two rows that probe its key
            found.add((hit.table_no, hit.key, hit.page.page_id))
            self._hits[(hit.table_no, hit.key)].append(
                KeyHit(hit.page.page_id, hit.page.fingerprint)
            )
            self._by_id[hit.page.page_id] = hit.page
        self._pipeline = pipeline

    def pages_by_url(self, urls: Sequence[str]) -> list[StoredPage]:
        wanted = set(urls)
        return [page for page in self._pages if page.url in wanted]

    def probe(self, keys: Collection[TableKey]) -> Mapping[TableKey, Sequence[KeyHit]]:
        return {key: self._hits[key] for key in keys if key in self._hits}

    def pages_by_id(self, page_ids: Sequence[int]) -> list[StoredPage]:
        # batch.py asks only for pages its probe found: they came with the probe
        return [self._by_id[page_id] for page_id in page_ids]

    def write(self, changes: Changes) -> dict[int, int]:
        conn, t, now = self._conn, self._types, changes.now
        new_pages = None
        row_keys = key_columns.key_rows(changes.key_inserts, changes.key_deletes, self._n_tables)
        if changes.new_pages:
            unkeyed: list[int | None] = [None] * self._n_tables  # (a new page out of the index)
            new_keys = [row_keys.get(page.ref, unkeyed) for page in changes.new_pages]
            new_pages = conn.execute(
                self._statements.insert_new_pages,
                (
                    [page.url for page in changes.new_pages],
                    [page.domain for page in changes.new_pages],
                    t.int8s([page.fingerprint for page in changes.new_pages]),
                    [t.int4(page.text_length) for page in changes.new_pages],
                    [page.sketch for page in changes.new_pages],
                    bool_array([page.dropped for page in changes.new_pages]),
                    *[t.ids(c) for c in key_columns.column_arrays(new_keys, self._n_tables)],
                    now,
                    now,
                    now,
                ),
                prepare=True,
            )
        plain, rekeyed = key_columns.split_updates(changes.page_updates, row_keys)
        for statement, updates, keys in (
            (UPDATE_PAGES, plain, []),
            (
                self._statements.update_pages_and_keys,
                [k.update for k in rekeyed],
                key_columns.column_arrays([k.keys for k in rekeyed], self._n_tables),
            ),
        ):
            if updates:
                conn.execute(
                    statement,
                    (
                        now,
                        now,
                        t.ids([u.page_id for u in updates]),
                        t.int8s([u.fingerprint for u in updates]),
                        [t.int4(u.text_length) for u in updates],
                        [u.sketch for u in updates],
                        bool_array([u.dropped for u in updates]),
                        *[t.ids(column) for column in keys],
                    ),
                    prepare=True,
                )
        if changes.drops:
            new_urls = {page.ref: page.url for page in changes.new_pages}
            drops = changes.drops
            conn.execute(
                INSERT_DROPS,
                (
                    now,
                    [d.url for d in drops],
                    [d.domain for d in drops],
                    t.int8s([d.fingerprint for d in drops]),
                    t.ids([None if d.duplicate_of_ref < 0 else d.duplicate_of_ref for d in drops]),
                    [t.int4(d.distance) for d in drops],
                    [new_urls.get(d.duplicate_of_ref) for d in drops],
                    [d.similarity for d in drops],
                ),
                prepare=True,
            )
        self._pipeline.close()  # leaves pipeline mode: Sync, the commit; round trip 2
        if new_pages is None:
            return {}
        refs = [page.ref for page in changes.new_pages]
        return {refs[n - 1]: page_id for page_id, n in new_pages.fetchall()}
