"""The PostgreSQL path (store/pg.py) against the generic SQLAlchemy path: same verdicts, same
rows; prepared statements that live as long as the connection; the durability setting."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.settings import Settings
from sqlalchemy import create_engine, text

from bench._common import create_pg_database, drop_pg_database
from simhash_filter.config import Config
from simhash_filter.store import FingerprintStore, PageRow, Verdict
from simhash_filter.store.locks import lock_ids

pytestmark = pytest.mark.postgres

SPEC = "test;pg-path"


@pytest.fixture
def second_pg_url(pg_url: str) -> Iterator[str]:
    """Another throw-away database on the same server."""
    url = create_pg_database("sf_test")
    try:
        yield url
    finally:
        drop_pg_database(url)


def _flip(rng: random.Random, fingerprint: int, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        fingerprint ^= 1 << bit
    return fingerprint


def mixed_stream(seed: int, count: int) -> list[tuple[str, int, int]]:
    """New pages, near copies under new URLs (DUPLICATE), re-crawls within k (UNCHANGED)
    and beyond it (CHANGED), and re-crawls that became a copy of another page."""
    rng = random.Random(seed)
    stream: list[tuple[str, int, int]] = []
    seen: list[tuple[str, int]] = []
    for i in range(count):
        roll = rng.random()
        if not seen or roll < 0.35:
            url, fp = f"http://site{i % 5}.example/p{i}", rng.getrandbits(64)
        elif roll < 0.6:
            url, fp = (
                f"http://copies.example/c{i}",
                _flip(rng, rng.choice(seen)[1], rng.randint(0, 4)),
            )
        elif roll < 0.8:
            url, old = rng.choice(seen)
            fp = _flip(rng, old, rng.randint(0, 4))
        elif roll < 0.9:
            url, old = rng.choice(seen)
            fp = _flip(rng, old, rng.randint(5, 20))
        else:
            url = rng.choice(seen)[0]
            fp = _flip(rng, rng.choice(seen)[1], rng.randint(0, 3))
        stream.append((url, fp, rng.randint(0, 5000)))
        seen.append((url, fp))
    return stream


def replay(store: FingerprintStore, stream: list[tuple[str, int, int]]) -> list[Verdict]:
    """Single calls, then small batches (group commit, key-locked), then one bulk batch
    (database-wide lock), each on its own part of the stream."""
    third = len(stream) // 3
    verdicts = [store.check_and_add(url, fp, text_length=n) for url, fp, n in stream[:third]]
    verdicts += store.add_many(stream[third : 2 * third], batch_size=16)
    verdicts += store.add_many(stream[2 * third :], batch_size=1000)
    return verdicts


def contents(url: str) -> dict[str, list[Any]]:
    """Every row but the timestamps (each path reads its own clock)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                name: [tuple(row) for row in conn.execute(text(sql))]
                for name, sql in {
                    "pages": "SELECT id, url, domain, fingerprint, text_length FROM pages "
                    "ORDER BY id",
                    "bands": "SELECT table_no, key, page_id, fingerprint FROM bands "
                    "ORDER BY table_no, key, page_id",
                    "duplicates": "SELECT id, url, domain, fingerprint, duplicate_of, distance "
                    "FROM duplicates ORDER BY id",
                    "timestamps": "SELECT count(*) FROM pages WHERE last_seen < first_seen",
                }.items()
            }
    finally:
        engine.dispose()


def test_pipelined_path_gives_the_generic_paths_verdicts_and_rows(
    pg_url: str, second_pg_url: str
) -> None:
    stream = mixed_stream(11, 450)
    pipelined = FingerprintStore.open(pg_url, spec=SPEC)
    generic = FingerprintStore.open(second_pg_url, spec=SPEC)
    assert pipelined._pg is not None
    generic._pg = None  # the SQLAlchemy path (statements.SqlBatchIO), as on any other driver
    try:
        got, expected = replay(pipelined, stream), replay(generic, stream)
        assert got == expected
        kinds = {v.kind.value for v in expected}
        assert kinds == {"new", "duplicate", "unchanged", "changed"}
        # drops of pages admitted earlier in the same batch (their ids come back with
        # the batch's writes) are among them
        third = len(stream) // 3
        batches = [range(s, min(s + 16, 2 * third)) for s in range(third, 2 * third, 16)]
        batches.append(range(2 * third, len(stream)))
        same_batch = [
            i
            for batch in batches
            for i in batch
            if (match := expected[i].duplicate_of) is not None
            and any(
                expected[j].url == match.url and expected[j].kind.value == "new"
                for j in batch
                if j < i
            )
        ]
        assert len(same_batch) >= 3
        for fp in (fp for _, fp, _ in stream[::25]):
            assert pipelined.near(fp) == generic.near(fp)
            assert pipelined.near(fp, k=1) == generic.near(fp, k=1)
    finally:
        pipelined.close()
        generic.close()
    assert contents(pg_url) == contents(second_pg_url)


def _prepared(engine: Any) -> dict[str, int]:
    """Executions of each statement prepared on the pooled connection (one connection:
    the test runs in one thread)."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(
            "SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements "
            "WHERE NOT from_sql"
        )
        return {statement: runs for statement, runs in cursor.fetchall()}
    finally:
        raw.close()


def test_prepared_statements_outlive_near_and_every_write(pg_url: str) -> None:
    rng = random.Random(5)
    with FingerprintStore.open(pg_url, spec=SPEC) as store:
        calls = 12
        for i in range(calls):
            store.check_and_add(f"http://prep.example/{i}", rng.getrandbits(64))
            store.near(rng.getrandbits(64))  # autocommit: no ROLLBACK from the pool's reset
        prepared = _prepared(store.engine)
    probe = [runs for statement, runs in prepared.items() if "JOIN bands b" in statement]
    locks = [
        runs for statement, runs in prepared.items() if "pg_advisory_xact_lock_shared" in statement
    ]
    inserts = [runs for statement, runs in prepared.items() if "INSERT INTO pages" in statement]
    # one prepared statement each, parsed once and run by every call (near() has its own
    # probe; check_and_add reads the URL's page and probes in one statement)
    assert sorted(probe) == [calls, calls]
    assert locks == [calls]
    assert inserts == [calls]


def test_durable_false_runs_every_write_with_synchronous_commit_off(pg_url: str) -> None:
    rng = random.Random(6)
    config = Config.from_settings(Settings({"SIMHASH_FILTER_DURABLE": "False"}))
    assert config.durable is False
    assert Config.from_settings(Settings({})).durable is None
    with FingerprintStore.open(pg_url, spec=SPEC, durable=config.durable) as store:
        for i in range(7):
            store.check_and_add(f"http://fast.example/{i}", rng.getrandbits(64))
        store.add_many([(f"http://fast.example/b{i}", rng.getrandbits(64), 1) for i in range(3)])
        prepared = _prepared(store.engine)
        assert store.stats().pages == 10
    assert [runs for statement, runs in prepared.items() if "synchronous_commit" in statement] == [
        8
    ]
    with FingerprintStore.open(pg_url, spec=SPEC) as store:  # the default: the server's
        store.check_and_add("http://slow.example/", rng.getrandbits(64))
        prepared = _prepared(store.engine)
    assert not [statement for statement in prepared if "synchronous_commit" in statement]


def test_locks_are_held_from_the_read_to_the_commit(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two round trips are one transaction: between the read and the writes (the
    decision, in Python) the page's advisory locks are held and nothing is visible yet."""
    import threading

    from simhash_filter.store import pg

    decided = threading.Event()
    resume = threading.Event()
    real_check_batch = pg.check_batch

    def paused_check_batch(*args: Any, **kwargs: Any) -> list[Verdict]:
        decided.set()
        assert resume.wait(30)
        return real_check_batch(*args, **kwargs)

    monkeypatch.setattr(pg, "check_batch", paused_check_batch)
    admin = create_engine(pg_url)
    with FingerprintStore.open(pg_url, spec=SPEC) as store:
        row = store._row("http://held.example/", 0x0123_4567_89AB_CDEF, 10, None)
        expected_locks = len(set(lock_ids([(row.url, row.lock_keys())]))) + 1  # + the global
        done: list[Verdict] = []
        writer = threading.Thread(
            target=lambda: done.append(store.check_and_add(row.url, row.fingerprint))
        )
        writer.start()
        try:
            assert decided.wait(30)
            with admin.connect() as conn:
                held = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND database = (SELECT oid FROM pg_database"
                        " WHERE datname = current_database())"
                    )
                ).scalar_one()
                pages = conn.execute(text("SELECT count(*) FROM pages")).scalar_one()
            assert held == expected_locks
            assert pages == 0
        finally:
            resume.set()
            writer.join(30)
        assert [v.kind.value for v in done] == ["new"]
        with admin.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM pages")).scalar_one() == 1
            assert (
                conn.execute(
                    text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database"
                        " = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                ).scalar_one()
                == 0
            )
    admin.dispose()


def _sketched_stream(seed: int, count: int) -> list[PageRow]:
    """Pages with sketches (a few without): copies whose sketch agrees (confirmed), copies
    whose sketch differs (rejected: admitted), re-crawls, pages without a sketch."""
    import numpy as np

    from simhash_filter.signature import decode_sketch, encode_sketch

    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    stream: list[PageRow] = []
    for i, (url, fp, length) in enumerate(mixed_stream(seed, count)):
        slots = nprng.integers(0, 1 << 16, 64, dtype=np.uint16)
        parent = rng.choice(stream) if stream else None
        if parent is not None and parent.sketch is not None and rng.random() < 0.6:
            slots = decode_sketch(parent.sketch).text.copy()
            changed = rng.randint(0, 40)
            slots[rng.sample(range(64), changed)] = nprng.integers(0, 1 << 16, changed)
        sketch = None if i % 9 == 0 else encode_sketch(slots)
        stream.append(PageRow(url, fp, length, sketch))
    return stream


def test_pipelined_path_gives_the_generic_paths_verdicts_with_sketches(
    pg_url: str, second_pg_url: str
) -> None:
    from simhash_filter.signature import MatchRule

    rule = MatchRule(candidate_distance=4, min_similarity=0.7, fallback_distance=3)
    stream = _sketched_stream(12, 450)
    pipelined = FingerprintStore.open(pg_url, spec=SPEC, rule=rule)
    generic = FingerprintStore.open(second_pg_url, spec=SPEC, rule=rule)
    generic._pg = None
    try:
        third = len(stream) // 3
        results = []
        for store in (pipelined, generic):
            verdicts = [
                store.check_and_add(
                    r.url, r.fingerprint, text_length=r.text_length, sketch=r.sketch
                )
                for r in stream[:third]
            ]
            verdicts += store.add_many(stream[third : 2 * third], batch_size=16)
            verdicts += store.add_many(stream[2 * third :], batch_size=1000)
            results.append(verdicts)
        assert results[0] == results[1]
        similarities = [v.duplicate_of.similarity for v in results[1] if v.duplicate_of]
        assert any(s is not None for s in similarities)  # confirmed by the sketches
        assert any(s is None for s in similarities)  # judged by distance alone
    finally:
        pipelined.close()
        generic.close()
    sketches = "SELECT id, sketch FROM pages ORDER BY id"
    drops = "SELECT id, similarity FROM duplicates ORDER BY id"
    for sql in (sketches, drops):
        rows = []
        for url in (pg_url, second_pg_url):
            engine = create_engine(url)
            with engine.connect() as conn:
                rows.append([tuple(row) for row in conn.execute(text(sql))])
            engine.dispose()
        assert rows[0] == rows[1]
    assert contents(pg_url) == contents(second_pg_url)
