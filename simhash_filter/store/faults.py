"""Bounded waits and short outages of the store's writes (docs/distributed.md, "Faults").

- :class:`WaitBounds`: how long a write may wait for a lock (``lock_timeout``) and how long
  it retries a database server that went away (``outage_retry``). On PostgreSQL the bound
  is the session's ``lock_timeout`` (every lock wait: table locks, advisory locks), with
  ``statement_timeout`` and ``idle_in_transaction_session_timeout`` at
  :data:`STATEMENT_FACTOR` times it as a backstop, set when a session starts
  (:func:`session_options`); on SQLite it is the writer lock and the busy wait together.
- :func:`is_outage` and :func:`is_lock_timeout`: which database errors are which (by
  SQLSTATE, or by libpq's message when the connection never started).
- :class:`OutageRetry`: a write meeting an outage retries with backoff for at most
  ``outage_retry`` seconds; once one write has used that up, the next ones try once each
  until one gets through, so a long outage costs each page one connection attempt.
- :func:`lock_holders`: who holds the locks a write timed out on, as the server says it
  (``pg_locks`` and ``pg_stat_activity``), for the warning.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 5.0
"""Seconds a crawl's write waits for a lock another session holds, at most."""
DEFAULT_OUTAGE_RETRY = 5.0
"""Seconds a crawl's write retries a refused or lost connection before it gives up."""
STATEMENT_FACTOR = 4
"""``statement_timeout`` and ``idle_in_transaction_session_timeout``, in lock timeouts."""
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0

OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57P05"})
"""Administrator shutdown, crash shutdown, "cannot connect now" (starting up, shutting
down), idle session timeout; and every SQLSTATE of class 08 (connection exception)."""
LOCK_TIMEOUT_SQLSTATES = frozenset({"55P03", "57014"})
"""lock_not_available (``lock_timeout``), query_canceled (``statement_timeout``)."""
OUTAGE_MESSAGES = (
    "connection refused",
    "could not connect",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "server closed the connection unexpectedly",
    "terminating connection",
    "connection is lost",
    "connection is closed",
    "no connection to the server",
    "consuming input failed",
    "ssl syscall error",
)


@dataclass(frozen=True, slots=True)
class WaitBounds:
    """How long a write waits: for a lock (None: no bound but the back-end's own) and for
    a server to come back (0: not at all)."""

    lock_timeout: float | None = None
    outage_retry: float = 0.0

    def __post_init__(self) -> None:
        if self.lock_timeout is not None and not 0 < self.lock_timeout < float("inf"):
            raise ValueError(
                f"lock_timeout must be a number of seconds > 0, got {self.lock_timeout}"
            )
        if not 0 <= self.outage_retry < float("inf"):
            raise ValueError(
                f"outage_retry must be a number of seconds >= 0, got {self.outage_retry}"
            )

    def short_wait(self) -> float:
        """The lock wait of a page retried alone after its group timed out: a tenth of
        the bound, at most 0.25 s (a page that conflicts with no stuck lock needs none)."""
        bound = DEFAULT_LOCK_TIMEOUT if self.lock_timeout is None else self.lock_timeout
        return min(0.25, bound / 10)


def session_options(bounds: WaitBounds, existing: str | None = None) -> str | None:
    """libpq's ``options`` for a session with these bounds (``existing``, the URL's own
    options, after them so that they win); None when there is nothing to set."""
    if bounds.lock_timeout is None:
        return existing
    ms = max(1, round(1000 * bounds.lock_timeout))
    ours = (
        f"-c lock_timeout={ms} -c statement_timeout={STATEMENT_FACTOR * ms} "
        f"-c idle_in_transaction_session_timeout={STATEMENT_FACTOR * ms}"
    )
    return ours if not existing else f"{ours} {existing}"


def application_name() -> str:
    """The ``application_name`` of this process's sessions: names the crawler's pid, so
    a peer that times out on its locks can say which process held them."""
    return f"simhash-filter pid {os.getpid()}"


def _driver_error(exc: BaseException) -> BaseException:
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` (a driver error, or SQLAlchemy's around one) says the server is
    unreachable or went away, rather than that the statement failed."""
    error = _driver_error(exc)
    sqlstate = getattr(error, "sqlstate", None)
    if isinstance(sqlstate, str) and (sqlstate.startswith("08") or sqlstate in OUTAGE_SQLSTATES):
        return True
    if getattr(error, "sqlstate", None) is not None:
        return False
    message = str(error).lower()
    return any(text in message for text in OUTAGE_MESSAGES)


def is_lock_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's ``lock_timeout`` or ``statement_timeout``."""
    return getattr(_driver_error(exc), "sqlstate", None) in LOCK_TIMEOUT_SQLSTATES


class OutageRetry:
    """The outage retries of one store's writes (see the module doc); thread-safe."""

    def __init__(self, budget: float, *, sleep: Any = time.sleep) -> None:
        self.budget = budget
        self._sleep = sleep
        self._lock = threading.Lock()
        self._down = False  # a write used up its retry; no write got through since

    def start(self) -> OutageAttempt:
        """The retry state of one write."""
        with self._lock:
            budget = 0.0 if self._down else self.budget
        return OutageAttempt(self, time.monotonic() + budget)

    def succeeded(self) -> None:
        """A write got through: the next outage gets its full retry again."""
        if self._down:
            with self._lock:
                if self._down:
                    self._down = False
                    log.info("the database answers again")

    def gave_up(self) -> None:
        with self._lock:
            self._down = True


class OutageAttempt:
    """One write's retries: :meth:`again` sleeps the next backoff when time is left."""

    def __init__(self, policy: OutageRetry, deadline: float) -> None:
        self._policy = policy
        self._deadline = deadline
        self._delay = FIRST_BACKOFF
        self.retries = 0

    def again(self) -> bool:
        """Sleep the backoff and answer True while the retry lasts; False (and the
        policy's next writes try once) when it has run out."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            self._policy.gave_up()
            return False
        self._policy._sleep(min(self._delay, left))
        self._delay = min(2 * self._delay, MAX_BACKOFF)
        self.retries += 1
        return True


WRITE_BLOCKING_MODES = (
    "('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')"
)
"""The table lock modes that conflict with a writer's ``RowExclusiveLock``."""
HOLDERS_SQL = f"""
SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''),
       extract(epoch FROM now() - a.xact_start)::float8,
       (SELECT string_agg(DISTINCT l.mode || CASE WHEN l.locktype = 'relation'
                 THEN ' on ' || l.relation::regclass::text ELSE ' (' || l.locktype || ')' END,
               ', ')
          FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND (l.locktype = 'advisory'
            OR (l.locktype = 'relation' AND l.mode IN {WRITE_BLOCKING_MODES}))),
       EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
               AND l.locktype = 'relation' AND l.mode IN {WRITE_BLOCKING_MODES})
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid() AND a.datname = current_database()
  AND a.xact_start IS NOT NULL
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
              AND (l.locktype = 'advisory'
                   OR (l.locktype = 'relation' AND l.mode IN {WRITE_BLOCKING_MODES})))
ORDER BY a.xact_start
LIMIT 3
"""
"""The sessions holding advisory locks or a table lock that blocks writers, oldest
transaction first: the one a write timed out on is among them (after the timeout the
write waits for nothing, so ``pg_blocking_pids`` can no longer say it)."""


@dataclass(frozen=True, slots=True)
class LockHolder:
    """A session holding locks, as ``pg_stat_activity`` shows it; ``blocks_tables``: one of
    them is a table lock every writer waits for (a ``LOCK TABLE``, an ``ALTER TABLE``)."""

    pid: int
    application: str
    state: str
    seconds: float
    locks: str
    blocks_tables: bool = False

    def describe(self) -> str:
        application = f"{self.application!r}, " if self.application else ""
        return (
            f"backend pid {self.pid} ({application}{self.state or 'unknown state'}, "
            f"in a transaction for {self.seconds:.1f} s, holding {self.locks or 'locks'})"
        )


def lock_holders(fetch: Callable[[str], Sequence[Sequence[Any]]]) -> list[LockHolder]:
    """The sessions that may hold what a write timed out on (:data:`HOLDERS_SQL`);
    ``fetch`` runs a statement and returns its rows."""
    rows = fetch(HOLDERS_SQL)
    return [
        LockHolder(int(r[0]), str(r[1]), str(r[2]), float(r[3] or 0.0), str(r[4] or ""), bool(r[5]))
        for r in rows
    ]


def blocks_every_write(holders: list[LockHolder] | None) -> bool:
    """Whether a holder's lock is one every write waits for (then trying the other pages
    of a group alone cannot help)."""
    return any(holder.blocks_tables for holder in holders or ())


def busy_message(
    display_url: str, reason: str, holders: list[LockHolder] | None, bound: float | None
) -> str:
    """The one line a lock timeout is reported with: the server's reason, the bound and,
    where the server says it, who held the lock."""
    waited = (
        " (SIMHASH_FILTER_LOCK_TIMEOUT)"
        if bound is None
        else f" (waited {bound:.3g} s, a page retried alone: SIMHASH_FILTER_LOCK_TIMEOUT)"
    )
    if holders is None:
        who = "the lock holder is not known"
    elif not holders:
        who = "no session holds a lock any more"
    else:
        who = "held by " + "; ".join(holder.describe() for holder in holders)
    return f"database busy on {display_url}: {reason}{waited}; {who}"
