"""Engines for the store: SQLite tuned for many writers, PostgreSQL as given (plus a
connect timeout, and pooled connections the server closed while idle replaced at checkout).

SQLite (atomic check-and-add, nothing admitted lost: docs/design.md):

- WAL journal, so readers never block the writer and a killed process leaves a
  database that opens (the WAL is replayed or ignored, never half-applied);
- the WAL copied into the database by a thread of the store's (checkpointer.py), not by
  the commit that outgrows it, so a commit does not wait for the copy and its fsync;
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
import select
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from .checkpointer import BACKSTOP_FRAMES, WAL_SIZE_LIMIT
from .faults import WaitBounds, application_name, session_options
from .records import DatabaseNotFoundError, StoreError
from .schema import meta_table
from .urls import display_url as display_url  # (re-exported: the store imports it here)

try:
    import fcntl
except ImportError:  # Windows: BEGIN IMMEDIATE and the busy timeout do it alone
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10
"""Seconds a PostgreSQL connection may take to be made (libpq's ``connect_timeout``)."""
WRITE_OPTION = "simhash_filter_write"
"""Execution option on a Connection: its next BEGIN is a write transaction."""


SUPPORTED_BACKENDS = ("sqlite", "postgresql")
"""The back-ends the store runs on."""
BACKEND_ALIASES = {"postgres": "postgresql"}
"""Back-end names other tools take (``postgres://``: Heroku, libpq) and SQLAlchemy does not."""
POSTGRESQL_EXTRA = 'pip install "simhash-filter[postgresql]"'
"""What installs the PostgreSQL driver the store uses (psycopg 3)."""


def parse_url(url: str | URL) -> URL:
    """The SQLAlchemy URL of a supported back-end whose driver imports, or a StoreError
    in one line naming the (password-free) problem and what to install."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:  # (neither message quotes the URL)
        raise StoreError(f"not a database URL: {exc}") from None
    parsed = _supported(parsed)
    _check_driver(parsed)
    return parsed


def _supported(url: URL) -> URL:
    """``url`` with an aliased back-end name made SQLAlchemy's, or a StoreError for a
    back-end the store does not run on."""
    backend, plus, driver = url.drivername.partition("+")
    backend = BACKEND_ALIASES.get(backend, backend)
    if backend not in SUPPORTED_BACKENDS:
        raise StoreError(
            f"{backend} databases are not supported: the index lives in SQLite "
            "(sqlite:///dedup.db, or a file path) or PostgreSQL (postgresql://user@host/dbname)"
        )
    return url.set(drivername=backend + plus + driver)


def _check_driver(url: URL) -> None:
    """A StoreError naming what to install when ``url``'s driver does not import (a
    traceback ending in ModuleNotFoundError otherwise, at the first connection)."""
    try:
        url.get_dialect().import_dbapi()
    except NoSuchModuleError:
        raise StoreError(
            f"no driver {url.get_driver_name()!r} for {url.get_backend_name()} in SQLAlchemy "
            f"(e.g. postgresql+psycopg://user@host/dbname)"
        ) from None
    except ImportError as exc:
        missing = exc.name or url.get_driver_name()
        hint = POSTGRESQL_EXTRA if url.get_driver_name() == "psycopg" else f"pip install {missing}"
        raise StoreError(
            f"the {url.get_backend_name()} driver is not installed (no module named "
            f"{missing!r}): {hint}"
        ) from None


def first_line(message: str) -> str:
    """The first non-blank line of a message (a one-line error for a person)."""
    stripped = message.strip()
    return stripped.splitlines()[0] if stripped else message


def error_reason(exc: BaseException) -> str:
    """The first line of a database error: the driver's own message when SQLAlchemy wraps
    one (SQLAlchemy's adds the statement, its parameters and a link)."""
    orig = getattr(exc, "orig", None)
    return first_line(str(orig if orig is not None else exc))


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


def new_sqlite_file(url: URL) -> Path | None:
    """The database file of a SQLite URL when it does not exist yet (connecting will
    create it), else None."""
    path = sqlite_path(url) if is_sqlite(url) else None
    return path if path is not None and not path.exists() else None


def remove_if_empty(path: Path) -> None:
    """Remove a database file that connecting created and nothing was written to (on a full
    disk SQLite creates the file, then fails to write its header), so no empty file is left
    for the next run to take for a database. Called with the writer lock held, only for a
    file that did not exist before, so another process's database is never removed."""
    try:
        if path.stat().st_size == 0:
            path.unlink()
    except OSError as exc:
        log.debug("cannot remove the empty database file %s: %s", path, exc)


def busy_timeout(url: URL, default: float | None = None) -> float:
    """How long (seconds) a SQLite writer waits for another process's write lock, the
    writer lock and SQLite's busy wait together: the URL's ``?timeout=`` (pysqlite's own
    parameter), else ``default`` (the crawl's ``SIMHASH_FILTER_LOCK_TIMEOUT``), else
    :data:`BUSY_TIMEOUT_S`."""
    value = url.query.get("timeout")
    if value is None:
        return BUSY_TIMEOUT_S if default is None else default
    raw = value if isinstance(value, str) else value[-1]
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise StoreError(f"timeout in a SQLite URL must be a number of seconds >= 0, got {raw!r}")
    return seconds


def make_engine(
    url: URL, *, create: bool, durable: bool = False, bounds: WaitBounds | None = None
) -> Engine:
    """An engine for ``url``; with ``create=False`` a missing SQLite file is an error
    (SQLite would otherwise create an empty file on connect). ``bounds``: the lock wait
    of every write (faults.py)."""
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None and not path.exists():
            if not create:
                raise DatabaseNotFoundError(f"no database at {path} (the file does not exist)")
            if not path.parent.is_dir():
                raise StoreError(f"cannot create {path}: folder {path.parent} does not exist")
        timeout = busy_timeout(url, bounds.lock_timeout if bounds else None)
        engine = create_engine(url, connect_args={"timeout": timeout})
        _install_sqlite_events(engine, durable=durable, timeout=timeout, create=create)
        return engine
    # no pool_pre_ping (a round trip per call): a pooled connection the server closed while
    # it was idle is dropped at checkout (_drop_closed_connections, no round trip); one
    # lost in use fails its transaction, which FingerprintStore retries on a fresh one
    engine = create_engine(url, connect_args=server_connect_args(url, bounds))
    if url.get_backend_name() == "postgresql":
        event.listen(engine, "checkout", _drop_closed_connections)
    return engine


def closed_by_server(connection: Any) -> bool:
    """Whether the server is closing this idle psycopg connection (it is stopping or
    restarting, ``pg_terminate_backend``, ``idle_session_timeout``): it has written to it.
    The server sends nothing unasked to an idle session that does not LISTEN except such a
    goodbye, so a socket with something to read is one to drop (a false alarm would cost
    one reconnect). No round trip; False for other drivers."""
    import psycopg

    if not isinstance(connection, psycopg.Connection):
        return False
    if connection.closed or connection.broken:
        return True
    try:
        readable, _, _ = select.select([connection.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):  # no socket left
        return True
    return bool(readable)


def _drop_closed_connections(_dbapi: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
    """Pool checkout: a connection the server closed is replaced before anyone uses it
    (else its first statement fails, and psycopg logs "error ignored terminating ...: the
    connection is lost" while leaving pipeline mode on the dead socket)."""
    if closed_by_server(record.driver_connection):
        raise DisconnectionError("the server closed this pooled connection")


def server_connect_args(url: URL, bounds: WaitBounds | None = None) -> dict[str, Any]:
    """Connection arguments for a database server: a connect timeout
    (:data:`CONNECT_TIMEOUT_S`) unless the URL names one (``?connect_timeout=<seconds>``),
    so a host that accepts the connection and never answers fails instead of hanging;
    with ``bounds``, the sessions' lock and statement timeouts (faults.session_options) and
    an ``application_name`` naming this process unless the URL names one."""
    if url.get_backend_name() != "postgresql":
        return {}
    args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        args["connect_timeout"] = CONNECT_TIMEOUT_S
    if bounds is not None:
        given = url.query.get("options")
        options = session_options(bounds, given if isinstance(given, str | None) else given[-1])
        if options:
            args["options"] = options
        if "application_name" not in url.query:
            args["application_name"] = application_name()
    return args


def _install_sqlite_events(engine: Engine, *, durable: bool, timeout: float, create: bool) -> None:
    synchronous = "FULL" if durable else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin); pysqlite must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            # WAL is a property of the file: an engine that may not create (a query) leaves
            # a file that is not a simhash-filter database as it found it.
            if create or _has_meta_table(cursor):
                cursor.execute("PRAGMA journal_mode = WAL")
                # the store's WalCheckpointer copies the WAL; a commit does only as a backstop
                cursor.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_FRAMES}")
                # ... and a WAL that grew past a transaction's worth is cut back after it
                cursor.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def has_table(conn: Connection, name: str, kind: str = "table") -> bool:
    """Whether the database has the table (or, ``kind="index"``, the index) ``name``, in one
    catalogue query (SQLite's ``sqlite_master``, PostgreSQL's ``to_regclass`` on the search
    path), without the cost of SQLAlchemy's reflection: an open's checks."""
    return driver_has_table(
        lambda sql, params: conn.exec_driver_sql(sql, params).all(), conn.dialect.name, name, kind
    )


def driver_has_table(
    execute: Callable[[str, Any], Sequence[Any]], dialect: str, name: str, kind: str = "table"
) -> bool:
    """:func:`has_table` on ``execute`` (SQL on the driver: a cursor or a connection)."""
    if dialect == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?"
        return bool(execute(sql, (kind, name)))
    (row,) = execute("SELECT to_regclass(%s)", (name,))
    return row[0] is not None


def _has_meta_table(cursor: Any) -> bool:
    cursor.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (meta_table.name,)
    )
    return cursor.fetchone() is not None


def foreign_tables(url: URL) -> list[str]:
    """The tables of an existing database that is not a simhash-filter one (it has tables,
    but no simhash-filter ``meta`` table); ``[]`` for a missing or empty database or one
    of ours. Reads only: a SQLite file is opened read-only and left as it was."""
    where = display_url(url)
    try:
        if is_sqlite(url):
            path = sqlite_path(url)
            if path is None or not path.is_file() or path.stat().st_size == 0:
                return []
            with closing(
                sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            ) as connection:
                rows = connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                ).fetchall()
            names = [str(name) for (name,) in rows]
        else:
            engine = create_engine(url, connect_args=server_connect_args(url), poolclass=NullPool)
            try:
                with engine.connect() as conn:
                    names = sorted(inspect(conn).get_table_names())
            finally:
                engine.dispose()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{where} is not a usable SQLite database: {exc}") from None
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {where}: {error_reason(exc)}") from None
    return [] if meta_table.name in names else names


class WriterQueue:
    """Queues the writers of one SQLite file: a thread lock for this process and, where
    the OS has ``flock``, an exclusive lock on ``<database>-lock`` for all processes.

    ``BEGIN IMMEDIATE`` alone is correct, but a writer that finds the database busy
    sleeps in SQLite's busy handler (1, 2, 5, 10 ... ms); a waiter blocked in ``flock``
    is woken by the kernel when the holder releases the lock, so several crawler
    processes share one file without losing throughput to sleeps. ``flock`` has no
    timeout, so a writer that finds the lock taken blocks in a helper thread
    (:class:`_BlockingFlock`) and waits for it at most ``timeout`` seconds. The file lock
    is only a queue: correctness never depends on it, so a writer that has waited that
    long (its holder stopped, say) goes on without it, to ``BEGIN IMMEDIATE`` and
    SQLite's own busy timeout.
    """

    def __init__(self, database: Path | None, timeout: float = 60.0) -> None:
        self._thread_lock = threading.Lock()
        self._timeout = timeout
        self._held_fd: int | None = None  # the descriptor holding the file lock, if any
        self._waiter: _BlockingFlock | None = None  # set while a blocking wait holds it
        self._database = database
        self._stuck = False  # a wait was given up; nobody has had the file lock since
        self.waited = 0.0  # seconds the last entry waited for the locks
        self._fd: int | None = None
        self._made_file = False  # this queue created <database>-lock
        if database is not None and fcntl is not None:
            try:
                self._fd = os.open(_lock_path(database), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                self._made_file = True
            except FileExistsError:
                self._fd = os.open(_lock_path(database), os.O_RDWR)
            except OSError as exc:  # read-only folder: BEGIN IMMEDIATE still queues
                log.debug("no writer lock file next to %s: %s", database, exc)

    def __enter__(self) -> None:
        self.enter(self._timeout)

    def enter(self, timeout: float) -> float:
        """Take the locks, waiting for the file lock ``timeout`` seconds at most; the
        seconds waited (also in :attr:`waited`), for the busy wait to take off its own."""
        began = time.monotonic()
        self._thread_lock.acquire()
        if self._fd is not None:
            try:
                self._take(self._fd, max(0.0, timeout - (time.monotonic() - began)))
            except BaseException:
                self._thread_lock.release()
                raise
        self.waited = time.monotonic() - began
        return self.waited

    def _take(self, fd: int, timeout: float) -> None:
        """Take the file lock: at once when it is free, else by a blocking ``flock`` that
        wakes when the holder releases it, given up after the timeout. Once a wait has been
        given up (its holder is stuck), later writers do not wait for it again until
        someone has had it: they try it once and go on without it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._held_fd = fd
            if self._stuck:
                self._stuck = False
                log.info("the writer lock %s is free again", _lock_path(self._database or Path()))
            return
        except BlockingIOError:
            if self._stuck or timeout <= 0:
                return
        assert self._database is not None
        try:
            waiter = _BlockingFlock(_lock_path(self._database))
        except OSError as exc:  # no descriptor to wait on: BEGIN IMMEDIATE still queues
            log.debug("cannot wait for the writer lock of %s: %s", self._database, exc)
            return
        if waiter.wait(timeout):
            self._held_fd, self._waiter = waiter.fd, waiter
            return
        self._stuck = True
        log.warning(
            "the writer lock %s was held for more than %.3g s; writing without it "
            "(SQLite's own locking still applies) until it is free again",
            _lock_path(self._database),
            timeout,
        )

    def __exit__(self, *exc: object) -> None:
        try:
            if self._waiter is not None:
                self._waiter.release()
            elif self._held_fd is not None:
                fcntl.flock(self._held_fd, fcntl.LOCK_UN)
        finally:
            self._held_fd, self._waiter = None, None
            self._thread_lock.release()

    def close(self) -> None:
        """Close the lock file, and remove it when no other process holds it (the last
        writer out leaves no ``<database>-lock`` in the folder). A process that still has
        the old file open queues on it apart from one that makes a new file: only sleeps
        are lost, since the queue is never what correctness depends on."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path = _lock_path(self._database or Path())
            if os.stat(path).st_ino == os.fstat(fd).st_ino:  # still the file we locked
                os.unlink(path)
        except OSError:  # held by another writer (BlockingIOError), or gone: leave it
            pass
        finally:
            os.close(fd)

    def remove_made_file(self) -> None:
        """Remove ``<database>-lock`` when this queue created it: the database it goes with
        could not be made (a full disk at start), so nothing is left behind."""
        if self._made_file and self._database is not None:
            self._made_file = False
            try:
                os.unlink(_lock_path(self._database))
            except OSError as exc:
                log.debug("cannot remove the writer lock file of %s: %s", self._database, exc)


def _lock_path(database: Path) -> str:
    return f"{database}-lock"


class _BlockingFlock:
    """One blocking ``flock`` on a descriptor of its own, in a daemon thread, so the caller
    can stop waiting after a timeout (``flock`` has none).

    The descriptor is the waiter's own (a lock belongs to an open file description), so a
    wait given up on cannot release a lock taken later through another descriptor: when an
    abandoned waiter gets the lock at last, it closes its descriptor, which releases it.
    """

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._decided = threading.Lock()  # the waiter and the caller agree on who owns fd
        self._done = threading.Event()
        self._acquired = False
        self._abandoned = False
        threading.Thread(target=self._run, name="simhash-filter writer lock", daemon=True).start()

    def _run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            acquired = True
        except OSError as exc:
            log.debug("waiting for the writer lock failed: %s", exc)
            acquired = False
        with self._decided:
            if self._abandoned or not acquired:
                os.close(self.fd)
            self._acquired = acquired
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """True when the lock was taken within ``timeout`` seconds (then :meth:`release`
        it); False when the wait is given up (the thread lets go of it on its own)."""
        self._done.wait(timeout)
        with self._decided:
            if self._done.is_set():
                return self._acquired
            self._abandoned = True
            return False

    def release(self) -> None:
        """Release the lock by closing the descriptor."""
        os.close(self.fd)
