"""Engines for the store: SQLite tuned for many writers, PostgreSQL as given.

SQLite (DESIGN.md invariants 3 and 4):

- WAL journal, so readers never block the writer and a killed process leaves a
  database that opens (the WAL is replayed or ignored, never half-applied);
- ``synchronous=NORMAL``: in WAL mode a commit survives the *process* being killed
  (SIGKILL); only a power cut may lose the last commits. ``durable=True`` sets FULL;
- a busy timeout (60 s, or the URL's ``?timeout=<seconds>``), so writers queue instead of
  failing with "database is locked"; past it, the write fails (it is not retried);
- SQLAlchemy emits the BEGIN itself (the pysqlite recipe in SQLAlchemy's SQLite
  dialect docs): ``BEGIN IMMEDIATE`` for write transactions, taking the write lock
  *before* the check reads, so check-and-add is atomic across processes; plain BEGIN
  for reads, which then see one consistent snapshot.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError

from .records import DatabaseNotFoundError, StoreError

try:
    import fcntl
except ImportError:  # Windows: BEGIN IMMEDIATE and the busy timeout do it alone
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 60.0
WRITE_OPTION = "simhash_filter_write"
"""Execution option on a Connection: its next BEGIN is a write transaction."""


def parse_url(url: str | URL) -> URL:
    """The SQLAlchemy URL, or a StoreError naming the (password-free) problem."""
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {exc}") from None


def display_url(url: str | URL) -> str:
    """The URL as safe to log or show: the password is replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def is_sqlite(url: URL) -> bool:
    """True for any SQLite driver."""
    return url.get_backend_name() == "sqlite"


def sqlite_path(url: URL) -> Path | None:
    """The database file of a SQLite URL, None for an in-memory database."""
    database = url.database
    if not database or database == ":memory:" or url.query.get("mode") == "memory":
        return None
    if database.startswith("file:"):
        database = database[len("file:") :].split("?", 1)[0]
    return Path(database)


def busy_timeout(url: URL) -> float:
    """How long (seconds) a SQLite writer waits for another process's write lock: the URL's
    ``?timeout=`` (pysqlite's own parameter), else :data:`BUSY_TIMEOUT_S`."""
    value = url.query.get("timeout")
    if value is None:
        return BUSY_TIMEOUT_S
    raw = value if isinstance(value, str) else value[-1]
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise StoreError(f"timeout in a SQLite URL must be a number of seconds >= 0, got {raw!r}")
    return seconds


def make_engine(url: URL, *, create: bool, durable: bool = False) -> Engine:
    """An engine for ``url``; with ``create=False`` a missing SQLite file is an error
    (SQLite would otherwise create an empty file on connect)."""
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None and not path.exists():
            if not create:
                raise DatabaseNotFoundError(f"no database at {path} (the file does not exist)")
            if not path.parent.is_dir():
                raise StoreError(f"cannot create {path}: folder {path.parent} does not exist")
        timeout = busy_timeout(url)
        engine = create_engine(url, connect_args={"timeout": timeout})
        _install_sqlite_events(engine, durable=durable, timeout=timeout)
        return engine
    # no pool_pre_ping (a round trip per call): a dropped connection fails one
    # transaction, which FingerprintStore retries on a fresh one
    return create_engine(url)


def _install_sqlite_events(engine: Engine, *, durable: bool, timeout: float) -> None:
    synchronous = "FULL" if durable else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin); pysqlite must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


class WriterQueue:
    """Queues the writers of one SQLite file: a thread lock for this process and, where
    the OS has ``flock``, an exclusive lock on ``<database>-lock`` for all processes.

    ``BEGIN IMMEDIATE`` alone is correct, but a writer that finds the database busy
    sleeps in SQLite's busy handler (1, 2, 5, 10 ... ms); a waiter on ``flock`` wakes
    the moment the lock is free, so several crawler processes share one file without
    losing throughput to sleeps. The file lock is only a queue: correctness never
    depends on it, so a writer that has waited ``timeout`` seconds for it (its holder
    stopped, say) goes on without it, to ``BEGIN IMMEDIATE`` and SQLite's own busy timeout.
    """

    def __init__(self, database: Path | None, timeout: float = 60.0) -> None:
        self._thread_lock = threading.Lock()
        self._timeout = timeout
        self._holding = False
        self._database = database
        self._fd: int | None = None
        if database is not None and fcntl is not None:
            try:
                self._fd = os.open(f"{database}-lock", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:  # read-only folder: BEGIN IMMEDIATE still queues
                log.debug("no writer lock file next to %s: %s", database, exc)

    def __enter__(self) -> None:
        self._thread_lock.acquire()
        if self._fd is not None:
            try:
                self._holding = self._flock(self._fd)
            except BaseException:
                self._thread_lock.release()
                raise

    def _flock(self, fd: int) -> bool:
        """Take the file lock, polling (1 ms, doubling to 8 ms) for at most the timeout."""
        deadline = time.monotonic() + self._timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log.warning(
                        "the writer lock %s-lock was held for more than %.3g s; writing "
                        "without it (SQLite's own locking still applies)",
                        self._database,
                        self._timeout,
                    )
                    return False
                time.sleep(pause)
                pause = min(pause * 2, 0.008)

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None and self._holding:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                self._holding = False
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
