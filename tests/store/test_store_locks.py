"""The store's write queues: small add_many batches on PostgreSQL lock only their own keys
(crawler processes' group commits run in parallel unless they could collide), and a SQLite
writer whose file-lock queue is stuck goes on after the busy timeout."""

from __future__ import annotations

import fcntl
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, text

from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, VerdictKind
from simhash_filter.store.locks import GLOBAL_LOCK as _GLOBAL_LOCK
from simhash_filter.store.locks import KEY_LOCKED_BATCH as _KEY_LOCKED_BATCH
from simhash_filter.store.locks import (
    MAX_KEY_LOCKS,
    key_lock_id,
    key_lock_ids,
    lock_parts,
    write_locks,
)

SPEC = "simhash-test;locks"


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[FingerprintStore]:
    store = FingerprintStore.open(pg_url, StoreOptions(spec=SPEC))
    try:
        yield store
    finally:
        store.close()


def _rows(n: int, seed: int) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    return [(f"http://locks.example/{seed}/{i}", rng.getrandbits(64), 100) for i in range(n)]


class _Worker(threading.Thread):
    """Runs ``work`` in a thread, keeping its result or the exception it raised."""

    def __init__(self, work: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self._work = work
        self.result: object = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as exc:  # handed to the test, which asserts on it
            self.error = exc

    def finish(self) -> object:
        """Wait for the work to end (``_HANG_GUARD`` only guards a hang); its result."""
        self.join(_HANG_GUARD)
        assert not self.is_alive(), f"the thread still runs after {_HANG_GUARD} s (a hang)"
        if self.error is not None:
            raise self.error
        return self.result


_HANG_GUARD = 120.0


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; ``_HANG_GUARD`` only guards a hang."""
    deadline = time.monotonic() + _HANG_GUARD
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def _waiting_for(conn: Connection, lock: int, mode: str) -> int:
    """How many sessions of this database wait for the advisory lock ``lock`` (a bigint
    key: PostgreSQL shows its high half as classid, its low half as objid, objsubid 1)
    in ``mode`` (``ExclusiveLock`` or ``ShareLock``), not granted yet."""
    unsigned = lock & (2**64 - 1)
    return int(
        conn.execute(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND classid = CAST(:high AS oid) AND objid = CAST(:low AS oid) "
                "AND objsubid = 1 AND mode = :mode"
            ),
            {"high": unsigned >> 32, "low": unsigned & 0xFFFFFFFF, "mode": mode},
        ).scalar_one()
    )


def _kinds(store: FingerprintStore, rows: list[tuple[str, int, int]]) -> list[VerdictKind]:
    return [verdict.kind for verdict in store.add_many(rows)]


def test_small_batches_do_not_take_the_database_wide_lock(
    pg_store: FingerprintStore, pg_url: str
) -> None:
    """Another session holding the global lock *shared* (as every single writer does) blocks
    a bulk load, which wants it exclusive, but not a small batch. Whether a batch waits is
    read in pg_locks (its lock request not granted), not guessed from how long it takes."""
    engine = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as holder:
            holder.execute(text("SELECT pg_advisory_lock_shared(:g)"), {"g": _GLOBAL_LOCK})

            def blocked() -> bool:
                return _waiting_for(holder, _GLOBAL_LOCK, "ExclusiveLock") > 0

            small = _Worker(lambda: _kinds(pg_store, _rows(8, 1)))
            _wait_until(lambda: not small.is_alive() or blocked(), "the small batch ended")
            assert not blocked(), "a small batch waits for the database-wide lock"
            assert small.finish() == [VerdictKind.NEW] * 8

            bulk = _Worker(lambda: _kinds(pg_store, _rows(_KEY_LOCKED_BATCH + 1, 2)))
            _wait_until(
                lambda: not bulk.is_alive() or blocked(), "the bulk load asked for the lock"
            )
            assert blocked(), "a bulk load did not wait for the database-wide lock"
            assert bulk.is_alive()
            holder.execute(text("SELECT pg_advisory_unlock_shared(:g)"), {"g": _GLOBAL_LOCK})
            assert bulk.finish() == [VerdictKind.NEW] * (_KEY_LOCKED_BATCH + 1)
    finally:
        engine.dispose()


def test_band_lock_ids_are_band_lock_id_of_each_key() -> None:
    rng = random.Random(4)
    keys = [(rng.randrange(16), rng.getrandbits(rng.choice([16, 22, 64]))) for _ in range(500)]
    assert key_lock_ids(keys) == [key_lock_id(t, key) for t, key in keys]


def test_group_commits_under_the_simhash_rule_lock_in_parts(pg_url: str) -> None:
    """Under multi-index hashing at k1 = 9 a page needs ~309 advisory locks, so a group
    commit of 16 would need ~4,900, past MAX_KEY_LOCKS: it is written in parts within the
    bound, one transaction each, and never asks for the database-wide lock (read in pg_locks
    while another session holds that lock shared). Under the default minhash-lsh index a
    page needs 23 (18 bands, 4 fallback keys, its URL): one part."""
    import numpy as np

    from simhash_filter.core.signature import encode_sketch
    from simhash_filter.crawl.config import Config

    rows = _rows(16, 3)
    lsh = Config().scheme()
    sketches = [
        encode_sketch(np.random.default_rng(i).integers(0, 1 << 16, 256, dtype=np.uint16))
        for i in range(16)
    ]
    lsh_pages = [
        (url, lsh.index_items(fp, sketch), lsh.probe_keys(fp, sketch))
        for (url, fp, _), sketch in zip(rows, sketches, strict=True)
    ]
    assert len(write_locks(lsh_pages[:1]).ids) == 23
    assert len(lock_parts(lsh_pages)) == 1
    simhash = Config(index="multi-index")
    with FingerprintStore.open(
        pg_url, StoreOptions(spec=SPEC, rule=simhash.match_rule(), index="multi-index")
    ) as store:
        keyed = [store._row(PageRow(url, fp, n))[0] for url, fp, n in rows]
        pages = [(row.url, row.index_items(), row.probe_keys) for row in keyed]
        parts = [part.pages for part in lock_parts(pages)]
        assert len(parts) > 1
        assert [i for part in parts for i in part] == list(range(16))
        for part in parts:
            assert len(write_locks(pages[part.start : part.stop]).ids) <= MAX_KEY_LOCKS
            if part.stop < 16:  # as large as it can be
                assert len(write_locks(pages[part.start : part.stop + 1]).ids) > MAX_KEY_LOCKS
        engine = create_engine(pg_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as holder:
                holder.execute(text("SELECT pg_advisory_lock_shared(:g)"), {"g": _GLOBAL_LOCK})
                batch = _Worker(lambda: _kinds(store, rows))

                def blocked() -> bool:
                    return _waiting_for(holder, _GLOBAL_LOCK, "ExclusiveLock") > 0

                _wait_until(lambda: not batch.is_alive() or blocked(), "the group commit ended")
                assert not blocked(), "a group commit waits for the database-wide lock"
                assert batch.finish() == [VerdictKind.NEW] * 16
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

    workers = [_Worker(lambda w=w: stream(w)) for w in range(4)]
    for worker in workers:
        worker.finish()
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
    store = FingerprintStore.open(f"sqlite:///{database}?timeout=0.3", StoreOptions(spec=SPEC))
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
