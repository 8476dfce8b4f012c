"""Checkpoints a SQLite database's write-ahead log in a thread of its own.

With SQLite's default, the commit that takes the WAL past 1,000 frames copies them into
the database file and syncs it before it returns: at 10M stored pages that is ~70 KB of
scattered writes and an fsync a page inside the writer, most of a bulk add's wait and a
check's p99 (bench/history/scale.md, 2026-11-24). SQLite's documentation suggests
the alternative used here: the store's connections checkpoint only as a backstop
(:data:`BACKSTOP_FRAMES`), and this thread runs a PASSIVE checkpoint every
:data:`INTERVAL_S` seconds on a connection of its own. PASSIVE never waits for readers or
writers, and every checkpoint is SQLite's own, so a crash at any moment leaves the same
database as before; only *when* the copying happens moves.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

INTERVAL_S = 0.2
"""Seconds between two checkpoints of the thread (one with nothing to copy costs a read of
the WAL's index)."""
BACKSTOP_FRAMES = 65_536
"""``wal_autocheckpoint`` of the store's own connections: a commit checkpoints itself only
when the WAL has grown past this many frames (256 MiB of 4 KiB pages), i.e. when the thread
has fallen behind or stopped. Above one transaction's frames: a 1,000-page ``add_many``
batch at 10M stored pages writes ~18,000."""

WAL_SIZE_LIMIT = 64 << 20
"""``journal_size_limit``: bytes the WAL file is truncated to when it is reset, so a burst
that grew it does not keep the disk space."""


class Checkpoint(NamedTuple):
    """What one ``PRAGMA wal_checkpoint(PASSIVE)`` reported."""

    busy: bool
    """It could not run at all (another checkpoint was running, say)."""
    wal_frames: int
    """Frames in the WAL (-1 when busy)."""
    copied_frames: int
    """Frames now in the database file (-1 when busy)."""


class WalCheckpointer:
    """A daemon thread that checkpoints ``database``'s WAL every :data:`INTERVAL_S` seconds.

    Nothing runs until :meth:`start` (the store calls it before each write transaction:
    a store that only reads opens no connection and no thread). :meth:`checkpoint` runs
    one at once (what the thread runs; the store's ``checkpoint()``); :meth:`close` stops
    the thread and closes its connection.
    """

    def __init__(self, database: Path, *, interval: float = INTERVAL_S) -> None:
        self._database = database
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one checkpoint at a time, and none after close
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None
        self.ran = threading.Event()
        """Set after each checkpoint the thread has run (tests wait on it)."""

    def start(self) -> None:
        """Start the thread, the first time (a check of a field after that)."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=self._run, name="simhash-filter WAL checkpoint", daemon=True
            )
            self._thread.start()

    def checkpoint(self) -> Checkpoint | None:
        """Run one PASSIVE checkpoint (on a connection opened the first time); None when
        closed or when SQLite failed (logged at debug level; the next one tries again)."""
        with self._lock:
            if self._stop.is_set():
                return None
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(
                        str(self._database), timeout=0, isolation_level=None,
                        check_same_thread=False,
                    )  # fmt: skip
                row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:  # a full disk, a removed file: the next one tries again
                log.debug("WAL checkpoint of %s failed: %s", self._database, exc)
                return None
            return Checkpoint(bool(row[0]), int(row[1]), int(row[2]))

    def copied_all(self) -> bool:
        """Run one checkpoint: True when it copied every frame of the WAL."""
        result = self.checkpoint()
        return result is not None and not result.busy and result.wal_frames == result.copied_frames

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if self.checkpoint() is not None:
                self.ran.set()

    def close(self) -> None:
        """Stop the thread and close its connection (idempotent)."""
        with self._lock:  # a start() racing this one sees the stop and starts nothing
            self._stop.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
