"""The store's write queues: small add_many batches on PostgreSQL lock only their own keys
(crawler processes' group commits run in parallel unless they could collide), and a SQLite
writer whose file-lock queue is stuck goes on after the busy timeout."""

from __future__ import annotations

import fcntl
import logging
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from simhash_filter.store import FingerprintStore, VerdictKind
from simhash_filter.store.locks import GLOBAL_LOCK as _GLOBAL_LOCK
from simhash_filter.store.locks import KEY_LOCKED_BATCH as _KEY_LOCKED_BATCH

SPEC = "simhash-test;locks"


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[FingerprintStore]:
    store = FingerprintStore.open(pg_url, spec=SPEC)
    try:
        yield store
    finally:
        store.close()


def _rows(n: int, seed: int) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    return [(f"http://locks.example/{seed}/{i}", rng.getrandbits(64), 100) for i in range(n)]


def _run_in_thread(work: object) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def test_small_batches_do_not_take_the_database_wide_lock(
    pg_store: FingerprintStore, pg_url: str
) -> None:
    """Another session holding the global lock *shared* (as every single writer does) blocks
    a bulk load, which wants it exclusive, but not a small batch."""
    engine = create_engine(pg_url)
    results: dict[str, list[VerdictKind]] = {}
    try:
        with engine.connect() as holder:
            holder.execute(text("SELECT pg_advisory_lock_shared(:g)"), {"g": _GLOBAL_LOCK})
            small = _run_in_thread(
                lambda: results.__setitem__(
                    "small", [v.kind for v in pg_store.add_many(_rows(8, 1))]
                )
            )
            small.join(timeout=30)
            assert not small.is_alive(), "a small batch waited for the database-wide lock"
            assert results["small"] == [VerdictKind.NEW] * 8

            bulk = _run_in_thread(
                lambda: results.__setitem__(
                    "bulk", [v.kind for v in pg_store.add_many(_rows(_KEY_LOCKED_BATCH + 1, 2))]
                )
            )
            bulk.join(timeout=1.0)
            assert bulk.is_alive(), "a bulk load did not wait for the database-wide lock"
            holder.execute(text("SELECT pg_advisory_unlock_shared(:g)"), {"g": _GLOBAL_LOCK})
            holder.commit()
            bulk.join(timeout=30)
            assert not bulk.is_alive()
            assert results["bulk"] == [VerdictKind.NEW] * (_KEY_LOCKED_BATCH + 1)
    finally:
        engine.dispose()


def test_small_batches_from_threads_never_keep_two_near_duplicates(
    pg_store: FingerprintStore,
) -> None:
    k = pg_store.scheme.max_distance
    centers = [random.Random(c).getrandbits(64) for c in range(30)]

    def stream(worker: int) -> None:
        rng = random.Random(worker)
        rows = []
        for c, center in enumerate(centers):
            fp = center
            for bit in rng.sample(range(64), rng.randint(0, 2)):
                fp ^= 1 << bit
            rows.append((f"http://w{worker}.example/{c}", fp, 100))
        rng.shuffle(rows)
        for start in range(0, len(rows), 6):
            pg_store.add_many(rows[start : start + 6])

    threads = [_run_in_thread(lambda w=w: stream(w)) for w in range(4)]
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    engine = create_engine(str(pg_store.engine.url.render_as_string(hide_password=False)))
    try:
        with engine.connect() as conn:
            kept = [
                int(fp) & (2**64 - 1)
                for (fp,) in conn.execute(text("SELECT fingerprint FROM pages"))
            ]
    finally:
        engine.dispose()
    assert len(kept) == len(centers)
    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            assert (a ^ b).bit_count() > k


def test_a_stuck_sqlite_writer_queue_is_waited_for_only_the_busy_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "dedup.db"
    store = FingerprintStore.open(f"sqlite:///{database}?timeout=0.3", spec=SPEC)
    holder = os.open(f"{database}-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a peer stopped while holding the queue
        with caplog.at_level(logging.WARNING, logger="simhash_filter"):
            verdict = store.check_and_add("http://stuck.example/a", 0x1234_5678_9ABC_DEF0)
        assert verdict.kind is VerdictKind.NEW
        assert "held for more than 0.3 s" in caplog.text
        fcntl.flock(holder, fcntl.LOCK_UN)
        assert store.check_and_add("http://stuck.example/b", 2**63 + 7).kind is VerdictKind.NEW
    finally:
        os.close(holder)
        store.close()
