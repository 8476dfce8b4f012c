"""The WAL is copied into a SQLite database by the store's checkpoint thread, not by the
commit that outgrows it (store/checkpointer.py)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text

from simhash_filter import Fingerprinter
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions
from simhash_filter.store.checkpointer import BACKSTOP_FRAMES, WalCheckpointer
from simhash_filter.store.engine import make_engine, parse_url

SPEC = Fingerprinter().spec
TRANSACTIONS = 40
ROWS = 40  # a 4,000-byte row is a page of its own: ~40 WAL frames a transaction


def _frames_in_wal(path: Path) -> int:
    """The frames now in the WAL, from a connection of the test's own (a PASSIVE
    checkpoint reports them; it copies what it can, which changes nothing read here)."""
    with sqlite3.connect(path) as conn:
        busy, frames, _copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0
    return int(frames)


def _write_frames(execute: Callable[[str], object], begin: Callable[[], Any]) -> None:
    for _ in range(TRANSACTIONS):
        with begin():
            for _ in range(ROWS):
                execute("INSERT INTO blobs VALUES (randomblob(4000))")


def test_the_store_s_connections_leave_the_wal_to_the_thread(tmp_path: Path) -> None:
    # control: a connection with SQLite's default checkpoints at 1,000 frames, so the WAL
    # restarts and never holds all the frames written
    plain = tmp_path / "plain.db"
    conn = sqlite3.connect(plain, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE blobs (b BLOB)")

    @contextmanager
    def begin_plain() -> Iterator[None]:
        conn.execute("BEGIN")
        yield
        conn.execute("COMMIT")

    _write_frames(conn.execute, begin_plain)
    assert _frames_in_wal(plain) < TRANSACTIONS * ROWS // 2
    conn.close()

    # the store's engine: no checkpoint below the backstop, so every frame is still there
    path = tmp_path / "store.db"
    engine = make_engine(parse_url(f"sqlite:///{path}"), create=True)
    with engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one() == BACKSTOP_FRAMES
    assert TRANSACTIONS * ROWS < BACKSTOP_FRAMES
    with engine.connect() as c:
        c.exec_driver_sql("CREATE TABLE blobs (b BLOB)")
        c.commit()
        _write_frames(lambda sql: c.execute(text(sql)), c.begin)
    assert _frames_in_wal(path) >= TRANSACTIONS * ROWS
    engine.dispose()


def test_the_thread_copies_the_wal_and_stops_on_close(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE blobs (b BLOB)")
    for _ in range(5):
        conn.execute("INSERT INTO blobs VALUES (randomblob(4000))")

    idle = WalCheckpointer(path)  # not started: we run one by hand
    result = idle.checkpoint()
    assert result is not None
    assert not result.busy
    assert result.wal_frames >= 5
    assert result.copied_frames == result.wal_frames
    idle.close()
    idle.close()  # twice is fine
    assert not idle.running
    assert idle.checkpoint() is None

    conn.execute("INSERT INTO blobs VALUES (randomblob(4000))")
    busy = WalCheckpointer(path, interval=0.001)
    busy.start()
    assert busy.ran.wait(60)  # the thread ran a checkpoint of its own
    busy.close()
    assert not busy.running
    (rows,) = conn.execute("SELECT count(*) FROM blobs").fetchone()
    assert rows == 6
    conn.close()


def test_a_database_that_cannot_be_opened_does_not_stop_the_thread(tmp_path: Path) -> None:
    checkpointer = WalCheckpointer(tmp_path / "no such folder" / "x.db", interval=0.001)
    assert checkpointer.checkpoint() is None  # logged, not raised
    checkpointer.start()
    (tmp_path / "no such folder").mkdir()
    sqlite3.connect(tmp_path / "no such folder" / "x.db").execute("PRAGMA journal_mode = WAL")
    assert checkpointer.ran.wait(60)  # the thread lived on and ran once the file was there
    checkpointer.close()


def test_store_checkpoint_copies_all_unless_a_reader_holds_frames(sqlite_url: str) -> None:
    rng = random.Random(21)
    store = FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC))
    store.add_many([PageRow(f"https://a.example/{i}", rng.getrandbits(64)) for i in range(50)])
    assert store.checkpoint()

    # a reader whose snapshot predates the next writes keeps their frames in the WAL
    reader = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    reader.execute("BEGIN")
    (before,) = reader.execute("SELECT count(*) FROM pages").fetchone()
    store.add_many([PageRow(f"https://b.example/{i}", rng.getrandbits(64)) for i in range(50)])
    assert not store.checkpoint()
    reader.execute("COMMIT")
    assert store.checkpoint()
    assert before == 50
    assert store.stats().pages == 100
    reader.close()
    store.close()
