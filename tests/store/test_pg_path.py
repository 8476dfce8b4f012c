"""The PostgreSQL write paths ("pg-function": the server-side function of
store/pg_function.py; "pg-pipeline": the two round trips of store/pg_pipeline.py) against
the generic "sqlalchemy" path: same verdicts, same rows; prepared statements that live as
long as the connection; the durability setting; locks held from the read to the commit."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.settings import Settings
from sqlalchemy import create_engine, text

from crawler.services import create_pg_database, drop_pg_database
from simhash_filter.crawl.config import Config
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, Verdict
from simhash_filter.store.key_columns import key_rows_source, present_columns
from simhash_filter.store.locks import write_locks
from simhash_filter.store.pg_function import decide_function

pytestmark = pytest.mark.postgres

SPEC = "test;pg-path"


PATHS = ["function", "two-round-trips", "two-round-trips-before-14"]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which PostgreSQL write path a test's store takes; "-before-14": as on a server
    without ``bit_count`` (no function, the portable popcount in the probe and near())."""
    if request.param.endswith("-before-14"):
        from simhash_filter.store import write_path

        monkeypatch.setattr(write_path, "server_supports", lambda conn: False)
    return str(request.param)


def open_on(path: str, url: str, **options: Any) -> FingerprintStore:
    """A store on ``url`` writing through ``path``: the default on this server for
    "function" (asserted), "pg-pipeline" for the others."""
    if path == "function":
        store = FingerprintStore.open(url, StoreOptions(spec=SPEC, **options))
        assert store.write_path == "pg-function"
        return store
    return FingerprintStore.open(url, StoreOptions(spec=SPEC, write_path="pg-pipeline", **options))


def open_generic(url: str, **options: Any) -> FingerprintStore:
    """A store on ``url`` writing through SQLAlchemy (statements.SqlBatchIO), as on any
    other driver."""
    store = FingerprintStore.open(url, StoreOptions(spec=SPEC, write_path="sqlalchemy", **options))
    assert store.write_path == "sqlalchemy"
    return store


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
            n_tables = len(present_columns(conn))
            return {
                name: [tuple(row) for row in conn.execute(text(sql))]
                for name, sql in {
                    "pages": "SELECT id, url, domain, fingerprint, text_length FROM pages "
                    "ORDER BY id",
                    "bands": "SELECT table_no, key, page_id, fingerprint FROM "
                    f"{key_rows_source('postgresql', n_tables)} "
                    "ORDER BY table_no, key, page_id",
                    "duplicates": "SELECT id, url, domain, fingerprint, duplicate_of, distance "
                    "FROM duplicates ORDER BY id",
                    "timestamps": "SELECT count(*) FROM pages WHERE last_seen < first_seen",
                    # pages whose URL was last dropped as a copy: out of the index, marked
                    "left": "SELECT id FROM pages WHERE dropped_at IS NOT NULL ORDER BY id",
                    "left_when_seen": "SELECT count(*) FROM pages "
                    "WHERE dropped_at IS NOT NULL AND dropped_at <> last_seen",
                }.items()
            }
    finally:
        engine.dispose()


def test_pg_path_gives_the_generic_paths_verdicts_and_rows(
    path: str, pg_url: str, second_pg_url: str
) -> None:
    stream = mixed_stream(11, 450)
    pg_store = open_on(path, pg_url)
    generic = open_generic(second_pg_url)
    try:
        got, expected = replay(pg_store, stream), replay(generic, stream)
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
        left, back = _left_and_back(expected)
        assert left >= 5  # kept URLs whose re-crawl was a copy of another page
        assert back >= 1  # ... and whose next re-crawl was a page of its own again
        for fp in (fp for _, fp, _ in stream[::25]):
            assert pg_store.near(fp) == generic.near(fp)
            assert pg_store.near(fp, k=1) == generic.near(fp, k=1)
        assert pg_store.write_path == ("pg-function" if path == "function" else "pg-pipeline")
    finally:
        pg_store.close()
        generic.close()
    assert contents(pg_url) == contents(second_pg_url)


def _left_and_back(verdicts: list[Verdict]) -> tuple[int, int]:
    """How many times a kept URL left the index (a DUPLICATE verdict of a URL in it), and
    how many times such a URL was admitted again (CHANGED while out of the index)."""
    in_index: dict[str, bool] = {}
    left = back = 0
    for v in verdicts:
        kind = v.kind.value
        if kind == "duplicate" and in_index.get(v.url):
            in_index[v.url], left = False, left + 1
        elif kind == "changed" and in_index.get(v.url) is False:
            in_index[v.url], back = True, back + 1
        elif kind in {"new", "changed", "unchanged"}:
            in_index[v.url] = True
    return left, back


def _flip_low(fingerprint: int, *bits: int) -> int:
    """``fingerprint`` with ``bits`` (all in the lowest block) flipped."""
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


@pytest.mark.parametrize("batch_size", [16, 1000])
def test_rows_of_a_batch_that_probe_one_key(
    path: str,
    pg_url: str,
    second_pg_url: str,
    batch_size: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows of one batch probing the same key with different fingerprints (the
    two-round-trip path sends the key once with each and filters by distance on the
    server), a stored page near both (found twice), one near only one of them, and
    re-crawls that move a page toward, or away from, a later row of the batch."""
    from simhash_filter.store import pg_pipeline

    fetched: list[list[tuple[int, int, int, int]]] = []  # round trip 1's band rows, per write

    class SpyIO(pg_pipeline._PipelinedIO):
        def __init__(self, conn: Any, types: Any, pages: Any, hits: Any, *rest: Any) -> None:
            fetched.append([(h.table_no, h.key, h.page.page_id, h.page.fingerprint) for h in hits])
            super().__init__(conn, types, pages, hits, *rest)

    monkeypatch.setattr(pg_pipeline, "_PipelinedIO", SpyIO)
    rng = random.Random(13)
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC)) as opened:
        k = opened.scheme.max_distance
    a, c_far, d, e = (rng.getrandbits(64) for _ in range(4))
    r1 = _flip_low(a, 0)  # 1 from a
    r2 = _flip_low(a, *range(1, k))  # k - 1 from a, k from r1
    c = _flip_low(r2, k, k + 1)  # k + 1 from a (stored too), 2 from r2, k + 2 from r1
    d_new = d ^ 0xFFFF_0000_FFFF_0000  # d re-crawled far away
    e_new = e ^ 0x0000_FFFF_0000_FFFF
    stored = [
        ("http://one-key.example/a", a, 1),
        ("http://one-key.example/c", c, 1),
        ("http://one-key.example/c-far", c_far, 1),
        ("http://one-key.example/d", d, 1),
        ("http://one-key.example/e", e, 1),
    ]
    batch = [
        ("http://one-key.example/r1", r1, 2),
        ("http://one-key.example/r2", r2, 2),
        ("http://one-key.example/d", d_new, 2),  # CHANGED: toward r4
        ("http://one-key.example/r4", _flip_low(d_new, 1), 2),  # a copy of d's new version
        ("http://one-key.example/e", e_new, 2),  # CHANGED: away from r6
        ("http://one-key.example/r6", _flip_low(e, 1), 2),  # near e's old version only
    ]
    pg_store = open_on(path, pg_url)
    generic = open_generic(second_pg_url)
    try:
        assert (r1 ^ r2).bit_count() <= k < (r1 ^ c).bit_count()
        assert (r2 ^ c).bit_count() <= k < (a ^ c).bit_count()
        shared = set(pg_store._row(PageRow("http://x/", r1))[0].probe_keys) & set(
            pg_store._row(PageRow("http://x/", r2))[0].probe_keys
        )
        assert shared  # the key probed by both rows, with two fingerprints
        results = []
        for store in (pg_store, generic):
            verdicts = store.add_many(stored, batch_size=batch_size)
            verdicts += store.add_many(batch, batch_size=batch_size)
            results.append(verdicts)
        assert results[0] == results[1]
        kinds = [v.kind.value for v in results[1][len(stored) :]]
        assert kinds == ["duplicate", "duplicate", "changed", "duplicate", "changed", "new"]
        assert results[1][len(stored) + 3].duplicate_of is not None
        assert results[1][len(stored) + 3].duplicate_of.url == "http://one-key.example/d"
        if path != "function":  # a band row near both rows came back twice (and made one
            # candidate: the verdicts above); none farther than k from every row came back
            assert any(len(set(hits)) < len(hits) for hits in fetched)
            fps = [fp for _, fp, _ in stored + batch]
            assert all(
                min((fp ^ hit[3]).bit_count() for fp in fps) <= k
                for hits in fetched
                for hit in hits
            )
    finally:
        pg_store.close()
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


def test_prepared_statements_outlive_near_and_every_write(path: str, pg_url: str) -> None:
    rng = random.Random(5)
    with open_on(path, pg_url) as store:
        calls = 12
        for i in range(calls):
            store.check_and_add(f"http://prep.example/{i}", rng.getrandbits(64))
            store.near(rng.getrandbits(64))  # autocommit: no ROLLBACK from the pool's reset
        prepared = _prepared(store.engine)

    def runs(fragment: str) -> list[int]:
        return [n for statement, n in prepared.items() if fragment in statement]

    # one prepared statement each, parsed once and run by every call
    if path == "function":
        assert runs(decide_function(store.scheme.n_tables).name) == [calls]  # one statement
        assert runs("CROSS JOIN LATERAL") == [calls]  # near()
        assert runs("pg_advisory_xact_lock_shared") == []
    else:  # near() has its own probe; the write reads the URL's page and probes in one
        assert sorted(runs("CROSS JOIN LATERAL")) == [calls, calls]
        assert runs("pg_advisory_xact_lock_shared") == [calls]
        assert runs("INSERT INTO pages") == [calls]


def _record_commit_mode(url: str) -> None:
    """A trigger that notes the ``synchronous_commit`` each page insert ran under."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE commit_modes (mode text)"))
        conn.execute(
            text(
                "CREATE FUNCTION note_mode() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "INSERT INTO commit_modes VALUES (current_setting('synchronous_commit')); "
                "RETURN NEW; END $$"
            )
        )
        conn.execute(
            text(
                "CREATE TRIGGER note_mode AFTER INSERT ON pages "
                "FOR EACH ROW EXECUTE FUNCTION note_mode()"
            )
        )
    engine.dispose()


def _commit_modes(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        modes = [row[0] for row in conn.execute(text("SELECT mode FROM commit_modes"))]
        conn.execute(text("DELETE FROM commit_modes"))
        conn.commit()
    engine.dispose()
    return modes


def test_durable_false_runs_every_write_with_synchronous_commit_off(path: str, pg_url: str) -> None:
    rng = random.Random(6)
    config = Config.from_settings(Settings({"SIMHASH_FILTER_DURABLE": "False"}))
    assert config.durable is False
    assert Config.from_settings(Settings({})).durable is None
    with open_on(path, pg_url, durable=config.durable) as store:
        store.check_and_add("http://fast.example/first", rng.getrandbits(64))  # makes the tables
        _record_commit_mode(pg_url)
        for i in range(7):
            store.check_and_add(f"http://fast.example/{i}", rng.getrandbits(64))
        store.add_many([(f"http://fast.example/b{i}", rng.getrandbits(64), 1) for i in range(3)])
        assert store.stats().pages == 11
    assert _commit_modes(pg_url) == ["off"] * 10
    with open_on(path, pg_url) as store:  # the default: the server's
        store.check_and_add("http://slow.example/", rng.getrandbits(64))
    assert _commit_modes(pg_url) == ["on"]


def _pause_page_inserts(url: str, lock_id: int) -> None:
    """A trigger that makes every page insert wait for advisory lock ``lock_id``: a write
    paused between its reads and its first write, inside its transaction."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE FUNCTION wait_for_test() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"PERFORM pg_advisory_xact_lock_shared({lock_id}); RETURN NEW; END $$"
            )
        )
        conn.execute(
            text(
                "CREATE TRIGGER wait_for_test BEFORE INSERT ON pages "
                "FOR EACH ROW EXECUTE FUNCTION wait_for_test()"
            )
        )
    engine.dispose()


ADVISORY_LOCKS = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND {} AND database = "
    "(SELECT oid FROM pg_database WHERE datname = current_database())"
)


def test_locks_are_held_from_the_read_to_the_commit(
    path: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write is one transaction: between its read and its writes (the decision, in
    Python or on the server) the page's advisory locks are held and nothing is visible.
    The two-round-trip path is paused in its Python decision; the function (one
    statement) by a trigger that waits for a lock the test holds."""
    import threading

    from simhash_filter.store import pg_pipeline

    decided = threading.Event()
    resume = threading.Event()
    real_check_batch = pg_pipeline.decide_batch

    def paused_check_batch(*args: Any, **kwargs: Any) -> list[Verdict]:
        decided.set()
        assert resume.wait(30)
        return real_check_batch(*args, **kwargs)

    monkeypatch.setattr(pg_pipeline, "decide_batch", paused_check_batch)
    admin = create_engine(pg_url)
    test_lock = 0x7E57
    with open_on(path, pg_url) as store, admin.connect() as holder:
        resume.set()
        store.check_and_add("http://first.example/", 0xFFFF_0000_FFFF_0000)  # makes the tables
        decided.clear()
        if path == "function":
            _pause_page_inserts(pg_url, test_lock)
            holder.execute(text("SELECT pg_advisory_lock(:x)"), {"x": test_lock})
        resume.clear()
        row, _ = store._row(PageRow("http://held.example/", 0x0123_4567_89AB_CDEF, 10, None))
        # the row's key and URL locks, the global one, and (function) the trigger's wait
        locks = write_locks([(row.url, row.index_items(), row.probe_keys)])
        expected_locks = len(locks.ids) + 1
        done: list[Verdict] = []
        writer = threading.Thread(
            target=lambda: done.append(store.check_and_add(row.url, row.fingerprint))
        )
        writer.start()
        try:
            with admin.connect() as conn:
                if path == "function":  # paused: its insert waits for the test's lock
                    while not conn.execute(text(ADVISORY_LOCKS.format("NOT granted"))).scalar():
                        conn.commit()
                else:
                    assert decided.wait(30)
                held = conn.execute(text(ADVISORY_LOCKS.format("granted"))).scalar_one()
                pages = conn.execute(text("SELECT count(*) FROM pages")).scalar_one()
            assert held == expected_locks + (1 if path == "function" else 0)
            assert pages == 1
        finally:
            resume.set()
            if path == "function":
                holder.execute(text("SELECT pg_advisory_unlock(:x)"), {"x": test_lock})
            writer.join(30)
        assert [v.kind.value for v in done] == ["new"]
        with admin.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM pages")).scalar_one() == 2
            assert conn.execute(text(ADVISORY_LOCKS.format("true"))).scalar_one() == 0
    admin.dispose()


def _sketched_stream(seed: int, count: int) -> list[PageRow]:
    """Pages with sketches (a few without): copies whose sketch agrees (confirmed), copies
    whose sketch differs (rejected: admitted), re-crawls, pages without a sketch, and
    pages whose main text is a small share of a visible text of their own (a copy of
    such a text on another such page is boilerplate), and listings (a copy of a listing's
    text on a page that is not one, or the reverse, is a listing match)."""
    import numpy as np

    from simhash_filter.core.signature import decode_sketch, encode_sketch

    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    stream: list[PageRow] = []
    for i, (url, fp, length) in enumerate(mixed_stream(seed, count)):
        # 256 slots (what the minhash-lsh bands read); a few of 64 (too few: fallback keys)
        size = 64 if i % 13 == 0 else 256
        slots = nprng.integers(0, 1 << 16, size, dtype=np.uint16)
        # the page this one was made from (its nearest fingerprint), or a random one
        parent = min(stream, key=lambda p: (p.fingerprint ^ fp).bit_count(), default=None)
        if rng.random() < 0.3:
            parent = rng.choice(stream) if stream else None
        if parent is not None and parent.sketch is not None and rng.random() < 0.6:
            slots = decode_sketch(parent.sketch).text.copy()
            changed = rng.randint(0, len(slots) * 5 // 8)
            slots[rng.sample(range(len(slots)), changed)] = nprng.integers(0, 1 << 16, changed)
        page, share = None, None
        if rng.random() < 0.8:  # the visible text's own slots: never alike
            page = nprng.integers(0, 1 << 16, 16, dtype=np.uint16)
            share = rng.choice([0.05, 0.05, 0.05, 0.5])
        listing = rng.random() < 0.25
        sketch = None if i % 9 == 0 else encode_sketch(slots, page, share, listing=listing)
        stream.append(PageRow(url, fp, length, sketch))
    return stream


@pytest.mark.parametrize(
    ("k1", "index"),
    [(4, "minhash-lsh"), (64, "minhash-lsh"), (4, "multi-index")],
    ids=["lsh-k4", "lsh-any-distance", "multi-index-k4"],
)
def test_pg_path_gives_the_generic_paths_verdicts_with_sketches(
    path: str, pg_url: str, second_pg_url: str, k1: int, index: str
) -> None:
    from simhash_filter.core.signature import MatchRule

    rule = MatchRule(candidate_distance=k1, min_similarity=0.7, fallback_distance=3)
    stream = _sketched_stream(12, 450)
    pg_store = open_on(path, pg_url, rule=rule, index=index)
    generic = open_generic(second_pg_url, rule=rule, index=index)
    try:
        third = len(stream) // 3
        results = []
        for store in (pg_store, generic):
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
        assert any(v.boilerplate_of for v in results[1])  # admitted: a boilerplate match
        assert any(v.listing_of for v in results[1])  # admitted: a listing and its entry
        assert {v.kind.value for v in results[1]} == {"new", "duplicate", "unchanged", "changed"}
    finally:
        pg_store.close()
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


def test_a_role_that_may_not_create_the_function_writes_through_the_pipeline(pg_url: str) -> None:
    """None picks "pg-pipeline" where the function is absent and the role may not create
    it; asking for "pg-function" there is a ValueError that names it."""
    import os

    from sqlalchemy.engine import make_url

    FingerprintStore.open(
        pg_url, StoreOptions(spec=SPEC)
    ).close()  # the tables; no write, no function
    role = f"sf_test_no_create_{os.getpid()}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN"))
        conn.execute(text(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}"))
        conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {role}"))
        conn.execute(text(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}"))
        conn.execute(text(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}"))
    role_url = make_url(pg_url).set(username=role).render_as_string(hide_password=False)
    try:
        with FingerprintStore.open_existing(role_url) as store:
            assert store.write_path == "pg-pipeline"
            assert store.check_and_add("http://role.example/", 7).kind.value == "new"
        with pytest.raises(ValueError, match="write_path='pg-function' cannot run"):
            FingerprintStore.open_existing(role_url, write_path="pg-function")
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP OWNED BY {role}"))
            conn.execute(text(f"DROP ROLE {role}"))
        admin.dispose()
