"""The minhash-lsh index in the store: copies found through one band, sketchless pages
through the fallback tables, re-keying, racing processes, and converting a schema-2 database."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from simhash_filter.cli import main
from simhash_filter.core.signature import MatchRule, encode_sketch
from simhash_filter.index.schemes import DEFAULT_LSH_BANDS, MINHASH_LSH, MinHashLshScheme
from simhash_filter.store import FingerprintStore, StoreError, StoreOptions, VerdictKind
from simhash_filter.store.key_columns import key_rows_source
from tests.support.racers import race, spawn

SPEC = "simhash-test;f=64;tok=words;w=tf"
RULE = MatchRule.for_distance(64)
SCHEME = MinHashLshScheme()


def base_slots(seed: int) -> np.ndarray[Any, np.dtype[np.uint16]]:
    return np.random.default_rng(seed).integers(0, 1 << 16, 256, dtype=np.uint16)


def variant(slots: np.ndarray[Any, np.dtype[np.uint16]], band: int, who: int) -> bytes:
    """``slots`` changed in one slot of every band but ``band`` (row ``who`` of it), so two
    variants of other ``who`` share exactly that band and agree on 1 - 34/256 of the slots."""
    changed = slots.copy()
    for other in range(SCHEME.n_blocks):
        if other != band:
            changed[other + SCHEME.n_blocks * who] ^= 0x5A5A
    return encode_sketch(changed)


def test_a_copy_sharing_one_band_is_found_for_every_band(sqlite_url: str) -> None:
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        assert store.scheme.kind == MINHASH_LSH
        for band in range(DEFAULT_LSH_BANDS):
            slots = base_slots(band)
            a, b = variant(slots, band, 0), variant(slots, band, 1)
            shared = set(SCHEME.index_items(1, a)) & set(SCHEME.index_items(2, b))
            assert [t for t, _ in shared] == [band]
            first = store.check_and_add(f"http://a.example/{band}", band, sketch=a)
            second = store.check_and_add(f"http://b.example/{band}", ~band & (2**64 - 1), sketch=b)
            assert first.kind is VerdictKind.NEW
            assert second.kind is VerdictKind.DUPLICATE, band  # 64 bits apart: found by a band
            assert second.duplicate_of is not None
            assert second.duplicate_of.url == f"http://a.example/{band}"


def _band_rows(url: str) -> list[tuple[int, int]]:
    engine = create_engine(url)
    bands = key_rows_source(engine.dialect.name, SCHEME.n_tables)
    with engine.connect() as conn:
        rows = [
            (t, n)
            for t, n in conn.execute(
                text(f"SELECT table_no, count(*) FROM {bands} GROUP BY table_no ORDER BY table_no")
            )
        ]
    engine.dispose()
    return rows


def test_sketchless_pages_live_in_the_fallback_tables_until_a_sketch_fills_in(
    db_url: str,
) -> None:
    sketch = encode_sketch(base_slots(99))
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        assert store.check_and_add("http://x.example/a", 0xF0F0).kind is VerdictKind.NEW
        fallback = list(range(SCHEME.n_blocks, SCHEME.n_tables))
        assert _band_rows(db_url) == [(t, 1) for t in fallback]
        # a page with a sketch within 3 bits finds it there (judged by distance alone)
        near = store.check_and_add("http://x.example/b", 0xF0F1, sketch=sketch)
        assert near.kind is VerdictKind.DUPLICATE
        # the same URL again, now with a sketch: unchanged, and moved to its band keys
        again = store.check_and_add("http://x.example/a", 0xF0F0, sketch=sketch)
        assert again.kind is VerdictKind.UNCHANGED
        assert _band_rows(db_url) == [(t, 1) for t in range(SCHEME.n_blocks)]
        # so a far copy of its text is now found through a band
        copy = store.check_and_add("http://x.example/c", 0x0F0F_0000_0000, sketch=sketch)
        assert copy.kind is VerdictKind.DUPLICATE
        assert copy.duplicate_of is not None
        assert copy.duplicate_of.url == "http://x.example/a"
        # near() by its sketch finds it whatever the distance; by a bare fingerprint, a scan
        assert [m.url for m in store.near(0x0F0F_0000_0000, sketch=sketch)] == [
            "http://x.example/a"
        ]
        assert [m.url for m in store.near(0xF0F0, 0)] == ["http://x.example/a"]


WORKER = r"""
import json, sys
import numpy as np
from simhash_filter.core.signature import MatchRule, encode_sketch
from simhash_filter.store import FingerprintStore, StoreOptions

db_url, spec, proc, n_centres, n_unique = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
bands = 18
rows = []
for c in range(n_centres):
    slots = np.random.default_rng(c).integers(0, 1 << 16, 256, dtype=np.uint16)
    for other in range(bands):  # every variant of a centre shares band c % 18 only
        if other != c % bands:
            slots[other + bands * proc] ^= 0x5A5A
    fp = int(np.random.default_rng(1000 * c + proc).integers(0, 2**63))
    rows.append((f"http://p{proc}.example/c{c}", fp, encode_sketch(slots)))
rng = np.random.default_rng(77 + proc)
for u in range(n_unique):
    slots = rng.integers(0, 1 << 16, 256, dtype=np.uint16)
    rows.append((f"http://p{proc}.example/u{u}", int(rng.integers(0, 2**63)), encode_sketch(slots)))
order = np.random.default_rng(proc).permutation(len(rows))
print("ready", flush=True)
sys.stdin.readline()
store = FingerprintStore.open(db_url, StoreOptions(spec=spec, rule=MatchRule.for_distance(64)))
for i in order:
    url, fp, sketch = rows[int(i)]
    v = store.check_and_add(url, fp, sketch=sketch)
    print(json.dumps({"url": v.url, "kind": v.kind.value}), flush=True)
print("done", flush=True)
"""


@pytest.mark.slow
def test_processes_never_keep_two_copies_that_share_one_band(db_url: str) -> None:
    """Four processes race variants of shared centres; any two variants of a centre are
    copies (0.87 of the slots agree) and share exactly one band, nothing else: only that
    band's key locks make their transactions meet."""
    n_procs, n_centres, n_unique = 4, 60, 30
    procs = [spawn(WORKER, db_url, SPEC, p, n_centres, n_unique) for p in range(n_procs)]
    verdicts = [json.loads(line) for line in race(procs)]
    kept = {v["url"] for v in verdicts if v["kind"] == "new"}
    # exactly one variant of each centre kept; every unique page kept
    for c in range(n_centres):
        assert len([u for u in kept if u.endswith(f"/c{c}")]) == 1, c
    assert len([u for u in kept if "/u" in u]) == n_procs * n_unique
    engine = create_engine(db_url)
    with engine.connect() as conn:
        stored = {url for (url,) in conn.execute(text("SELECT url FROM pages"))}
        dropped = conn.execute(text("SELECT count(*) FROM duplicates")).scalar_one()
    engine.dispose()
    assert stored == kept
    assert dropped == n_centres * (n_procs - 1)


def _downgrade_to_schema_2(url: str) -> None:
    """Make a database read as one written before the minhash-lsh index (schema 2)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = '2' WHERE key = 'schema_version'"))
        conn.execute(text("DELETE FROM meta WHERE key = 'rows'"))
    engine.dispose()


def test_reindex_converts_a_schema_2_database_in_place(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sketches = [encode_sketch(base_slots(s)) for s in range(20)]
    with FingerprintStore.open(
        sqlite_url, StoreOptions(spec=SPEC, rule=MatchRule(), index="multi-index")
    ) as store:
        for i, sketch in enumerate(sketches):
            store.check_and_add(f"http://old.example/{i}", i << 40, sketch=sketch)
    _downgrade_to_schema_2(sqlite_url)
    with pytest.raises(StoreError, match=r"schema version 2.*reindex --index minhash-lsh"):
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE))
    assert main(["--db", sqlite_url, "reindex", "--index", MINHASH_LSH]) == 0
    capsys.readouterr()
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        assert store.scheme.kind == MINHASH_LSH
        assert store.rule == RULE
        assert store.stats().pages == len(sketches)
        # a far copy of a stored text is now found through its bands
        copy = store.check_and_add(
            "http://new.example/7", (7 << 40) ^ (2**64 - 1), sketch=sketches[7]
        )
        assert copy.kind is VerdictKind.DUPLICATE
        assert copy.duplicate_of is not None
        assert copy.duplicate_of.url == "http://old.example/7"
    assert _band_rows(sqlite_url) == [(t, len(sketches)) for t in range(SCHEME.n_blocks)]


def test_near_of_a_bare_fingerprint_scans_every_page(sqlite_url: str) -> None:
    """No sketch, no band: near() reads every stored fingerprint, and names every page
    within k, however many (more than one IN list of URLs holds)."""
    n = 6_000
    rng = np.random.default_rng(5)
    fps = [int(x) for x in rng.integers(0, 2**63, n, dtype=np.int64)]
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        store.add_many((f"http://scan.example/{i}", fp, 0) for i, fp in enumerate(fps))
        everything = store.near(0, 64)
        assert len(everything) == n
        assert {m.url for m in everything} == {f"http://scan.example/{i}" for i in range(n)}
        assert [m.distance for m in everything] == sorted(fp.bit_count() for fp in fps)
        assert [m.url for m in store.near(fps[7], 0)] == ["http://scan.example/7"]


def test_the_one_key_probe_reads_the_rows_the_key_list_probe_reads(db_url: str) -> None:
    """A probe with at most one key a table (minhash-lsh's) runs ``key = ?``; with more it
    runs the key-list statement: both must read the same band rows."""
    from simhash_filter.store.statements import Probe, connection_execute

    with FingerprintStore.open(
        db_url, StoreOptions(spec=SPEC, rule=RULE, index=MINHASH_LSH)
    ) as store:
        for i in range(40):
            sketch = variant(base_slots(7), band=i % SCHEME.n_blocks, who=i % 3)
            store.check_and_add(f"http://probe.example/{i}", i * 977, sketch=sketch)
        keys = store.scheme.probe_keys(123, variant(base_slots(7), band=3, who=1))
        assert all(sum(1 for t, _ in keys if t == table) <= 1 for table in range(22))
        absent = (keys[0][0], keys[0][1] ^ 1)
        probe = Probe(store.engine.dialect, store.scheme.n_tables)
        with store.engine.connect() as conn:
            execute = connection_execute(conn)
            one_key = sorted(map(tuple, probe.rows(execute, keys)))
            key_list = sorted(map(tuple, probe.rows(execute, [*keys, absent])))
    assert one_key, "the stored variants share bands with the probe"
    assert one_key == key_list
