"""The "pg-pipeline" write path: PostgreSQL with psycopg, a check-and-add in two round
trips, decided in Python between them.

On a psycopg connection in pipeline mode, one transaction (the statements between two
Sync messages of the extended protocol; no ``BEGIN``, no ``COMMIT``):

- round trip 1: the advisory locks (the database-wide lock shared and the rows' key and
  URL locks in sorted order, or the database-wide lock exclusive for a bulk batch), with
  ``synchronous_commit = off`` for the transaction when the store is not durable; then, in
  one statement, the pages stored under the rows' URLs and the band rows under the rows'
  probe keys within ``Judge.radius`` of the row that probes them (each key sent with that
  row's fingerprint, the distance computed on the server), each with its page's URL and
  sketch. The farther band rows under the keys never leave the server: the decision needs
  no hit beyond the radius (a changed page's old band rows come from its stored
  fingerprint). :func:`~simhash_filter.store.batch.check_batch` then decides on what came
  back, as on the SQLAlchemy path;
- round trip 2: what the decision wrote, one statement per kind of change (a new page and
  its band rows in one statement: ``INSERT ... RETURNING`` feeding ``INSERT ... SELECT ...
  FROM unnest(...)``), and the Sync that commits them.

Statements are sent after the locks in the same transaction, so each reads what every
transaction that held a conflicting lock committed (READ COMMITTED takes a snapshot per
statement).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Engine

from simhash_filter.bands import BandKey, IndexScheme

from .batch import BandHit, BatchIO, Changes, Judge, RowToCheck, StoredPage, check_batch
from .encoding import PgTypes, bool_array, from_sql_int, int_array
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


def _pages_and_probe(portable: bool) -> str:
    """Round trip 1's read: the pages stored under the rows' URLs (table_no -1), then the
    band rows under the probe keys within the radius of the fingerprint that probes them,
    each with its page. A key probed by two rows of a batch comes with each row's
    fingerprint (a band row near both comes back twice); the farther band rows under the
    keys never leave the server."""
    return (
        "SELECT -1::int2, 0::int8, id, url, domain, fingerprint, text_length, sketch FROM pages "
        "WHERE url = ANY(%s::text[]) UNION ALL "
        "SELECT b.table_no, b.key, b.page_id, p.url, p.domain, b.fingerprint, p.text_length, "
        "p.sketch "
        "FROM unnest(%s::int2[], %s::int8[], %s::int8[]) AS q(t, key, fp) "
        "JOIN bands b ON b.table_no = q.t AND b.key = q.key "
        "JOIN pages p ON p.id = b.page_id "
        f"WHERE {popcount_sql('b.fingerprint # q.fp', portable=portable)} <= %s::int4"
    )


PAGES_AND_PROBE = _pages_and_probe(portable=False)
PAGES_AND_PROBE_BEFORE_14 = _pages_and_probe(portable=True)
INSERT_NEW_PAGES = """
WITH v AS (
    SELECT * FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int4[], %s::bytea[])
        WITH ORDINALITY AS v(url, domain, fingerprint, text_length, sketch, n)
), p AS (
    INSERT INTO pages (url, domain, fingerprint, text_length, sketch, first_seen, last_seen)
    SELECT url, domain, fingerprint, text_length, sketch, %s, %s FROM v ORDER BY n
    RETURNING id, url
), b AS (
    INSERT INTO bands (table_no, key, page_id, fingerprint)
    SELECT k.t, k.key, p.id, v.fingerprint
    FROM p JOIN v USING (url)
    JOIN unnest(%s::int4[], %s::int2[], %s::int8[]) AS k(n, t, key) ON k.n = v.n
)
SELECT p.id, v.n FROM p JOIN v USING (url)
"""
DELETE_BANDS = (
    "DELETE FROM bands b USING unnest(%s::int2[], %s::int8[], %s::int8[]) AS d(t, key, page_id) "
    "WHERE b.table_no = d.t AND b.key = d.key AND b.page_id = d.page_id"
)
INSERT_BANDS = (
    "INSERT INTO bands (table_no, key, page_id, fingerprint) "
    "SELECT * FROM unnest(%s::int2[], %s::int8[], %s::int8[], %s::int8[])"
)
UPDATE_PAGES = (
    "UPDATE pages p SET fingerprint = u.fingerprint, text_length = u.text_length, "
    "sketch = u.sketch, last_seen = %s "
    "FROM unnest(%s::int8[], %s::int8[], %s::int4[], %s::bytea[]) "
    "AS u(id, fingerprint, text_length, sketch) "
    "WHERE p.id = u.id"
)
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
    """A band row under a probed key, with its page."""

    table_no: int
    key: int
    page: StoredPage


class PgPipelinePath(PgWritePath):
    """The "pg-pipeline" write path (see the module doc); ``near()`` as pg.py's."""

    name = "pg-pipeline"

    def __init__(
        self, engine: Engine, *, display_url: str, durable: bool | None, bit_count: bool
    ) -> None:
        super().__init__(engine, display_url=display_url, durable=durable, bit_count=bit_count)
        # durable=False: SET LOCAL synchronous_commit = off; else the server's own setting
        prefix = "SELECT " + (ASYNC_COMMIT if self._async else "")
        self._lock_shared = prefix + LOCK_SHARED_AND_KEYS
        self._lock_exclusive = prefix + LOCK_EXCLUSIVE
        self._pages_and_probe = PAGES_AND_PROBE if bit_count else PAGES_AND_PROBE_BEFORE_14

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
                self._pages_and_probe,
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
            io = _PipelinedIO(conn, types, pages, hits, stack)
            return check_batch(rows, io, judge=judge, index_items=scheme.index_items, now=now)
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
    ) -> None:
        self._conn = conn
        self._types = types
        self._pages = pages
        self._hits: dict[BandKey, list[BandHit]] = defaultdict(list)
        self._by_id: dict[int, StoredPage] = {}
        found: set[tuple[int, int, int]] = set()
        for hit in hits:
            if (hit.table_no, hit.key, hit.page.page_id) in found:
                continue  # the same band row, near two rows that probe its key
            found.add((hit.table_no, hit.key, hit.page.page_id))
            self._hits[(hit.table_no, hit.key)].append(
                BandHit(hit.page.page_id, hit.page.fingerprint)
            )
            self._by_id[hit.page.page_id] = hit.page
        self._pipeline = pipeline

    def pages_by_url(self, urls: Sequence[str]) -> list[StoredPage]:
        wanted = set(urls)
        return [page for page in self._pages if page.url in wanted]

    def probe(self, keys: Collection[BandKey]) -> Mapping[BandKey, Sequence[BandHit]]:
        return {key: self._hits[key] for key in keys if key in self._hits}

    def pages_by_id(self, page_ids: Sequence[int]) -> list[StoredPage]:
        # batch.py asks only for pages its probe found: they came with the probe
        return [self._by_id[page_id] for page_id in page_ids]

    def write(self, changes: Changes) -> dict[int, int]:
        conn, t, now = self._conn, self._types, changes.now
        new_pages = None
        if changes.new_pages:
            ordinal = {page.ref: n for n, page in enumerate(changes.new_pages, 1)}
            new_bands = [r for r in changes.band_inserts if r.page_ref in ordinal]
            new_pages = conn.execute(
                INSERT_NEW_PAGES,
                (
                    [page.url for page in changes.new_pages],
                    [page.domain for page in changes.new_pages],
                    t.int8s([page.fingerprint for page in changes.new_pages]),
                    [t.int4(page.text_length) for page in changes.new_pages],
                    [page.sketch for page in changes.new_pages],
                    now,
                    now,
                    [t.int4(ordinal[r.page_ref]) for r in new_bands],
                    [t.int2(r.table_no) for r in new_bands],
                    t.int8s([r.key for r in new_bands]),
                ),
                prepare=True,
            )
        if changes.band_deletes:
            rows = changes.band_deletes
            conn.execute(
                DELETE_BANDS,
                (
                    [t.int2(r.table_no) for r in rows],
                    t.int8s([r.key for r in rows]),
                    t.ids([r.page_ref for r in rows]),
                ),
                prepare=True,
            )
        old_bands = [r for r in changes.band_inserts if r.page_ref > 0]
        if old_bands:
            conn.execute(
                INSERT_BANDS,
                (
                    [t.int2(r.table_no) for r in old_bands],
                    t.int8s([r.key for r in old_bands]),
                    t.ids([r.page_ref for r in old_bands]),
                    t.int8s([r.fingerprint for r in old_bands]),
                ),
                prepare=True,
            )
        if changes.page_updates:
            updates = changes.page_updates
            conn.execute(
                UPDATE_PAGES,
                (
                    now,
                    t.ids([u.page_id for u in updates]),
                    t.int8s([u.fingerprint for u in updates]),
                    [t.int4(u.text_length) for u in updates],
                    [u.sketch for u in updates],
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
