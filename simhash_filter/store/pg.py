"""What the two PostgreSQL write paths share: psycopg connections lent by the engine's
pool, the retries of a write, the texts written after it, and ``near()`` in one statement.

A write runs on the psycopg connection under a pooled SQLAlchemy connection and is
retried (on a fresh connection when the old one was lost) after a deadlock, a
serialization failure or a lost insert race. ``near()`` runs one prepared statement in
autocommit: it leaves no transaction open, so the pool's reset on return sends no
``ROLLBACK`` (after which psycopg deallocates every prepared statement of the
connection). Every parameter is typed (encoding.py), so each statement is prepared once
per connection whatever the values and the batch size.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from simhash_filter.index.schemes import IndexScheme, TableKey

from . import key_columns as key_columns
from .batch import Judge, RowToCheck, StoredPage
from .declared_canonicals import write_hints_after
from .encoding import PgTypes, int_array, to_sql_int
from .engine import error_reason
from .faults import (
    OutageRetry,
    blocks_every_write,
    busy_message,
    is_lock_timeout,
    is_outage,
    lock_holders,
)
from .locks import RETRY_SQLSTATES, WRITE_ATTEMPTS, WriteLocks
from .records import Match, StoreBusy, StoreError, StoreUnavailable, Verdict
from .statements import stored_page
from .texts import write_texts_after

log = logging.getLogger(__name__)

MIN_SERVER_VERSION = 140000
"""``bit_count(bit)`` and ``bit_xor`` arrived in PostgreSQL 14."""


def server_supports(conn: Any) -> bool:
    """True when the server has ``bit_count`` (the function's and the probes' popcount)."""
    return int(conn.info.server_version) >= MIN_SERVER_VERSION


def popcount_sql(x: str, *, portable: bool) -> str:
    """SQL for the number of set bits of the ``int8`` expression ``x``: ``bit_count`` (14
    and later) or, ``portable``, arithmetic any PostgreSQL has: the 63 low bits counted in
    parallel (SWAR: pairs, nibbles, bytes; every step stays non-negative, so no ``int8``
    overflow), their byte counts summed by ``mod(., 255)`` (256 = 1 mod 255, and the sum is
    at most 63), plus the sign bit."""
    if not portable:
        return f"bit_count(({x})::bit(64))"
    y = f"({x} & 9223372036854775807)"
    pairs = f"({y} - (({y} >> 1) & 6148914691236517205))"
    nibbles = f"(({pairs} & 3689348814741910323) + (({pairs} >> 2) & 3689348814741910323))"
    octets = f"(({nibbles} + ({nibbles} >> 4)) & 1085102592571150095)"
    return f"(mod({octets}, 255) + ({x} < 0)::int4)"


@functools.lru_cache(maxsize=16)
def near_sql(n_tables: int, *, bit_count: bool) -> str:
    """near(): the pages within the limit of the fingerprint among those under the probe
    keys, filtered on the server (the probe's other hits never leave it); without
    ``bit_count`` (before 14) the portable popcount, which names the fingerprint more than
    once, so it is a column of its own."""
    hits = key_columns.hits_sql(n_tables, "q.t", "q.key", "id, fingerprint")
    popcount = popcount_sql("b.fingerprint # f.fp", portable=not bit_count)
    return (
        "SELECT p.id, p.url, p.domain, p.fingerprint, p.text_length, p.sketch FROM pages p "
        "WHERE p.id IN (SELECT b.id "
        "FROM unnest(%s::int2[], %s::int8[]) AS q(t, key) CROSS JOIN (SELECT %s::int8) AS f(fp) "
        f"CROSS JOIN LATERAL {hits} AS b "
        f"WHERE {popcount} <= %s::int4)"
    )


class Retry(Exception):
    """A write that a fresh transaction (on a fresh connection, if ``lost``) may finish;
    ``busy``: it timed out on a lock (retried only by a caller that chooses to)."""

    def __init__(self, reason: str, *, lost: bool, busy: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lost = lost
        self.busy = busy


@contextmanager
def psycopg_connection(engine: Engine, display_url: str) -> Iterator[Any]:
    """The psycopg connection of a pooled connection; a database error leaves as
    :class:`Retry` (retryable, a lock timeout or a lost connection: a server that cannot
    be reached is one too) or :class:`StoreError`; a lost connection is dropped from the
    pool."""
    import psycopg

    try:
        raw = engine.raw_connection()
    except (SQLAlchemyError, psycopg.Error) as exc:  # (a pool's reconnect raises it bare)
        if is_outage(exc):
            raise Retry(error_reason(exc), lost=True) from exc
        raise StoreError(f"database error on {display_url}: {error_reason(exc)}") from exc
    conn: Any = raw.driver_connection
    try:
        yield conn
    except psycopg.Error as exc:
        lost = not _release(raw, conn)
        reason = error_reason(exc)
        if is_lock_timeout(exc):
            raise Retry(reason, lost=False, busy=True) from exc
        if not lost and exc.sqlstate not in RETRY_SQLSTATES and not is_outage(exc):
            raise StoreError(f"database error on {display_url}: {reason}") from exc
        raise Retry(reason, lost=lost or is_outage(exc)) from exc
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


class PgWritePath:
    """The part of a PostgreSQL write path its two kinds share; a kind implements
    :meth:`_write`, one attempt of a write on a connection."""

    name = ""

    def __init__(
        self,
        engine: Engine,
        *,
        display_url: str,
        durable: bool | None,
        bit_count: bool,
        outage: OutageRetry | None = None,
    ) -> None:
        self._engine = engine
        self._display_url = display_url
        self._types = PgTypes()
        self._async = durable is False  # synchronous_commit = off for the transaction
        self._bit_count = bit_count  # False: the portable popcount (before PostgreSQL 14)
        self._outage = outage or OutageRetry(0.0)

    def check_and_add(
        self,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
        texts: Sequence[bytes | None],
        hints: Sequence[str | None] = (),
        wait: float | None = None,
    ) -> list[Verdict]:
        """:meth:`WritePath.check_and_add`: the write, retried on a deadlock, a serialization
        failure, a lost insert race, and while an outage lasts (its retry, with backoff);
        the texts, and the hints, in a transaction of their own once the verdicts are
        committed. ``wait``: the lock wait of this write (None: the session's
        ``lock_timeout``); a lock wait past it is :class:`StoreBusy`, naming the holders."""
        outage = self._outage.start()
        attempt = 0
        while True:
            attempt += 1
            try:
                with (
                    psycopg_connection(self._engine, self._display_url) as conn,
                    _lock_timeout(conn, wait),
                ):
                    verdicts = self._write(conn, rows, locks, judge=judge, scheme=scheme, now=now)
                break
            except Retry as retry:
                if retry.busy:
                    raise self._busy(retry.reason, wait) from retry.__cause__
                if retry.lost and outage.again():
                    log.debug("connection lost or refused, retrying: %s", retry.reason)
                    continue
                if retry.lost and self._outage.budget > 0:  # (0: retried as a conflict)
                    raise StoreUnavailable(
                        f"database unreachable on {self._display_url}: {retry.reason} "
                        f"(retried for {self._outage.budget:.3g} s: SIMHASH_FILTER_OUTAGE_RETRY)"
                    ) from retry.__cause__
                if attempt >= WRITE_ATTEMPTS:
                    error = StoreUnavailable if retry.lost else StoreError
                    raise error(
                        f"database error on {self._display_url}: {retry.reason}"
                    ) from retry.__cause__
                log.debug("write conflict (attempt %d), retrying: %s", attempt, retry.reason)
                time.sleep(0.005 * attempt)
        self._outage.succeeded()
        if any(blob is not None for blob in texts):
            try:
                write_texts_after(self._engine, verdicts, texts, now)
            except (SQLAlchemyError, StoreError):  # the verdicts are committed: keep them
                log.warning("could not store the texts of %d pages", len(rows), exc_info=True)
        if any(hint is not None for hint in hints):
            try:
                write_hints_after(self._engine, verdicts, hints, now)
            except (SQLAlchemyError, StoreError):  # evidence only: the verdicts stand
                log.warning("could not store the hints of %d pages", len(rows), exc_info=True)
        return verdicts

    def _busy(self, reason: str, wait: float | None) -> StoreBusy:
        """The error of a lock timeout, naming the lock holders the server shows."""
        holders = None
        try:
            with psycopg_connection(self._engine, self._display_url) as conn:
                conn.autocommit = True
                holders = lock_holders(lambda sql: conn.execute(sql).fetchall())
        except (Retry, StoreError) as exc:
            log.debug("could not read who holds the locks: %s", exc)
        return StoreBusy(
            busy_message(self._display_url, reason, holders, wait),
            whole_database=blocks_every_write(holders),
        )

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
        raise NotImplementedError

    def near(
        self, probe_keys: Collection[TableKey], fingerprint: int, limit: int, *, scheme: IndexScheme
    ) -> list[Match]:
        """:meth:`WritePath.near`: one prepared statement in autocommit (one round trip,
        no transaction left open)."""
        keys = sorted(set(probe_keys))
        tables, values = int_array([t for t, _ in keys]), int_array([k for _, k in keys])
        for attempt in (1, 2):  # once more on a fresh connection if this one was lost
            try:
                with psycopg_connection(self._engine, self._display_url) as conn:
                    conn.autocommit = True
                    params = (
                        tables,
                        values,
                        self._types.int8(to_sql_int(fingerprint)),
                        self._types.int4(limit),
                    )
                    sql = near_sql(scheme.n_tables, bit_count=self._bit_count)
                    rows = conn.execute(sql, params, prepare=True).fetchall()
                return near_matches([stored_page(row) for row in rows], fingerprint, limit)
            except Retry as retry:
                if attempt == 2 or not retry.lost:
                    raise StoreError(
                        f"database error on {self._display_url}: {retry.reason}"
                    ) from retry.__cause__
        raise AssertionError("unreachable")


@contextmanager
def _lock_timeout(conn: Any, wait: float | None) -> Iterator[None]:
    """``lock_timeout`` of the session set to ``wait`` seconds for the block (None: the
    session's own), and reset after it (to the value the session started with); a
    connection that cannot be reset is closed, so the pool drops it."""
    if wait is None:
        yield
        return
    import psycopg

    conn.autocommit = True
    conn.execute(
        "SELECT set_config('lock_timeout', %s, false)", (f"{max(1, round(1000 * wait))}ms",)
    )
    try:
        yield
    finally:
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.autocommit = True
            conn.execute("RESET lock_timeout")
        except psycopg.Error:
            conn.close()


def near_matches(pages: Sequence[StoredPage], fingerprint: int, limit: int) -> list[Match]:
    """The pages within ``limit`` of ``fingerprint``, nearest first, then by URL."""
    matches = [
        Match(page.url, page.fingerprint, distance, page.page_id)
        for page in pages
        if (distance := (page.fingerprint ^ fingerprint).bit_count()) <= limit
    ]
    matches.sort(key=lambda m: (m.distance, m.url))
    return matches
