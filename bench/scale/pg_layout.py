"""PostgreSQL band layouts side by side on the scale fills: today's and one row a page.

    .venv/bin/python -m bench.scale.pg_layout --sizes 100000,1000000,10000000

Today a page's 18 band keys are 18 rows of ``bands``: each a heap tuple (~60 bytes) and an
entry of the ``(table_no, key, page_id) INCLUDE (fingerprint)`` index (~50 bytes), so a
PostgreSQL page weighs ~2.8 KB against SQLite's 1.3 KB (where ``bands`` is WITHOUT ROWID:
the index is the table). The layout measured beside it keeps the keys as 18 ``bigint``
columns of the page's own row (``pages_wide``), each column with its own B-tree: no band
heap tuples, 18 index entries of ~20 bytes. A probe is ``b0 = $1 OR ... OR b17 = $18``
(a BitmapOr of 18 index scans) and reads the candidate's sketch from the same row. A third
layout, ``pages_gin``, keeps the 18 keys as one ``int8[]`` column of the page row under one
GIN index (``fastupdate`` off: a page's keys are in the index when its transaction
commits): one static probe whatever the number of bands (``keys && $1``), one index.

On each filled database (``bench_scale --fill-only``) it builds each layout's table once
from the fill's kept band keys (``keys-minhash-lsh-s18-10000000.npy``, checked against
``bands`` on a sample), then measures the layouts (``--layouts``) in the same run, page by
page interleaved, each in its own connection: a server function does a check's probe
(reading every candidate's sketch) and a new page's insert, one transaction a page;
client latency p50/p99, the backend's CPU a page from /proc, rows the probes returned;
bytes a page of the fill and bytes a page the inserts added. Pages checked are 90% new
random band keys (an unrelated page: LSH keys are hashes) and 10% a stored page's keys
(a copy: the probe finds it). What the run added is deleted at the end.

This measures the layout, not the store: the store's check function also takes advisory
locks, looks the URL up and logs drops, the same for every layout.

The store has kept its keys in the page rows on PostgreSQL since schema 4 (the "wide"
layout, store/key_columns.py), so its fills have no ``bands`` table: this bench runs on
fills of schema 3 (``--prefix``: the databases a tree before that change filled, under a
name of their own) and says so when given others.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import write_results
from bench.bench_scale import log, pg_url
from bench.pg.cpu import cpu_seconds
from bench.scale.fill import PG_COPY_HEADER, PG_COPY_TRAILER
from bench.scale.measure import connect, percentile, warm

TABLES = 18
KEYS_FILE = "keys-minhash-lsh-s18-10000000.npy"
COLUMNS = ", ".join(f"b{t}" for t in range(TABLES))
OLD_RELATIONS = ("pages", "pages_pkey", "pages_url_key", "ix_pages_domain", "bands", "bands_pkey")

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION layout_old_add(p_id int8, p_url text, p_fp int8, p_sketch bytea,
                                          p_keys int8[]) RETURNS int4 LANGUAGE plpgsql AS $f$
DECLARE
    hits int4;
BEGIN
    SELECT count(p.sketch) INTO hits
    FROM (SELECT DISTINCT b.page_id
          FROM unnest(ARRAY[{", ".join(str(t) for t in range(TABLES))}]::int2[], p_keys)
               AS q(t, key)
          JOIN bands b ON b.table_no = q.t AND b.key = q.key) AS h
    JOIN pages p ON p.id = h.page_id;
    INSERT INTO pages (id, url, domain, fingerprint, text_length, sketch, first_seen, last_seen)
    VALUES (p_id, p_url, 'layout.example', p_fp, 1000, p_sketch, now(), now());
    INSERT INTO bands (table_no, key, page_id, fingerprint)
    SELECT (k.i - 1)::int2, k.key, p_id, p_fp FROM unnest(p_keys) WITH ORDINALITY AS k(key, i);
    RETURN hits;
END
$f$;
"""


def row_layout_function(layout: str, probe: str, key_columns: str, key_values: str) -> str:
    """``layout_<layout>_add`` for a layout that keeps the keys in the page row
    (``pages_<layout>``): ``probe`` finds the rows sharing a key with ``p_keys``."""
    return f"""
CREATE OR REPLACE FUNCTION layout_{layout}_add(p_id int8, p_url text, p_fp int8, p_sketch bytea,
                                               p_keys int8[]) RETURNS int4 LANGUAGE plpgsql AS $f$
DECLARE
    hits int4;
BEGIN
    SELECT count(r.sketch) INTO hits FROM pages_{layout} r WHERE {probe};
    INSERT INTO pages_{layout} (id, url, domain, fingerprint, text_length, sketch, first_seen,
                                last_seen, {key_columns})
    VALUES (p_id, p_url, 'layout.example', p_fp, 1000, p_sketch, now(), now(), {key_values});
    RETURN hits;
END
$f$;
"""


FUNCTIONS += row_layout_function(
    "wide",
    " OR ".join(f"r.b{t} = p_keys[{t + 1}]" for t in range(TABLES)),
    COLUMNS,
    ", ".join(f"p_keys[{t + 1}]" for t in range(TABLES)),
)
FUNCTIONS += row_layout_function("gin", "r.keys && p_keys", "keys", "p_keys")


def relation_bytes(conn: Any, names: list[str] | tuple[str, ...]) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relname = ANY(%s)",
        (list(names),),
    ).fetchone()
    return int(row[0])


LAYOUTS = {
    "old": "18 `bands` rows (today)",
    "wide": "keys in the page row",
    "gin": "keys array, GIN",
}


def layout_relations(conn: Any, layout: str) -> list[str]:
    """A layout's table and indexes (today's: the store's own)."""
    if layout == "old":
        return list(OLD_RELATIONS)
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relname LIKE %s",
        (f"pages_{layout}%",),
    ).fetchall()
    return [r[0] for r in rows]


def load_keys(conn: Any, keys: Any, n: int) -> None:
    """``layout_keys (id, b0 .. b17)``: the fill's kept keys, by binary COPY."""
    conn.execute("DROP TABLE IF EXISTS layout_keys")
    typed = ", ".join(f"b{t} int8" for t in range(TABLES))
    conn.execute(f"CREATE UNLOGGED TABLE layout_keys (id int8, {typed})")
    row = np.dtype([("n", ">i2"), ("l0", ">i4"), ("id", ">i8")] + [
        (f"x{t}", [("l", ">i4"), ("v", ">i8")]) for t in range(TABLES)
    ])  # fmt: skip
    step = 1_000_000
    copy = f"COPY layout_keys (id, {COLUMNS}) FROM STDIN WITH (FORMAT binary)"
    with conn.cursor() as cur, cur.copy(copy) as cp:
        cp.write(PG_COPY_HEADER)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            block = np.empty(hi - lo, dtype=row)
            block["n"], block["l0"], block["id"] = TABLES + 1, 8, np.arange(lo + 1, hi + 1)
            part = np.asarray(keys[lo:hi])
            for t in range(TABLES):
                block[f"x{t}"]["l"], block[f"x{t}"]["v"] = 8, part[:, t]
            cp.write(block.tobytes())
        cp.write(PG_COPY_TRAILER)


KEY_COLUMNS = {
    "wide": ", ".join(f"k.b{t}" for t in range(TABLES)),
    "gin": "ARRAY[" + ", ".join(f"k.b{t}" for t in range(TABLES)) + "] AS keys",
}
KEY_INDEXES = {
    "wide": [f"CREATE INDEX pages_wide_b{t} ON pages_wide (b{t})" for t in range(TABLES)],
    "gin": ["CREATE INDEX pages_gin_keys ON pages_gin USING gin (keys) WITH (fastupdate = off)"],
}


def build(conn: Any, layout: str, keys: Any, n: int) -> float:
    """``pages_<layout>``: the fill's pages with their keys as the layout keeps them
    ("wide": 18 columns, a B-tree each; "gin": one array, one GIN index), built once (a
    table marked complete by its comment is kept); the keys are checked against the
    fill's ``bands`` rows on a sample."""
    table = f"pages_{layout}"
    done = conn.execute(f"SELECT obj_description(to_regclass('public.{table}'), 'pg_class')")
    if (done.fetchone() or (None,))[0] == "complete":
        return 0.0
    began = time.perf_counter()
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    load_keys(conn, keys, n)
    conn.execute(
        f"CREATE TABLE {table} AS SELECT p.*, {KEY_COLUMNS[layout]} "
        "FROM pages p JOIN layout_keys k USING (id) ORDER BY p.id"
    )
    conn.execute("DROP TABLE layout_keys")
    conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
    conn.execute(f"CREATE UNIQUE INDEX {table}_url ON {table} (url)")
    conn.execute(f"CREATE INDEX {table}_domain ON {table} (domain)")
    conn.execute("SET maintenance_work_mem = '2GB'")
    for statement in KEY_INDEXES[layout]:
        conn.execute(statement)
    conn.execute("RESET maintenance_work_mem")
    conn.execute(f"VACUUM ANALYZE {table}")
    for pid in sorted({1, n, *np.random.default_rng(3).integers(1, n + 1, 200).tolist()}):
        old = conn.execute(
            "SELECT array_agg(b.key ORDER BY b.table_no) FROM bands b "
            "JOIN unnest(%s::int8[]) WITH ORDINALITY AS k(key, i) "
            "ON b.table_no = k.i - 1 AND b.key = k.key WHERE b.page_id = %s",
            ([int(k) for k in keys[pid - 1]], pid),
        ).fetchone()[0]
        if old != [int(k) for k in keys[pid - 1]]:
            raise SystemExit(f"page {pid}: the kept keys differ from bands")
    conn.execute(f"COMMENT ON TABLE {table} IS 'complete'")
    return time.perf_counter() - began


def trim(conn: Any, n: int, added: list[tuple[int, list[int]]] | None = None) -> None:
    """Delete what a run added: pages with ids above the fill's and 0 (the plans' warm-up
    row). Their band rows go by their keys when ``added`` ((page id, keys) pairs) names
    them, else by a scan of ``bands`` (no index on page_id), run only when there are
    such pages (a run cut short)."""
    left = conn.execute("SELECT count(*) FROM pages WHERE id > %s OR id = 0", (n,)).fetchone()
    conn.execute("BEGIN")
    conn.execute("SET LOCAL session_replication_role = replica")
    if added is not None:
        with conn.cursor() as cur:
            cur.executemany(
                "DELETE FROM bands WHERE table_no = %s AND key = %s AND page_id = %s",
                [(t, key, pid) for pid, keys in added for t, key in enumerate(keys)],
            )
    elif left[0]:
        conn.execute("DELETE FROM bands WHERE page_id > %s OR page_id = 0", (n,))
    conn.execute("DELETE FROM pages WHERE id > %s OR id = 0", (n,))
    for layout in LAYOUTS:
        if layout != "old" and layout_relations(conn, layout):
            conn.execute(f"DELETE FROM pages_{layout} WHERE id > %s OR id = 0", (n,))
    conn.execute("COMMIT")


def measure(
    url: str, n: int, keys: Any, pages: int, seed: int, layouts: list[str]
) -> dict[str, Any]:
    admin, _ = connect(url)
    admin.autocommit = True
    built = 0.0
    for layout in layouts:
        if layout != "old":
            log(f"{n:,}: building pages_{layout}")
            built += build(admin, layout, keys, n)
    admin.execute(FUNCTIONS)
    trim(admin, n)  # a run cut short leaves its pages behind
    fill = {layout: relation_bytes(admin, layout_relations(admin, layout)) for layout in layouts}
    log(f"{n:,}: warmed {warm(url)}")  # both layouts' indexes, into the OS cache
    sketch = admin.execute("SELECT sketch FROM pages WHERE id = 1").fetchone()[0]
    rng = np.random.default_rng(seed)
    work = []
    for i in range(pages):
        if i % 10 == 9:
            stored = int(rng.integers(1, n + 1))
            page_keys = [int(k) for k in keys[stored - 1]]
        else:
            page_keys = rng.integers(-(2**63), 2**63 - 1, TABLES, dtype=np.int64).tolist()
        work.append((n + 1 + i, f"http://layout{n + 1 + i:09d}.example/", page_keys))
    sessions = {}
    for layout in layouts:
        conn, _ = connect(url)
        conn.autocommit = True
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        conn.execute(
            f"SELECT layout_{layout}_add(%s, %s, 0, %s, %s)", (0, "", sketch, [0] * TABLES)
        )
        conn.execute("DELETE FROM bands WHERE page_id = 0")  # the plans are cached; undo it
        conn.execute("DELETE FROM pages WHERE id = 0")
        if layout != "old":
            conn.execute(f"DELETE FROM pages_{layout} WHERE id = 0")
        sessions[layout] = {"conn": conn, "pid": pid, "lat": [], "hits": 0, "cpu0": 0.0}
    for s in sessions.values():
        s["cpu0"] = cpu_seconds(s["pid"]) or 0.0
    for i, (pid, page_url, page_keys) in enumerate(work):
        order = layouts[i % len(layouts) :] + layouts[: i % len(layouts)]
        for layout in order:
            s = sessions[layout]
            t0 = time.perf_counter_ns()
            hits = (
                s["conn"]
                .execute(
                    f"SELECT layout_{layout}_add(%s, %s, %s, %s, %s)",
                    (pid, page_url, i, sketch, page_keys),
                )
                .fetchone()[0]
            )
            s["lat"].append((time.perf_counter_ns() - t0) / 1e6)
            s["hits"] += hits
    out: dict[str, Any] = {"pages": n, "checked": pages, "build_s": round(built, 1)}
    for layout, s in sessions.items():
        cpu = (cpu_seconds(s["pid"]) or 0.0) - s["cpu0"]
        s["conn"].close()
        out[layout] = {
            "p50_ms": round(percentile(s["lat"], 0.5), 3),
            "p99_ms": round(percentile(s["lat"], 0.99), 3),
            "server_cpu_ms": round(1000 * cpu / pages, 3),
            "hits": s["hits"],
        }
    for layout in layouts:
        grown = relation_bytes(admin, layout_relations(admin, layout)) - fill[layout]
        out[layout]["fill_bytes_per_page"] = round(fill[layout] / n, 1)
        out[layout]["added_bytes_per_page"] = round(grown / pages, 1)
    trim(admin, n, [(0, [0] * TABLES)] + [(pid, keys) for pid, _url, keys in work])
    admin.close()
    log(f"{n:,}: {out}")
    return out


def table(cells: list[dict[str, Any]]) -> list[str]:
    out = [
        "| pages | layout | bytes a page (fill) | bytes a page added | check+insert p50 / p99 ms "
        "| server CPU a page ms | copies found |",
        "| ---: | --- |" + " ---: |" * 5,
    ]
    for c in cells:
        for layout, name in LAYOUTS.items():
            if layout not in c:
                continue
            m = c[layout]
            out.append(
                f"| {c['pages']:,} | {name} | {m['fill_bytes_per_page']:,.0f} | "
                f"{m['added_bytes_per_page']:,.0f} | {m['p50_ms']:.2f} / {m['p99_ms']:.2f} | "
                f"{m['server_cpu_ms']:.3f} | {m['hits']} / {c['checked'] // 10} |"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--dir", default="/work/scale-db", help="where the fills' keys are")
    parser.add_argument("--pages", type=int, default=5000, help="pages checked a layout")
    parser.add_argument("--layouts", default="old,wide,gin", help=f"of {', '.join(LAYOUTS)}")
    parser.add_argument("--prefix", default="sf_scale_rows_", help="the schema-3 fills' names")
    args = parser.parse_args(argv)
    keys = np.load(Path(args.dir) / KEYS_FILE, mmap_mode="r")
    cells = []
    for n in (int(s) for s in args.sizes.split(",")):
        url = pg_url("minhash-lsh", n).replace("sf_scale_", args.prefix, 1)
        conn, _ = connect(url)
        has_bands = conn.execute("SELECT to_regclass('bands') IS NOT NULL").fetchone()[0]
        conn.close()
        if not has_bands:
            raise SystemExit(f"{url}: no bands table; this bench needs a fill of schema 3")
        cells.append(measure(url, n, keys, args.pages, n % 997, args.layouts.split(",")))
    path = write_results("pg_layout", cells)
    print("\n".join(table(cells)))
    print(f"\nraw results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
