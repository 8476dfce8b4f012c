"""PostgreSQL's band layout (store/key_columns.py): a page's keys are columns of its row.

What it must keep: each key in its own table's column and nowhere else; a probe that
looks a key up in its own table's index only (so its cost is one index descent a key,
whatever the number of tables); SQLite's databases of schema 3 read as they are; a
PostgreSQL database of schema 3 (band rows) refused until ``reindex`` converts it, and
converted with every page kept and found."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, inspect, text

from simhash_filter.cli import main
from simhash_filter.core.signature import MatchRule, encode_sketch
from simhash_filter.index.schemes import MINHASH_LSH, MinHashLshScheme
from simhash_filter.store import FingerprintStore, StoreError, StoreOptions, VerdictKind
from simhash_filter.store.batch import KeyRow, PageUpdate
from simhash_filter.store.encoding import to_sql_int
from simhash_filter.store.key_columns import (
    KeyedUpdate,
    column_names,
    key_rows,
    key_rows_source,
    keys_by_table,
    present_columns,
    split_updates,
)
from simhash_filter.store.pg import near_sql
from simhash_filter.store.schema import SCHEMA_VERSION, keys_table

SPEC = "simhash-test;f=64;tok=words;w=tf"
RULE = MatchRule.for_distance(64)
SCHEME = MinHashLshScheme()


def sketch(seed: int) -> bytes:
    slots = np.random.default_rng(seed).integers(0, 1 << 16, 256, dtype=np.uint16)
    return encode_sketch(slots)


def test_keys_by_table_puts_each_key_in_its_tables_place() -> None:
    assert keys_by_table([(0, 5), (2, 7)], 4) == [5, None, 7, None]
    assert (
        keys_by_table(SCHEME.fallback_items(0xF0F0), SCHEME.n_tables)[: SCHEME.n_blocks]
        == [None] * SCHEME.n_blocks
    )
    with pytest.raises(ValueError, match="keyed twice"):
        keys_by_table([(1, 5), (1, 6)], 4)
    with pytest.raises(ValueError, match="outside"):
        keys_by_table([(4, 5)], 4)


def test_key_rows_set_a_pages_columns_whole() -> None:
    rows = key_rows(
        [KeyRow(0, 2**64 - 1, 7, 1), KeyRow(1, 3, 7, 1), KeyRow(1, 4, -1, 2)],
        [KeyRow(2, 9, 7, 0)],  # the old key of a moved page: overwritten by its new row
        3,
    )
    assert rows == {7: [to_sql_int(2**64 - 1), 3, None], -1: [None, 4, None]}
    # a page that leaves the index (its URL dropped as a copy): every column emptied
    assert key_rows([], [KeyRow(0, 1, 8, 0)], 3) == {8: [None, None, None]}


def test_a_pages_new_keys_go_with_its_update() -> None:
    """One UPDATE a row: a page whose keys change is updated with them, the others alone."""
    moved, kept = PageUpdate(7, 1, 10, None), PageUpdate(8, 2, 20, None)
    plain, keyed = split_updates([moved, kept], {7: [3, None], -1: [4, None]})
    assert plain == [kept]
    assert keyed == [KeyedUpdate(moved, [3, None])]
    with pytest.raises(ValueError, match=r"pages \[9\] get new table keys without an update"):
        split_updates([kept], {9: [5, None]})


@pytest.mark.postgres
def test_a_postgresql_database_keeps_the_keys_in_the_page_rows(pg_url: str) -> None:
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        assert store.scheme.kind == MINHASH_LSH
        store.check_and_add("http://a.example/", 1, sketch=sketch(1))
        store.check_and_add("http://b.example/", 2)  # no sketch: the fallback tables
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert not inspect(conn).has_table(keys_table.name)
            assert present_columns(conn) == column_names(SCHEME.n_tables)
            indexes = {i["name"] for i in inspect(conn).get_indexes("pages")}
            assert {f"pages_band_{t}" for t in range(SCHEME.n_tables)} <= indexes
            stored = dict(
                conn.execute(
                    text(
                        "SELECT url, ARRAY[" + ", ".join(column_names(SCHEME.n_tables)) + "] "
                        "FROM pages"
                    )
                ).all()
            )
    finally:
        engine.dispose()
    expected = {
        "http://a.example/": SCHEME.index_items(1, sketch(1)),
        "http://b.example/": SCHEME.index_items(2, None),
    }
    for url, items in expected.items():
        keys = keys_by_table(items, SCHEME.n_tables)
        assert stored[url] == [None if k is None else to_sql_int(k) for k in keys]


@pytest.mark.postgres
def test_a_probe_looks_each_key_up_in_its_own_tables_index_only(pg_url: str) -> None:
    """near()'s statement over 22 tables: an index scan runs once a probe key (the other
    tables' branches are cut by their one-time filter), and finds the page."""
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        store.add_many(
            [(f"http://p.example/{i}", i, 0, sketch(i)) for i in range(200)], batch_size=100
        )
    probe = SCHEME.probe_keys(42, sketch(42))
    sql = near_sql(SCHEME.n_tables, bit_count=True)
    engine = create_engine(pg_url)
    try:
        raw: Any = engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute(
                f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}",
                (
                    [t for t, _ in probe],
                    [to_sql_int(k) for _, k in probe],
                    to_sql_int(42),
                    64,
                ),
            )
            (plan,) = cursor.fetchone()
        finally:
            raw.close()
    finally:
        engine.dispose()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    scans: list[dict[str, Any]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Index Name", "").startswith("pages_band_"):
            scans.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    assert len(scans) == SCHEME.n_tables  # every table's index is in the plan
    assert sum(node["Actual Loops"] for node in scans) == len(probe)  # each run once a key
    assert plan[0]["Plan"]["Actual Rows"] == 1  # page 42 itself


def test_a_sqlite_database_of_schema_3_opens_as_it_is(sqlite_url: str) -> None:
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        store.check_and_add("http://a.example/", 1, sketch=sketch(1))
    engine = create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))
    engine.dispose()
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        copy = store.check_and_add("http://b.example/", 2**64 - 1, sketch=sketch(1))
        assert copy.kind is VerdictKind.DUPLICATE


def _downgrade_to_schema_3(url: str, n_pages: int) -> None:
    """Make a PostgreSQL database read as one written before the keys moved into the
    page rows: a ``bands`` table with each page's rows, no key columns, schema 3."""
    engine = create_engine(url)
    with engine.begin() as conn:
        keys_table.create(conn)
        pages = conn.execute(text("SELECT id, fingerprint, sketch FROM pages")).all()
        assert len(pages) == n_pages
        rows = [
            {"t": t, "k": to_sql_int(key), "p": page_id, "f": fp}
            for page_id, fp, sk in pages
            for t, key in SCHEME.index_items(fp % 2**64, None if sk is None else bytes(sk))
        ]
        conn.execute(
            text("INSERT INTO bands (table_no, key, page_id, fingerprint) VALUES (:t, :k, :p, :f)"),
            rows,
        )
        names = present_columns(conn)
        conn.execute(text("ALTER TABLE pages " + ", ".join(f"DROP COLUMN {n}" for n in names)))
        conn.execute(text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))
    engine.dispose()


@pytest.mark.postgres
def test_reindex_converts_a_schema_3_postgresql_database_in_place(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sketches = [sketch(s) for s in range(20)]
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        for i, sk in enumerate(sketches):
            store.check_and_add(f"http://old.example/{i}", i << 40, sketch=sk)
        store.check_and_add("http://bare.example/", 0xF0F0)  # sketchless: fallback keys
    _downgrade_to_schema_3(pg_url, len(sketches) + 1)
    with pytest.raises(StoreError, match=r"schema version 3.*columns.*reindex --index"):
        FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, rule=RULE))
    assert main(["--db", pg_url, "reindex", "--index", MINHASH_LSH]) == 0
    capsys.readouterr()
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        assert not inspect(conn).has_table(keys_table.name)
        assert present_columns(conn) == column_names(SCHEME.n_tables)
        version = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'"))
        assert version.scalar_one() == str(SCHEMA_VERSION)
        counts = conn.execute(
            text(
                f"SELECT table_no, count(*) FROM {key_rows_source('postgresql', SCHEME.n_tables)} "
                "GROUP BY table_no ORDER BY table_no"
            )
        ).all()
    engine.dispose()
    bands = [(t, len(sketches)) for t in range(SCHEME.n_blocks)]
    assert [tuple(row) for row in counts] == bands + [
        (t, 1) for t in range(SCHEME.n_blocks, SCHEME.n_tables)
    ]
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, rule=RULE)) as store:
        assert store.stats().pages == len(sketches) + 1
        copy = store.check_and_add(
            "http://new.example/7", (7 << 40) ^ (2**64 - 1), sketch=sketches[7]
        )
        assert copy.kind is VerdictKind.DUPLICATE
        assert copy.duplicate_of is not None
        assert copy.duplicate_of.url == "http://old.example/7"
        near = store.check_and_add("http://bare2.example/", 0xF0F1)  # 1 bit: the fallback
        assert near.kind is VerdictKind.DUPLICATE
