"""Write transactions and the locks that make check-and-add atomic (docs/design.md).

- SQLite: ``BEGIN IMMEDIATE`` (see engine.py) takes the database's write lock before the
  check reads, so writers from every thread and process run one after another; the
  file's :class:`~simhash_filter.store.engine.WriterQueue` queues them in front of it so
  they do not spin in SQLite's busy handler.
- PostgreSQL: advisory locks on a hash of the page's URL (:func:`url_lock_id`) and of
  each of its table keys (:func:`key_lock_id`), taken in sorted order at the start of the
  transaction (:func:`write_locks`): the URL and the keys the page is stored under
  exclusive, the further keys its probe looks up shared. Of two pages within distance
  k, each probes a key the other is stored under (the scheme's guarantee), so one's
  shared lock meets the other's exclusive one and their transactions serialize; pages
  whose probes merely overlap run in parallel. Bulk loads and ``reindex`` take one
  exclusive database-wide lock (:data:`GLOBAL_LOCK`) instead; every single write holds
  it shared.

:class:`WriteTransactions` runs one unit of work in such a transaction, committed on
return, retried on deadlocks, serialization failures and lost insert races (the
"sqlalchemy" write path). The PostgreSQL write paths take the same locks
(:func:`write_locks`): pg_pipeline.py in its first round trip, decide_function.sql first.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeVar

import mmh3
from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from .engine import WRITE_OPTION, WriterQueue, error_reason
from .faults import (
    OutageRetry,
    blocks_every_write,
    busy_message,
    is_lock_timeout,
    is_outage,
    lock_holders,
)
from .records import StoreBusy, StoreError, StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

GLOBAL_LOCK = 0x53696D4861736846  # "SimHashF": bulk writers exclusive, single writers shared
SCHEMA_LOCK = 0x53696D4861736853  # "SimHashS": creating the tables
KEY_LOCKED_BATCH = 64
"""add_many batches up to this size (the pipeline's group commit) lock their URLs and table
keys, like check_and_add, instead of the whole database: in consecutive parts whose locks
stay within :data:`MAX_KEY_LOCKS` (:func:`lock_parts`), one transaction each, so the
group commits of concurrent crawlers do not queue on the database-wide lock."""
MAX_KEY_LOCKS = 1024
"""A write whose rows need more advisory locks than this (a multi-index scheme probes
hundreds to thousands of keys a page at k >= 7) takes the database-wide lock exclusively
instead: PostgreSQL's lock table is shared by all sessions (max_locks_per_transaction x
max_connections slots)."""
WRITE_ATTEMPTS = 8
RETRY_SQLSTATES = frozenset(
    {"40001", "40P01", "23505"}
)  # serialization, deadlock, unique violation


TAKE_LOCKS = (
    # unnest keeps the arrays' (sorted) order: the locks are taken in that order
    "count(CASE WHEN s THEN pg_advisory_xact_lock_shared(x) ELSE pg_advisory_xact_lock(x) END) "
    "FROM unnest(CAST({ids} AS bigint[]), CAST({shared} AS boolean[])) "
    "WITH ORDINALITY AS u(x, s, i)"
)
"""Takes a :class:`WriteLocks`' locks (a select list and FROM clause; ``{ids}`` and
``{shared}`` are its parameters' placeholders)."""


def key_lock_id(table_no: int, key: int) -> int:
    """The PostgreSQL advisory lock id (signed 64-bit) of one table key."""
    return int(mmh3.hash64(key.to_bytes(8, "little"), seed=table_no, signed=True)[0])


def url_lock_id(url: str) -> int:
    """The PostgreSQL advisory lock id of a canonical URL."""
    return int(mmh3.hash64(url.encode("utf-8"), seed=0x55524C, signed=True)[0])


class WriteLocks(NamedTuple):
    """The advisory locks of one write, in the order they are taken: ``ids`` sorted, each
    exclusive or (``shared``) shared."""

    ids: list[int]
    shared: list[bool]


PageKeys = tuple[str, Iterable[tuple[int, int]], Iterable[tuple[int, int]]]
"""A page as the lock functions take it: canonical URL, index keys, probe keys, each key a
(table_no, key) pair."""


class _PageLocks(NamedTuple):
    exclusive: set[int]  # the URL and the keys the page is stored under
    probed: set[int]  # the keys its probe looks up


def _page_locks(
    url: str, index_keys: Iterable[tuple[int, int]], probe_keys: Iterable[tuple[int, int]]
) -> _PageLocks:
    exclusive = {url_lock_id(url)}
    exclusive.update(key_lock_ids(index_keys))
    return _PageLocks(exclusive, set(key_lock_ids(probe_keys)))


def _merged(pages: Iterable[_PageLocks]) -> WriteLocks:
    exclusive: set[int] = set()
    probed: set[int] = set()
    for page in pages:
        exclusive |= page.exclusive
        probed |= page.probed
    ids = sorted(exclusive | probed)
    return WriteLocks(ids, [x not in exclusive for x in ids])


def write_locks(pages: Iterable[PageKeys]) -> WriteLocks:
    """The advisory locks of a write of ``pages``: the URLs and index keys exclusive, the
    probe keys that are not also one of those shared (see the module doc for why that is
    enough: under multi-index hashing a near-duplicate's index key is among the query's
    probe keys, not among its index keys)."""
    return _merged(_page_locks(*page) for page in pages)


def key_lock_ids(keys: Iterable[tuple[int, int]]) -> list[int]:
    """:func:`key_lock_id` of each (table_no, key), in one comprehension (a page's
    hundreds of probe keys: no Python call per key)."""
    hash64 = mmh3.hash64
    return [hash64(key.to_bytes(8, "little"), seed=t, signed=True)[0] for t, key in keys]


class LockPart(NamedTuple):
    """Consecutive pages of a write and their locks (:func:`write_locks` of them)."""

    pages: range
    locks: WriteLocks


def lock_parts(pages: Sequence[PageKeys], limit: int = MAX_KEY_LOCKS) -> list[LockPart]:
    """``pages`` cut into consecutive parts whose locks stay within ``limit``, each as
    large as it can be, with those locks (each page's hashed once); a page that alone
    needs more is a part of its own (its write takes the database-wide lock)."""
    each = [_page_locks(*page) for page in pages]
    bounds = [0]
    held: set[int] = set()
    for n, page in enumerate(each):
        ids = page.exclusive | page.probed
        if n > bounds[-1] and len(held | ids) > limit:
            bounds.append(n)
            held = set()
        held |= ids
    bounds.append(len(each))
    return [
        LockPart(range(a, b), _merged(each[a:b])) for a, b in itertools.pairwise(bounds) if a < b
    ]


def take_pg_locks(conn: Connection, *, locks: WriteLocks | None) -> None:
    """Take the transaction's advisory locks: the global one exclusive (``locks`` None, a
    bulk write), or the global one shared and then ``locks`` in their (sorted) order."""
    if locks is None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": GLOBAL_LOCK})
        return
    conn.execute(text("SELECT pg_advisory_xact_lock_shared(:g)"), {"g": GLOBAL_LOCK})
    if locks.ids:
        conn.execute(
            text("SELECT " + TAKE_LOCKS.format(ids=":ids", shared=":shared")),
            {"ids": locks.ids, "shared": locks.shared},
        )


def retryable(exc: DBAPIError) -> bool:
    """True for errors a fresh transaction may not meet: a lost connection, a deadlock, a
    serialization failure, SQLite's busy lock, a lost race to insert one URL."""
    if exc.connection_invalidated:  # the server went away; the pool reconnects
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in RETRY_SQLSTATES:
        return True
    message = str(exc.orig).lower()
    return "database is locked" in message or "unique constraint failed: pages.url" in message


class WriteTransactions:
    """Runs units of work in write transactions on one engine (see the module doc), each
    wait bounded (faults.py): a lock wait by the store's lock timeout (on SQLite the
    writer lock and the busy wait together, counted once), a server that went away by
    its outage retry."""

    def __init__(
        self,
        engine: Engine,
        *,
        display_url: str,
        writer_queue: WriterQueue | None,
        busy_timeout: float,
        before_write: Callable[[], None] | None = None,
        outage: OutageRetry | None = None,
    ) -> None:
        self._engine = engine
        self._before_write = before_write  # SQLite: starts the store's checkpoint thread
        self._display_url = display_url
        self._sqlite = engine.dialect.name == "sqlite"
        self._busy_timeout = busy_timeout
        self._queue = writer_queue
        self._outage = outage or OutageRetry(0.0)

    def run(
        self,
        work: Callable[[Connection], T],
        *,
        locks: WriteLocks | None = None,
        wait: float | None = None,
    ) -> T:
        """Run ``work`` in one write transaction, committed on return, on PostgreSQL under
        ``locks`` (None: the database-wide lock exclusive); retried when the database
        reports a deadlock, a serialization failure or a lost insert race, and while a
        server outage lasts (its retry). ``wait``: the lock wait of this write (None: the
        store's bound). A lock wait past it is :class:`StoreBusy`."""
        where = self._display_url
        if self._before_write is not None:
            self._before_write()
        budget = self._busy_timeout if wait is None else min(wait, self._busy_timeout)
        started = time.monotonic()
        outage = self._outage.start()
        attempt = 0
        while True:
            attempt += 1
            try:
                result = self._attempt(work, locks, budget - (time.monotonic() - started), wait)
            except (IntegrityError, OperationalError) as exc:
                reason = error_reason(exc)
                if self._sqlite and "database is locked" in reason:
                    waited = time.monotonic() - started
                    if waited >= 0.95 * budget:  # the bound ran out: do not wait again
                        raise StoreBusy(
                            f"database busy on {where}: database is locked "
                            f"(another process held the write lock for more than {waited:.3g} s; "
                            "SIMHASH_FILTER_LOCK_TIMEOUT or ?timeout=<seconds> in the URL "
                            "waits longer)",
                            whole_database=True,
                        ) from exc
                elif not self._sqlite and is_lock_timeout(exc):
                    raise self._busy(reason, wait) from exc
                elif not self._sqlite and is_outage(exc) and not exc.connection_invalidated:
                    if outage.again():
                        log.debug("connection lost or refused, retrying: %s", reason)
                        continue
                    raise StoreUnavailable(
                        f"database unreachable on {where}: {reason} (retried for "
                        f"{self._outage.budget:.3g} s: SIMHASH_FILTER_OUTAGE_RETRY)"
                    ) from exc
                if attempt >= WRITE_ATTEMPTS or not retryable(exc):
                    raise StoreError(f"database error on {where}: {reason}") from exc
                log.debug("write conflict (attempt %d), retrying: %s", attempt, reason)
                time.sleep(0.005 * attempt)
            except SQLAlchemyError as exc:
                raise StoreError(f"database error on {where}: {error_reason(exc)}") from exc
            except Exception as exc:  # a driver error the pool's reconnect raises bare
                if self._sqlite or isinstance(exc, StoreError) or not is_outage(exc):
                    raise
                if outage.again():
                    log.debug("connection lost or refused, retrying: %s", error_reason(exc))
                    continue
                raise StoreUnavailable(
                    f"database unreachable on {where}: {error_reason(exc)} (retried for "
                    f"{self._outage.budget:.3g} s: SIMHASH_FILTER_OUTAGE_RETRY)"
                ) from exc
            else:
                self._outage.succeeded()
                return result

    def _attempt(
        self,
        work: Callable[[Connection], T],
        locks: WriteLocks | None,
        budget: float,
        wait: float | None,
    ) -> T:
        """One write transaction; on SQLite the busy wait gets what the writer lock left
        of ``budget``; on PostgreSQL ``wait`` is the transaction's ``lock_timeout``."""
        queue = self._queue
        waited = queue.enter(max(0.0, budget)) if queue is not None else 0.0
        try:
            with self._engine.connect() as conn:
                conn.execution_options(**{WRITE_OPTION: True})
                busy = self._sqlite and (waited > 0.001 or budget < self._busy_timeout)
                if busy:  # the busy wait gets only what is left of the bound
                    _set_busy_timeout(conn, max(0.0, budget - waited))
                try:
                    with conn.begin():
                        if not self._sqlite:
                            if wait is not None:
                                conn.execute(
                                    text("SELECT set_config('lock_timeout', :t, true)"),
                                    {"t": f"{max(1, round(1000 * wait))}ms"},
                                )
                            take_pg_locks(conn, locks=locks)
                        return work(conn)
                finally:
                    if busy and not conn.invalidated:
                        _set_busy_timeout(conn, self._busy_timeout)
        finally:
            if queue is not None:
                queue.__exit__(None, None, None)

    def _busy(self, reason: str, wait: float | None) -> StoreBusy:
        """The error of a PostgreSQL lock timeout, naming the lock holders."""
        holders = None
        try:
            with self._engine.connect() as conn:
                holders = lock_holders(lambda sql: conn.exec_driver_sql(sql).fetchall())
                conn.rollback()
        except SQLAlchemyError as exc:
            log.debug("could not read who holds the locks: %s", exc)
        return StoreBusy(
            busy_message(self._display_url, reason, holders, wait),
            whole_database=blocks_every_write(holders),
        )


def _set_busy_timeout(conn: Connection, seconds: float) -> None:
    """SQLite's busy timeout on the connection's DB-API connection (outside a transaction:
    SQLAlchemy's own ``execute`` would begin one)."""
    raw = conn.connection.driver_connection
    if raw is not None:
        raw.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
