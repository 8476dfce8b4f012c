"""FingerprintStore on SQLite and PostgreSQL: verdicts, near(), bulk mode, meta, errors."""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from support.helpers import flip, flip_n

from simhash_filter.index.schemes import DEFAULT_MAX_DISTANCE
from simhash_filter.store import (
    DatabaseNotFoundError,
    FingerprintStore,
    SchemeMismatchError,
    StoreError,
    StoreOptions,
    VerdictKind,
    canonical_url,
)

SPEC = "simhash-test;f=64;tok=words;w=tf"
K = DEFAULT_MAX_DISTANCE  # the default store's k (4: 6 blocks, 15 tables)


def brute_near(stored: dict[str, int], query: int, k: int) -> list[tuple[int, str]]:
    return sorted(
        ((fp ^ query).bit_count(), url)
        for url, fp in stored.items()
        if (fp ^ query).bit_count() <= k
    )


@pytest.fixture
def store(db_url: str) -> Iterator[FingerprintStore]:
    s = FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
    yield s
    s.close()


# ---------------------------------------------------------------- verdicts


def test_verdict_kinds(store: FingerprintStore) -> None:
    base = 0x0123_4567_89AB_CDEF
    new = store.check_and_add("http://a.example/1", base, text_length=100)
    assert new.kind is VerdictKind.NEW
    assert new.admitted
    assert new.duplicate_of is None

    dup = store.check_and_add("http://a.example/2", flip(base, [0, 17, 40, 55]))  # exactly k
    assert dup.kind is VerdictKind.DUPLICATE
    assert not dup.admitted
    assert dup.duplicate_of is not None
    assert dup.duplicate_of.url == "http://a.example/1"
    assert dup.duplicate_of.distance == K == 4
    assert dup.duplicate_of.fingerprint == base
    assert store.lookup("http://a.example/2") is None  # drops are not pages

    far = flip(base, [1, 2, 3, 4, 50])
    assert store.check_and_add("http://a.example/3", far).kind is VerdictKind.NEW

    unchanged = store.check_and_add("http://a.example/1", flip(base, [63]))
    assert unchanged.kind is VerdictKind.UNCHANGED
    assert unchanged.previous_fingerprint == base
    page = store.lookup("http://a.example/1")
    assert page is not None
    assert page.fingerprint == base  # an unchanged re-crawl keeps the stored version
    assert page.last_seen >= page.first_seen

    # re-crawl beyond k of its own version, but within k of page 3: dropped, old kept
    moved = store.check_and_add("http://a.example/1", flip(far, [60]))
    assert moved.kind is VerdictKind.DUPLICATE
    assert moved.duplicate_of is not None
    assert moved.duplicate_of.url == "http://a.example/3"
    assert store.lookup("http://a.example/1").fingerprint == base  # type: ignore[union-attr]

    # re-crawl beyond k of everything: a changed page, its bands follow it
    fresh = base ^ 0xFFFF_FFFF_0000_0000
    changed = store.check_and_add("http://a.example/1", fresh, text_length=7)
    assert changed.kind is VerdictKind.CHANGED
    assert changed.previous_fingerprint == base
    page = store.lookup("http://a.example/1")
    assert page is not None
    assert (page.fingerprint, page.text_length) == (fresh, 7)
    assert [m.url for m in store.near(flip(fresh, [5]))] == ["http://a.example/1"]
    assert store.near(base) == []  # old band rows are gone

    stats = store.stats()
    assert (stats.pages, stats.duplicates) == (2, 2)
    assert (stats.spec, stats.max_distance, stats.blocks, stats.tables) == (SPEC, 4, 6, 15)


def test_a_url_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        canonical_url(["not", "hashable"])  # type: ignore[arg-type]


def test_urls_are_canonical_identities(store: FingerprintStore) -> None:
    assert canonical_url("http://Example.com/a?b=2&a=1#frag") == "http://example.com/a?a=1&b=2"
    first = store.check_and_add("http://Example.com/a?b=2&a=1#top", 42)
    assert first.url == "http://example.com/a?a=1&b=2"
    again = store.check_and_add("http://example.com/a?a=1&b=2", 42)
    assert again.kind is VerdictKind.UNCHANGED
    assert store.lookup("http://EXAMPLE.com/a?a=1&b=2#x") is not None
    with pytest.raises(ValueError, match="non-empty"):
        store.check_and_add("  ", 1)


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5, True])
def test_fingerprints_must_be_unsigned_64_bit(store: FingerprintStore, bad: object) -> None:
    with pytest.raises(ValueError, match="fingerprint"):
        store.check_and_add("http://a.example/", bad)  # type: ignore[arg-type]


def test_unsigned_values_above_2_63_round_trip(store: FingerprintStore) -> None:
    fps = [2**63, 2**64 - 1, 2**63 + 0xFF00FF00FF, 0x5555_5555_5555_5555, 0x7FFF_FFFF_0000_0000]
    for i, fp in enumerate(fps):
        # spread them apart so none is a near-duplicate of another
        assert store.check_and_add(f"http://u.example/{i}", fp).kind is VerdictKind.NEW, fp
    for i, fp in enumerate(fps):
        page = store.lookup(f"http://u.example/{i}")
        assert page is not None
        assert page.fingerprint == fp
        assert [(m.url, m.fingerprint) for m in store.near(fp, k=0)] == [
            (f"http://u.example/{i}", fp)
        ]
    dup = store.check_and_add("http://u.example/dup", 2**64 - 2)
    assert dup.duplicate_of is not None
    assert dup.duplicate_of.fingerprint == 2**64 - 1
    record = next(store.duplicates())
    assert (record.fingerprint, record.duplicate_of_fingerprint) == (2**64 - 2, 2**64 - 1)
    # and SQL holds them as signed BIGINTs (invariant 5)
    with store.engine.connect() as conn:
        raw = conn.execute(text("SELECT fingerprint FROM pages WHERE url = 'http://u.example/1'"))
        assert raw.scalar_one() == -1


# ---------------------------------------------------------------- near()


def test_near_with_whole_fingerprint_keys(db_url: str) -> None:
    """k=0 keys each page by its whole fingerprint: keys of 2**63 and more go to the
    database as signed BIGINTs (the other schemes' keys are narrower and pass as they are)."""
    store = FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=0))
    try:
        assert store.scheme.n_tables == 1
        assert store.scheme.min_key_bits() == 64
        high, low = (1 << 64) - 2, 5
        store.add_many([("http://a.example/high", high, 0), ("http://a.example/low", low, 0)])
        assert [m.url for m in store.near(high)] == ["http://a.example/high"]
        assert [m.url for m in store.near(low)] == ["http://a.example/low"]
        assert store.near(high ^ 1) == []
    finally:
        store.close()


def test_near_sees_what_another_store_wrote_since_its_last_call(db_url: str) -> None:
    """near() keeps its SQLite connections between calls; they must hold no snapshot."""
    reader = FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
    writer = FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
    try:
        fp = 0x0123_4567_89AB_CDEF
        for _ in range(3):
            assert reader.near(fp) == []
        writer.check_and_add("http://w.example/1", fp)
        assert [m.url for m in reader.near(fp ^ 0b101)] == ["http://w.example/1"]
        writer.check_and_add("http://w.example/2", fp ^ (1 << 40) ^ (1 << 41) ^ (1 << 42) ^ 1)
        assert reader.count_candidates(fp) >= 1
    finally:
        reader.close()
        writer.close()


def test_a_failing_probe_is_a_store_error_and_the_next_one_works(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'probe.db'}"
    store = FingerprintStore.open(url, StoreOptions(spec=SPEC))
    try:
        store.check_and_add("http://p.example/", 42)
        assert [m.url for m in store.near(42)] == ["http://p.example/"]
        with sqlite3.connect(tmp_path / "probe.db") as raw:
            raw.execute("ALTER TABLE bands RENAME TO bands_away")
        with pytest.raises(StoreError, match="no such table: bands"):
            store.near(42)
        with sqlite3.connect(tmp_path / "probe.db") as raw:
            raw.execute("ALTER TABLE bands_away RENAME TO bands")
        assert [m.url for m in store.near(42)] == ["http://p.example/"]
    finally:
        store.close()


@pytest.mark.parametrize("k", [None, 3])  # None: the default scheme (k=4, b=6); 3: the paper's
def test_near_agrees_with_brute_force(db_url: str, k: int | None) -> None:
    rng = random.Random(7)
    if k is None:
        store = FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
        k = K
    else:
        store = FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=k))
    assert store.scheme.max_distance == k
    rows: list[tuple[str, int, int]] = []
    for i in range(2500):
        rows.append((f"http://r.example/{i}", rng.getrandbits(64), 0))
    centers = [rng.getrandbits(64) for _ in range(200)]
    for c, center in enumerate(centers):
        for v in range(4):
            rows.append((f"http://c.example/{c}/{v}", flip_n(rng, center, rng.randint(0, 6)), 0))
    rng.shuffle(rows)
    verdicts = store.add_many(rows, batch_size=500)
    stored = {v.url: v.fingerprint for v in verdicts if v.kind is VerdictKind.NEW}
    assert len(stored) == store.stats().pages

    queries = [flip_n(rng, c, rng.randint(0, 5)) for c in centers]
    queries += [flip_n(rng, fp, rng.randint(0, 4)) for fp in rng.sample(list(stored.values()), 100)]
    queries += [rng.getrandbits(64) for _ in range(50)]
    found_any = 0
    for q in queries:
        got = [(m.distance, m.url) for m in store.near(q)]
        assert got == brute_near(stored, q, k)
        for m in store.near(q):
            assert m.fingerprint == stored[m.url]
        got1 = [(m.distance, m.url) for m in store.near(q, k=1)]
        assert got1 == brute_near(stored, q, 1)
        found_any += bool(got)
    assert found_any > 100  # the queries did exercise matches
    with pytest.raises(ValueError, match=rf"k must be in 0\.\.{k}"):
        store.near(1, k=k + 1)
    store.close()


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FingerprintStore]:
    path = tmp_path_factory.mktemp("hyp") / "dedup.db"
    store = FingerprintStore.open(f"sqlite:///{path}", StoreOptions(spec=SPEC))
    rng = random.Random(3)
    store.add_many((f"http://bg.example/{i}", rng.getrandbits(64), 0) for i in range(2000))
    yield store
    store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fp=st.integers(min_value=0, max_value=2**64 - 1),
    flips=st.sets(st.integers(min_value=0, max_value=63), max_size=K),
    far=st.sets(st.integers(min_value=0, max_value=63), min_size=K + 1, max_size=K + 8),
)
def test_flipped_fingerprints_are_found_and_far_ones_never(
    loaded_store: FingerprintStore, fp: int, flips: set[int], far: set[int]
) -> None:
    url = f"http://h.example/{fp:016x}"
    verdict = loaded_store.check_and_add(url, fp)
    assume_stored = verdict.kind is not VerdictKind.DUPLICATE
    if assume_stored:
        hits = {m.url: m.distance for m in loaded_store.near(flip(fp, flips))}
        assert hits[verdict.url] == len(flips)
        distant = {m.url for m in loaded_store.near(flip(fp, far))}
        assert verdict.url not in distant
    for m in loaded_store.near(flip(fp, far)):
        assert m.distance <= K
        assert (m.fingerprint ^ flip(fp, far)).bit_count() == m.distance


# ---------------------------------------------------------------- bulk mode


def _stream(seed: int, n: int = 600) -> list[tuple[str, int, int]]:
    """Near-duplicates, exact repeats, re-crawls (unchanged and changed) mixed."""
    rng = random.Random(seed)
    rows: list[tuple[str, int, int]] = []
    fps: list[int] = []
    for i in range(n):
        roll = rng.random()
        if fps and roll < 0.3:
            fp = flip_n(rng, rng.choice(fps), rng.randint(0, 5))
        else:
            fp = rng.getrandbits(64)
        if rows and roll > 0.85:
            url, old, _ = rng.choice(rows)  # a re-crawl of a URL seen before
            if roll > 0.92:
                fp = flip_n(rng, old, rng.randint(0, 3))  # ... mostly unchanged
        else:
            url = f"http://s.example/{i}"
        fps.append(fp)
        rows.append((url, fp, i))
    return rows


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_add_many_gives_the_verdicts_of_single_calls(tmp_path: Path, batch_size: int) -> None:
    rows = _stream(11)
    single = FingerprintStore.open(f"sqlite:///{tmp_path / 'single.db'}", StoreOptions(spec=SPEC))
    bulk = FingerprintStore.open(f"sqlite:///{tmp_path / 'bulk.db'}", StoreOptions(spec=SPEC))
    expected = [single.check_and_add(u, fp, text_length=n) for u, fp, n in rows]
    got = bulk.add_many(rows, batch_size=batch_size)
    assert [v.kind for v in got] == [v.kind for v in expected]
    kinds = {v.kind for v in got}
    assert kinds == set(VerdictKind)  # the stream exercised every case

    def key(v: object) -> object:
        dup = getattr(v, "duplicate_of", None)
        return (
            getattr(v, "url", None),
            getattr(v, "fingerprint", None),
            getattr(v, "previous_fingerprint", None),
            None if dup is None else (dup.url, dup.fingerprint, dup.distance),
        )

    assert [key(v) for v in got] == [key(v) for v in expected]
    for url, _fp, _n in rows:
        a, b = single.lookup(url), bulk.lookup(url)
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert (a.fingerprint, a.text_length) == (b.fingerprint, b.text_length)
    assert single.stats().duplicates == bulk.stats().duplicates
    single.close()
    bulk.close()


def test_add_many_on_both_backends(store: FingerprintStore) -> None:
    rows = _stream(5, 300)
    verdicts = store.add_many(rows, batch_size=64)
    assert len(verdicts) == len(rows)
    admitted = {v.url: v.fingerprint for v in verdicts if v.kind is VerdictKind.NEW}
    # pages that became NEW and were never changed afterwards keep their fingerprint
    assert store.stats().pages == len(admitted)
    with pytest.raises(ValueError, match="batch_size"):
        store.add_many([], batch_size=0)


# ---------------------------------------------------------------- drops log


def test_duplicates_newest_first_with_filters(store: FingerprintStore) -> None:
    store.check_and_add("http://one.example/a", 1000)
    store.check_and_add("http://two.example/a", 2**40)
    store.check_and_add("http://one.example/b", 1001)
    store.check_and_add("http://two.example/b", 2**40 + 1)
    store.check_and_add("http://one.example/c", 1002)
    drops = list(store.duplicates())
    assert [d.url for d in drops] == [
        "http://one.example/c",
        "http://two.example/b",
        "http://one.example/b",
    ]
    assert drops[0].duplicate_of_url == "http://one.example/a"
    assert drops[0].distance == 1
    assert [d.url for d in store.duplicates(domain="TWO.example")] == ["http://two.example/b"]
    assert len(list(store.duplicates(limit=2))) == 2
    future = datetime.now(UTC) + timedelta(hours=1)
    assert list(store.duplicates(since=future)) == []
    assert len(list(store.duplicates(since=drops[-1].seen_at))) == 3


# ---------------------------------------------------------------- meta, schemes, reindex


def test_spec_mismatch_says_what_differs(db_url: str) -> None:
    FingerprintStore.open(db_url, StoreOptions(spec=SPEC)).close()
    with pytest.raises(SchemeMismatchError) as info:
        FingerprintStore.open(db_url, StoreOptions(spec="simhash-test;f=64;tok=jieba;w=tf"))
    message = str(info.value)
    assert "tok=words" in message
    assert "tok=jieba" in message
    assert "re-crawl" in message  # no import option makes a library's own spec


def test_scheme_mismatch_and_reindex(db_url: str) -> None:
    rng = random.Random(1)
    store = FingerprintStore.open(
        db_url, StoreOptions(spec=SPEC, max_distance=3)
    )  # the paper's: b=4
    rows = [(f"http://x.example/{i}", rng.getrandbits(64), 0) for i in range(500)]
    store.add_many(rows)
    store.close()

    # a k=3 database opened with the default k=4 (e.g. made before k=4 was the default)
    with pytest.raises(SchemeMismatchError) as info:
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
    assert "max_distance: stored 3, requested 4" in str(info.value)
    assert "simhash-filter reindex --blocks 6 --max-distance 4" in str(info.value)
    with pytest.raises(SchemeMismatchError) as info:
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=4, blocks=5))
    assert "simhash-filter reindex --blocks 5 --max-distance 4" in str(info.value)
    with pytest.raises(SchemeMismatchError, match="blocks: stored 4, requested 6"):
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=3, blocks=6))

    store = FingerprintStore.open_existing(db_url)
    store.reindex(blocks=6, max_distance=3)
    assert store.scheme.n_tables == 20
    stored = {u: fp for u, fp, _ in rows}
    for _url, fp in rng.sample(sorted(stored.items()), 50):
        q = flip_n(rng, fp, 3)
        assert [(m.distance, m.url) for m in store.near(q)] == brute_near(stored, q, 3)
    store.close()

    # the new scheme is recorded: blocks=None takes it, an explicit 6 matches it
    reopened = FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=3))
    assert reopened.scheme.n_blocks == 6
    assert reopened.stats().tables == 20
    reopened.close()
    FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=3, blocks=6)).close()
    with pytest.raises(SchemeMismatchError, match="blocks: stored 6, requested 4"):
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=3, blocks=4))

    # a larger k after reindexing finds pages at distance 4
    store = FingerprintStore.open_existing(db_url)
    store.reindex(blocks=5, max_distance=4)
    fp = next(iter(stored.values()))
    q = flip_n(rng, fp, 4)
    assert [(m.distance, m.url) for m in store.near(q)] == brute_near(stored, q, 4)
    store.close()

    # reindexed to the default scheme, the default open takes it again
    store = FingerprintStore.open_existing(db_url)
    store.reindex(blocks=6, max_distance=4)
    store.close()
    store = FingerprintStore.open(db_url, StoreOptions(spec=SPEC))
    assert (store.scheme.max_distance, store.scheme.n_blocks, store.scheme.n_tables) == (4, 6, 15)
    for _url, fp in rng.sample(sorted(stored.items()), 20):
        q = flip_n(rng, fp, 4)
        assert [(m.distance, m.url) for m in store.near(q)] == brute_near(stored, q, 4)
    store.close()


def test_open_existing_reads_the_stored_settings(db_url: str) -> None:
    FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=2, blocks=5)).close()
    store = FingerprintStore.open_existing(db_url)
    assert store.spec == SPEC
    assert (store.scheme.max_distance, store.scheme.n_blocks, store.scheme.n_tables) == (2, 5, 10)
    store.close()


# ---------------------------------------------------------------- write paths


def test_write_path_is_chosen_at_open_and_shown(db_url: str) -> None:
    """None takes the best the back-end supports; "sqlalchemy" runs anywhere; a name that
    cannot run here, or is no name, is a ValueError that names it."""
    best = "sqlalchemy" if db_url.startswith("sqlite") else "pg-function"
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        assert store.write_path == best
    with FingerprintStore.open_existing(db_url, write_path="sqlalchemy") as store:
        assert store.write_path == "sqlalchemy"
        assert store.check_and_add("http://w.example/", 5).kind is VerdictKind.NEW
    with pytest.raises(ValueError, match="'pg-two'"):
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC, write_path="pg-two"))
    if db_url.startswith("sqlite"):
        for name in ("pg-function", "pg-pipeline"):
            with pytest.raises(ValueError, match=f"write_path='{name}' needs PostgreSQL"):
                FingerprintStore.open(db_url, StoreOptions(spec=SPEC, write_path=name))
            with pytest.raises(ValueError, match=f"'{name}'"):
                FingerprintStore.open_existing(db_url, write_path=name)
    else:
        with FingerprintStore.open(
            db_url, StoreOptions(spec=SPEC, write_path="pg-pipeline")
        ) as store:
            assert store.write_path == "pg-pipeline"


# ---------------------------------------------------------------- missing and broken databases


def test_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nothing.db"
    with pytest.raises(DatabaseNotFoundError, match="does not exist"):
        FingerprintStore.open(f"sqlite:///{path}", StoreOptions(spec=SPEC, create=False))
    with pytest.raises(DatabaseNotFoundError):
        FingerprintStore.open_existing(f"sqlite:///{path}")
    assert not path.exists()


def test_database_without_meta_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with pytest.raises(DatabaseNotFoundError, match="no meta table"):
        FingerprintStore.open_existing(f"sqlite:///{path}")


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE pages (x)")
    with pytest.raises(StoreError, match="not a simhash-filter database"):
        FingerprintStore.open(f"sqlite:///{path}", StoreOptions(spec=SPEC))


@pytest.mark.parametrize("create", [True, False])
def test_text_file_is_a_clear_store_error(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not a database, just some notes\n" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database") as info:
        FingerprintStore.open(f"sqlite:///{path}", StoreOptions(spec=SPEC, create=create))
    assert "Traceback" not in str(info.value)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        FingerprintStore.open_existing(f"sqlite:///{path}")


def test_missing_folder_is_a_clear_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        FingerprintStore.open(f"sqlite:///{tmp_path / 'no' / 'such.db'}", StoreOptions(spec=SPEC))


@pytest.mark.postgres
def test_password_never_appears_in_messages(pg_url: str) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(pg_url).set(password="hunter2-secret", database="sf_no_such_database")
    with pytest.raises(DatabaseNotFoundError) as info:
        FingerprintStore.open(
            url.render_as_string(hide_password=False), StoreOptions(spec=SPEC, create=False)
        )
    assert "hunter2-secret" not in str(info.value)
    assert "***" in str(info.value)
    good = FingerprintStore.open(
        make_url(pg_url).set(password="hunter2-secret").render_as_string(hide_password=False),
        StoreOptions(spec=SPEC),
    )
    assert "hunter2-secret" not in repr(good)
    assert "hunter2-secret" not in good.display_url
    good.close()


def test_in_memory_sqlite_works_in_one_thread() -> None:
    store = FingerprintStore.open("sqlite://", StoreOptions(spec=SPEC))
    assert store.check_and_add("http://m.example/", 5).kind is VerdictKind.NEW
    assert store.check_and_add("http://m.example/2", 4).kind is VerdictKind.DUPLICATE
    store.close()


def _end_other_sessions(pg_url: str) -> None:
    """Have the server end every other session of the test database (the store's pooled
    connections), waiting until each backend is gone: its goodbye is then on the socket
    (pg_terminate_backend's timeout only guards a hang)."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            ended = (
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity "
                        "WHERE datname = :db AND pid <> pg_backend_pid()"
                    ),
                    {"db": make_url(pg_url).database},
                )
                .scalars()
                .all()
            )
    finally:
        admin.dispose()
    assert ended, "the store had no connection to end"
    assert all(ended), "a backend did not end"


@pytest.mark.postgres
def test_lost_postgresql_connections_are_replaced(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Pooled connections the server closed while they were idle are replaced at checkout:
    no statement meets a dead connection (no retry, and nothing logged by psycopg, which
    would say "error ignored terminating <Pipeline>: the connection is lost")."""
    store = FingerprintStore.open(pg_url, StoreOptions(spec=SPEC))
    try:
        assert store.check_and_add("http://pg.example/1", 0x0F0F_0F0F_0F0F_0F0F).kind is (
            VerdictKind.NEW
        )
        _end_other_sessions(pg_url)
        caplog.set_level(logging.DEBUG, logger="simhash_filter")
        caplog.set_level(logging.WARNING, logger="psycopg")
        assert store.check_and_add("http://pg.example/2", 0xF0F0_F0F0_F0F0_F0F0).kind is (
            VerdictKind.NEW
        )
        assert store.stats().pages == 2
        assert [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("psycopg") and r.levelno >= logging.WARNING
        ] == []
        assert "retrying" not in caplog.text
    finally:
        store.close()


@pytest.mark.postgres
def test_a_postgresql_connection_lost_in_use_is_retried(
    pg_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection lost after checkout (here: the checkout's check told to see nothing)
    fails its transaction, which the store runs again on a fresh connection."""
    from simhash_filter.store import engine

    store = FingerprintStore.open(pg_url, StoreOptions(spec=SPEC))
    try:
        assert store.check_and_add("http://pg.example/1", 0x0F0F_0F0F_0F0F_0F0F).kind is (
            VerdictKind.NEW
        )
        _end_other_sessions(pg_url)
        monkeypatch.setattr(engine, "closed_by_server", lambda _connection: False)
        caplog.set_level(logging.DEBUG, logger="simhash_filter")
        assert store.check_and_add("http://pg.example/2", 0xF0F0_F0F0_F0F0_F0F0).kind is (
            VerdictKind.NEW
        )
        assert "retrying" in caplog.text  # the first attempt met the dead connection
        monkeypatch.undo()
        assert store.stats().pages == 2
    finally:
        store.close()


def test_spec_difference_is_public() -> None:
    from simhash_filter.store import spec_difference

    assert (
        spec_difference("a;b=1;c", "a;b=2;c") == "stored spec has 'b=1', requested spec has 'b=2'"
    )
