"""The store's engine helpers: the SQLite writer queue wakes a waiter when the lock is
released (it blocks in flock instead of polling) and gives up after its timeout."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from simhash_filter.store import engine
from simhash_filter.store.engine import WriterQueue


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """The writer lock of ``tmp_path/db.sqlite``, held through another descriptor."""
    database = tmp_path / "db.sqlite"
    fd = os.open(f"{database}-lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield database, fd
    finally:
        os.close(fd)


class _CountingFlock:
    """fcntl.flock, counting the non-blocking tries and signalling a blocking wait."""

    def __init__(self) -> None:
        self.tries = 0
        self.blocking = threading.Event()
        self._flock = fcntl.flock

    def __call__(self, fd: int, operation: int) -> None:
        if operation & fcntl.LOCK_NB:
            self.tries += 1
        elif operation & fcntl.LOCK_EX:
            self.blocking.set()
        self._flock(fd, operation)


def test_a_waiter_blocks_in_flock_and_enters_when_the_lock_is_released(
    held_lock: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, holder = held_lock
    counting = _CountingFlock()
    monkeypatch.setattr(engine.fcntl, "flock", counting)
    queue = WriterQueue(database, timeout=600)
    entered = threading.Event()
    leave = threading.Event()

    def writer() -> None:
        with queue:
            entered.set()
            leave.wait(30)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    assert counting.blocking.wait(30), "the waiter never blocked in flock"
    assert not entered.is_set()
    fcntl.flock(holder, fcntl.LOCK_UN)  # (the real flock: the patch counts only the queue's)
    assert entered.wait(30), "the waiter did not enter once the lock was free"
    assert counting.tries == 1, "the waiter polled instead of blocking"
    # While the writer is inside, the lock is really held: another descriptor cannot take it.
    with pytest.raises(BlockingIOError):
        counting._flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    leave.set()
    thread.join(30)
    counting._flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on exit
    queue.close()


def test_a_waiter_gives_up_after_the_timeout_and_the_lock_stays_usable(
    held_lock: tuple[Path, int], caplog: pytest.LogCaptureFixture
) -> None:
    database, holder = held_lock
    queue = WriterQueue(database, timeout=0.05)
    with queue:  # the holder never lets go: the writer goes on without the file lock
        pass
    assert "held for more than" in caplog.text
    fcntl.flock(holder, fcntl.LOCK_UN)
    # The abandoned wait gets the lock at last and lets go of it on its own.
    with queue:
        fd = os.open(f"{database}-lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    queue.close()


def test_the_last_writer_out_removes_the_lock_file(tmp_path: Path) -> None:
    """No ``dedup.db-lock`` is left in the folder after a crawl (issue 44 item 6); one that
    another process holds stays."""
    database = tmp_path / "db.sqlite"
    first, second = WriterQueue(database), WriterQueue(database)
    with first:
        pass
    holder = os.open(f"{database}-lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    first.close()  # another process holds it: it stays
    assert Path(f"{database}-lock").exists()
    os.close(holder)
    second.close()
    assert not Path(f"{database}-lock").exists()


def test_a_store_leaves_no_lock_file(tmp_path: Path) -> None:
    from simhash_filter.store import FingerprintStore, StoreOptions

    database = tmp_path / "dedup.db"
    with FingerprintStore.open(f"sqlite:///{database}", StoreOptions(spec="test")) as store:
        store.check_and_add("https://example.com/a", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dedup.db"]
