"""The PostgreSQL path of the store: a check-and-add in one round trip, ``near()`` in one.

A write is one call of the server-side function of :mod:`.pg_function` in autocommit: the
locks, the reads, the decision and the writes in one statement, one transaction. Where the
function cannot be installed (:meth:`PgPath._install`), the same transaction travels in two
round trips, with the same decision (:func:`~simhash_filter.store.batch.check_batch`),
the same advisory locks (:func:`~simhash_filter.store.locks.write_locks`) and the same
rows as the generic SQLAlchemy path (``statements.SqlBatchIO``). On a psycopg connection
in pipeline mode, one transaction (the statements between two Sync messages of the
extended protocol; no ``BEGIN``, no ``COMMIT``):

- round trip 1: the advisory locks (the database-wide lock shared and the
  rows' key and URL locks in sorted order, or the database-wide lock exclusive for a bulk
  batch), with ``synchronous_commit = off`` for the transaction when the store is not
  durable; then, in one statement, the pages stored under the rows' URLs and the band rows
  under the rows' probe keys within ``Judge.radius`` of the row that probes them (each key
  sent with that row's fingerprint; the distance computed on the server, with
  ``bit_count`` or, before PostgreSQL 14, :func:`popcount_sql`'s portable sum), each with
  its page's URL and sketch. The other band rows under the keys (some 470 a page at 100k
  pages under multi-index hashing, nearly all of them) never leave the server: the decision
  needs no hit beyond the radius (a changed page's old band rows come from its stored
  fingerprint). The decision then runs in Python on what came back;
- round trip 2: what the decision wrote, one statement per kind of change (a new page and
  its band rows in one statement: ``INSERT ... RETURNING`` feeding ``INSERT ... SELECT ...
  FROM unnest(...)``), and the Sync that commits them.

Statements are sent after the locks in the same transaction, so each reads what every
transaction that held a conflicting lock committed (READ COMMITTED takes a snapshot per
statement). Every parameter is typed (``int8[]``, ``int2[]``, ``text[]``: psycopg would
otherwise send an int as int2, int4 or int8 by its size; the long key arrays travel as one
array literal each, cast on the server), so each statement is prepared once per connection
whatever the values and the batch size.

``near()`` runs one prepared statement in autocommit: it leaves no transaction open, so
the pool's reset on return sends no ``ROLLBACK`` (after which psycopg deallocates every
prepared statement of the connection).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from simhash_filter.bands import BandKey, IndexScheme

from .batch import (
    BandHit,
    BatchIO,
    Changes,
    IndexItems,
    Judge,
    RowToCheck,
    StoredPage,
    check_batch,
)
from .engine import error_reason
from .locks import GLOBAL_LOCK, RETRY_SQLSTATES, SCHEMA_LOCK, TAKE_LOCKS, WRITE_ATTEMPTS, WriteLocks
from .pg_function import (
    CALL_SQL,
    CHECK_FUNCTION,
    FUNCTION_SQL,
    INSTALLED_SQL,
    bool_array,
    bytea_array,
    int_array,
    rule_parameter,
    scheme_arrays,
    server_supports,
    text_array,
)
from .records import Match, StoreError, Verdict, VerdictKind
from .schema import from_sql_int, to_sql_int
from .statements import stored_page

log = logging.getLogger(__name__)

LOCK_SHARED_AND_KEYS = (
    "pg_advisory_xact_lock_shared(%s), (SELECT "
    + TAKE_LOCKS.format(ids="%s::int8[]", shared="%s::bool[]")
    + ")"
)
LOCK_EXCLUSIVE = "pg_advisory_xact_lock(%s)"
ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true), "


def popcount_sql(x: str, *, portable: bool) -> str:
    """SQL for the number of set bits of the ``int8`` expression ``x``: ``bit_count`` (14
    and later) or, ``portable``, arithmetic any PostgreSQL has: the 63 low bits counted in
    parallel (SWAR: pairs, nibbles, bytes; every step stays non-negative, so no ``int8``
    overflow), their byte counts summed by ``mod(., 255)`` (256 = 1 mod 255, and the sum is
    at most 63), plus the sign bit. On 1M values (PostgreSQL 15) the portable sum costs
    ~0.06 us a value more than ``bit_count``; ``length(replace(x::bit(64)::text, '0',
    ''))`` ~1.2 us more."""
    if not portable:
        return f"bit_count(({x})::bit(64))"
    y = f"({x} & 9223372036854775807)"
    pairs = f"({y} - (({y} >> 1) & 6148914691236517205))"
    nibbles = f"(({pairs} & 3689348814741910323) + (({pairs} >> 2) & 3689348814741910323))"
    octets = f"(({nibbles} + ({nibbles} >> 4)) & 1085102592571150095)"
    return f"(mod({octets}, 255) + ({x} < 0)::int4)"


def _pages_and_probe(portable: bool) -> str:
    """Round trip 1's read: the pages stored under the rows' URLs (table_no -1), then the
    band rows under the probe keys within the radius of the fingerprint that probes them,
    each with its page. A key probed by two rows of a batch comes with each row's
    fingerprint (a band row near both comes back twice); the farther band rows under the
    keys (some 470 a page at 100k pages under multi-index hashing, where a few are within
    the radius) never leave the server."""
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


NEAR = (
    "SELECT b.page_id, p.url, p.domain, b.fingerprint, p.text_length, p.sketch "
    "FROM (SELECT DISTINCT b.page_id, b.fingerprint "
    "FROM unnest(%s::int2[], %s::int8[]) AS q(t, key) "
    "JOIN bands b ON b.table_no = q.t AND b.key = q.key "
    "WHERE bit_count((b.fingerprint # %s::int8)::bit(64)) <= %s::int4) AS b "
    "JOIN pages p ON p.id = b.page_id"
)
"""near(): the pages within the limit, filtered on the server (the probe's other hits, a
few hundred a query at 100k pages under multi-index hashing, never leave it)."""
NEAR_BEFORE_14 = (
    "SELECT b.page_id, p.url, p.domain, b.fingerprint, p.text_length, p.sketch "
    "FROM (SELECT DISTINCT b.page_id, b.fingerprint "
    "FROM unnest(%s::int2[], %s::int8[]) AS q(t, key) CROSS JOIN (SELECT %s::int8) AS f(fp) "
    "JOIN bands b ON b.table_no = q.t AND b.key = q.key "
    f"WHERE {popcount_sql('b.fingerprint # f.fp', portable=True)} <= %s::int4) AS b "
    "JOIN pages p ON p.id = b.page_id"
)
"""near() on a server without ``bit_count`` (the fingerprint a column: the portable
popcount names it more than once)."""
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


class _Types:
    """psycopg's typed int wrappers, imported when the first PostgreSQL store opens
    (psycopg is an optional dependency)."""

    def __init__(self) -> None:
        from psycopg.types.numeric import Int2, Int4, Int8

        self.int2: Callable[[int], Any] = Int2
        self.int4: Callable[[int], Any] = Int4
        self.int8: Callable[[int], Any] = Int8

    def int8s(self, values: Sequence[int]) -> list[Any]:
        """Signed 64-bit values (the SQL side of our unsigned ints) as an ``int8[]`` parameter."""
        return [self.int8(to_sql_int(value)) for value in values]

    def ids(self, values: Sequence[int | None]) -> list[Any]:
        return [None if value is None else self.int8(value) for value in values]


class PgPath:
    """check-and-add and ``near()`` for one store on PostgreSQL with psycopg 3."""

    def __init__(self, engine: Engine, *, display_url: str, durable: bool | None) -> None:
        self._engine = engine
        self._display_url = display_url
        self._types = _Types()
        # durable=False: SET LOCAL synchronous_commit = off; else the server's own setting
        prefix = "SELECT " + (ASYNC_COMMIT if durable is False else "")
        self._lock_shared = prefix + LOCK_SHARED_AND_KEYS
        self._lock_exclusive = prefix + LOCK_EXCLUSIVE
        self._async = durable is False
        self.server_function: bool | None = None
        """Writes go through the server-side function (pg_function.py): None until the
        first write finds out whether it is (or can be) installed; False keeps the
        two-round-trip path."""

    # -- writing
    def check(
        self,
        rows: Sequence[RowToCheck],
        *,
        locks: WriteLocks | None,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
    ) -> list[Verdict]:
        """Decide and record ``rows`` in one transaction, under the advisory ``locks``
        or, when it is None, the database-wide lock: one call of the
        server-side function (one round trip), or two round trips when it is not installed;
        retried on a deadlock, a serialization failure, a lost insert race or a lost
        connection."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self._connection() as conn:
                    if self.server_function is None:
                        self.server_function = self._install(conn)
                    if self.server_function:
                        return self._call(conn, rows, locks, judge=judge, scheme=scheme, now=now)
                    return self._transaction(
                        conn, rows, locks, judge=judge,
                        index_items=scheme.index_items, now=now,
                    )  # fmt: skip
            except _Retry as retry:
                if attempt == WRITE_ATTEMPTS:
                    raise StoreError(
                        f"database error on {self._display_url}: {retry.reason}"
                    ) from retry.__cause__
                log.debug("write conflict (attempt %d), retrying: %s", attempt, retry.reason)
                time.sleep(0.005 * attempt)
        raise AssertionError("unreachable")

    def _install(self, conn: Any) -> bool:
        """Install the server-side function unless it is there (under the schema lock, so
        concurrent first writers do not race); False, logged, where the server is too old
        or the role may not create functions."""
        import psycopg

        if not server_supports(conn):
            log.info("PostgreSQL %s: check-and-add in two round trips", conn.info.server_version)
            return False
        conn.autocommit = True
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._types.int8(SCHEMA_LOCK),))
                (present,) = conn.execute(INSTALLED_SQL, (CHECK_FUNCTION,)).fetchone()
                if not present:
                    conn.execute(FUNCTION_SQL)
                    log.info("installed %s on %s", CHECK_FUNCTION, self._display_url)
        except psycopg.errors.InsufficientPrivilege as exc:
            log.warning(
                "cannot install %s on %s (%s): check-and-add in two round trips",
                CHECK_FUNCTION, self._display_url, error_reason(exc),
            )  # fmt: skip
            return False
        return True

    def _call(
        self,
        conn: Any,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
    ) -> list[Verdict]:
        """One call of the server-side function in autocommit: one round trip."""
        if not rows:
            return []
        t = self._types
        arrays = scheme_arrays(scheme)
        conn.autocommit = True
        result = conn.execute(
            CALL_SQL,
            (
                text_array([row.url for row in rows]),
                text_array([row.domain for row in rows]),
                int_array([row.fingerprint for row in rows]),
                int_array([row.text_length for row in rows]),
                bytea_array([row.sketch for row in rows]),
                int_array([t for row in rows for t, _ in row.index_keys]),
                int_array([key for row in rows for _, key in row.index_keys]),
                int_array(itertools.accumulate(len(row.index_keys) for row in rows)),
                int_array([t for row in rows for t, _ in row.probe_keys]),
                int_array([key for row in rows for _, key in row.probe_keys]),
                int_array(itertools.accumulate(len(row.probe_keys) for row in rows)),
                arrays.lsh,
                arrays.cut_tables,
                arrays.cut_shifts,
                arrays.cut_masks,
                arrays.cut_lefts,
                None if locks is None else int_array(locks.ids),
                None if locks is None else bool_array(locks.shared),
                t.int8(GLOBAL_LOCK),
                self._async,
                now,
                t.int4(judge.radius),
                rule_parameter(judge.rule),
            ),
            prepare=True,
        ).fetchall()
        return [_verdict(row, result_row) for row, result_row in zip(rows, result, strict=True)]

    def _transaction(
        self,
        conn: Any,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        index_items: IndexItems,
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
                PAGES_AND_PROBE if server_supports(conn) else PAGES_AND_PROBE_BEFORE_14,
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
            return check_batch(rows, io, judge=judge, index_items=index_items, now=now)
        raise AssertionError("unreachable")  # ExitStack does not swallow exceptions

    # -- reading
    def near(
        self, probe_keys: Collection[BandKey], fingerprint: int, limit: int
    ) -> list[StoredPage]:
        """The distinct pages within ``limit`` of ``fingerprint`` among those with a band
        row under ``probe_keys``: one prepared statement in autocommit (one round trip, no
        transaction left open)."""
        keys = sorted(set(probe_keys))
        tables, values = int_array([t for t, _ in keys]), int_array([k for _, k in keys])
        for attempt in (1, 2):  # once more on a fresh connection if this one was lost
            try:
                with self._connection() as conn:
                    conn.autocommit = True
                    sql = NEAR if server_supports(conn) else NEAR_BEFORE_14
                    params = (
                        tables,
                        values,
                        self._types.int8(to_sql_int(fingerprint)),
                        self._types.int4(limit),
                    )
                    rows = conn.execute(sql, params, prepare=True).fetchall()
                return [stored_page(row) for row in rows]
            except _Retry as retry:
                if attempt == 2 or not retry.lost:
                    raise StoreError(
                        f"database error on {self._display_url}: {retry.reason}"
                    ) from retry.__cause__
        raise AssertionError("unreachable")

    # -- connections
    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """The psycopg connection of a pooled connection; a database error leaves as
        :class:`_Retry` (retryable or not), a lost connection is dropped from the pool."""
        import psycopg

        try:
            raw = self._engine.raw_connection()
        except SQLAlchemyError as exc:
            raise StoreError(f"database error on {self._display_url}: {error_reason(exc)}") from exc
        conn: Any = raw.driver_connection
        try:
            yield conn
        except psycopg.Error as exc:
            lost = not _release(raw, conn)
            reason = error_reason(exc)
            if not lost and exc.sqlstate not in RETRY_SQLSTATES:
                raise StoreError(f"database error on {self._display_url}: {reason}") from exc
            raise _Retry(reason, lost=lost) from exc
        except BaseException:
            _release(raw, conn)
            raise
        else:
            _release(raw, conn)


def _release(raw: Any, conn: Any) -> bool:
    """Give a pooled connection back as SQLAlchemy lent it (no transaction, autocommit
    off), or drop it when it is lost; False when it was lost."""
    import psycopg

    try:
        if not (conn.closed or conn.broken):
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()  # a failed write: psycopg forgets its prepared statements
            conn.autocommit = False
            raw.close()
            return True
    except psycopg.Error:
        pass
    raw.invalidate()
    return False


class _Retry(Exception):
    """A write that a fresh transaction (on a fresh connection, if ``lost``) may finish."""

    def __init__(self, reason: str, *, lost: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lost = lost


class _PipelinedIO(BatchIO):
    """batch.py's reader/writer over what round trip 1 fetched; :meth:`write` sends the
    changes and the committing Sync in round trip 2 (leaving pipeline mode)."""

    def __init__(
        self,
        conn: Any,
        types: _Types,
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


def _verdict(row: RowToCheck, result: Sequence[Any]) -> Verdict:
    """A row's verdict from the function's result row (kind, previous fingerprint, the
    match's and the boilerplate match's id, URL, fingerprint, distance, similarity)."""
    kind, previous = result[0], result[1]
    return Verdict(
        kind=VerdictKind(kind),
        url=row.url,
        fingerprint=row.fingerprint,
        duplicate_of=_match(result[2:7]),
        previous_fingerprint=None if previous is None else from_sql_int(previous),
        boilerplate_of=_match(result[7:12]),
    )


def _match(columns: Sequence[Any]) -> Match | None:
    page_id, url, fingerprint, distance, similarity = columns
    if page_id is None:
        return None
    return Match(url, from_sql_int(fingerprint), distance, page_id, similarity)


def near_matches(pages: Sequence[StoredPage], fingerprint: int, limit: int) -> list[Match]:
    """The pages within ``limit`` of ``fingerprint``, nearest first, then by URL."""
    matches = [
        Match(page.url, page.fingerprint, distance, page.page_id)
        for page in pages
        if (distance := (page.fingerprint ^ fingerprint).bit_count()) <= limit
    ]
    matches.sort(key=lambda m: (m.distance, m.url))
    return matches
