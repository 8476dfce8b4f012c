"""The measurements on one filled database (one back-end, size and index kind).

Every run starts and ends by trimming the database back to its fill (:func:`trim`), so
runs on a kept fill are alike. Measured, in this order: rows read and unrelated candidates
a check (the probe's SQL run here with the scheme's public ``probe_keys``), then in
worker processes ``check_and_add`` (SQLite 1 process; PostgreSQL 1 and 4, with the
backends' CPU from /proc), ``near()``, and ``add_many``.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import PG_ADMIN_URL, ROOT
from bench.pg.cells import percentile
from bench.pg.counters import ServerCounters, per_call
from bench.pg.cpu import BackendCpu
from bench.pg.database import database_name, libpq_url, psycopg_connect
from simhash_filter.store.encoding import from_sql_int, to_sql_int
from simhash_filter.store.key_columns import column_name, column_names, keys_by_table

from .corpus import CHUNK, Pool, compose, near_copies, page_sentences, sketch_bytes
from .fill import index_items, open_store, probe_keys, url_of

NEAR_SHARE = 0.1


# ------------------------------------------------------------------ pages to check


def stored_rows(pool: Pool, seed: int, ids: np.ndarray) -> np.ndarray:
    """The sentence rows of fill pages ``ids`` (0-based)."""
    out = np.empty((len(ids), page_sentences(pool, seed, 0).shape[1]), dtype=np.int64)
    chunks: dict[int, np.ndarray] = {}
    for j, i in enumerate(ids):
        c = int(i) // CHUNK
        if c not in chunks:
            chunks[c] = page_sentences(pool, seed, c)
        out[j] = chunks[c][int(i) % CHUNK]
    return out


def new_pages(pool: Pool, seed: int, n_fill: int, count: int, tag: str, salt: int) -> list:
    """``count`` pages to check: 90% unrelated new pages, 10% near-copies (a sentence
    dropped or swapped) of random stored pages; (url, fingerprint, text_length, sketch),
    the near-copies spread evenly."""
    rng = np.random.default_rng([seed, salt])
    chunks = range(salt * 100, salt * 100 + -(-count // CHUNK))
    unrelated = np.concatenate([page_sentences(pool, seed + 1_000_003, c) for c in chunks])[:count]
    n_near = int(count * NEAR_SHARE)
    sources = rng.integers(0, n_fill, size=n_near)
    copies = near_copies(pool, stored_rows(pool, seed, np.sort(sources)), rng)
    step = count // max(1, n_near)
    rows = unrelated.copy()
    rows[::step][:n_near] = copies[: len(rows[::step])]
    fps, slots, _tokens = compose(pool, rows)
    lengths = np.array([len(t) for t in pool.texts] + [0])
    text_len = lengths[rows].sum(axis=1)
    return [
        (f"http://n{tag}-{i:07d}.example/", int(fps[i]), int(text_len[i]), sketch_bytes(slots[i]))
        for i in range(count)
    ]


def stored_pages(pool: Pool, seed: int, n_fill: int, count: int, salt: int) -> list:
    """``count`` random fill pages as (url, fingerprint, text_length, sketch)."""
    rng = np.random.default_rng([seed, salt, 1])
    ids = np.sort(rng.integers(0, n_fill, size=count))
    fps, slots, _t = compose(pool, stored_rows(pool, seed, ids))
    return [(url_of(int(i)), int(fps[j]), 0, sketch_bytes(slots[j])) for j, i in enumerate(ids)]


# ------------------------------------------------------------------ database access


def connect(url: str) -> tuple[Any, str]:
    """A DB-API connection to the filled database and its parameter mark."""
    if url.startswith("sqlite:///"):
        import sqlite3

        return sqlite3.connect(url[len("sqlite:///") :], isolation_level=None), "?"
    return psycopg_connect(url), "%s"


def trim(url: str, n_fill: int, scheme: Any) -> int:
    """Delete what runs added on top of the fill: pages with ids above ``n_fill``, their
    band rows (found by their keys) and every logged drop; the pages removed."""
    conn, mark = connect(url)
    try:
        rows = conn.execute(
            f"SELECT id, fingerprint, sketch FROM pages WHERE id > {mark}", (n_fill,)
        ).fetchall()
        conn.execute("BEGIN")
        if mark == "%s":
            # the drops go first: the foreign keys' per-row checks are skipped; the keys
            # are columns of the page rows (key_columns.py) and go with them
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute("DELETE FROM duplicates")
            conn.execute(f"DELETE FROM pages WHERE id > {mark}", (n_fill,))
            conn.execute("COMMIT")
            return len(rows)
        band_rows = [
            (t, to_sql_int(key), page_id)
            for page_id, fp, sketch in rows
            for t, key in index_items(
                scheme, from_sql_int(fp), None if sketch is None else bytes(sketch)
            )
        ]
        conn.cursor().executemany(
            f"DELETE FROM bands WHERE table_no = {mark} AND key = {mark} AND page_id = {mark}",
            band_rows,
        )
        conn.execute("DELETE FROM duplicates")
        conn.execute(f"DELETE FROM pages WHERE id > {mark}", (n_fill,))
        conn.execute("COMMIT")
        return len(rows)
    finally:
        conn.close()


def warm(url: str, *, into_buffers: bool = False) -> dict[str, Any]:
    """Read the whole fill once, so the run sees the steady state of a long crawl whose
    database fits in the machine's memory (the OS page cache holds every page it touched)
    rather than a cold disk: SQLite's files read sequentially; PostgreSQL's indexes (what a
    check reads and writes at random; its heaps take appends) through ``pg_prewarm`` in
    ``read`` mode (into the OS cache, not shared_buffers: a 10M fill's 28 GB would not fit
    this machine's memory, its 9.6 GB of indexes do). Returns the bytes read and the
    seconds it took. ``into_buffers``: PostgreSQL's indexes go into shared_buffers
    (``pg_prewarm`` in ``buffer`` mode), for a server whose shared_buffers hold them; the
    setting is returned with the rest."""
    began = time.perf_counter()
    total = 0
    settings: dict[str, Any] = {}
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        for part in (path, path.with_name(path.name + "-wal")):
            if part.exists():
                with part.open("rb", buffering=0) as fh:
                    while chunk := fh.read(8 << 20):
                        total += len(chunk)
    else:
        conn, _ = connect(url)
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            relations = conn.execute(
                "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'i'"
            ).fetchall()
            mode = "buffer" if into_buffers else "read"
            for (name,) in relations:
                blocks = conn.execute("SELECT pg_prewarm(%s, %s)", (name, mode)).fetchone()[0]
                total += int(blocks) * 8192
            settings = {
                "mode": mode,
                "shared_buffers": conn.execute("SHOW shared_buffers").fetchone()[0],
            }
        finally:
            conn.close()
    return {"bytes": total, "seconds": round(time.perf_counter() - began, 1), **settings}


def verify_keys(url: str, n_fill: int, scheme: Any, sample: int, seed: int = 5) -> dict:
    """Every band key the scheme's ``index_items`` gives for ``sample`` random fill pages
    is in ``bands`` (PostgreSQL: in the page row's key columns, and no other column holds
    one): the fill matches the code being measured (a fill made by another version of
    the scheme fails here)."""
    conn, mark = connect(url)
    rng = np.random.default_rng(seed)
    ids = sorted({int(i) + 1 for i in rng.integers(0, n_fill, size=sample)})
    missing = checked = 0
    try:
        for page_id in ids:
            fp, sketch = conn.execute(
                f"SELECT fingerprint, sketch FROM pages WHERE id = {mark}", (page_id,)
            ).fetchone()
            sketch = None if sketch is None else bytes(sketch)
            items = index_items(scheme, from_sql_int(fp), sketch)
            if mark == "%s":
                row = conn.execute(
                    f"SELECT {', '.join(column_names(scheme.n_tables))} FROM pages WHERE id = %s",
                    (page_id,),
                ).fetchone()
                checked += len(items)
                expected = keys_by_table(items, scheme.n_tables)
                missing += sum(
                    stored != (None if key is None else to_sql_int(key))
                    for stored, key in zip(row, expected, strict=True)
                )
                continue
            for t, key in items:
                checked += 1
                missing += not conn.execute(
                    f"SELECT 1 FROM bands WHERE table_no = {mark} AND key = {mark} "
                    f"AND page_id = {mark}",
                    (t, to_sql_int(key), page_id),
                ).fetchone()
    finally:
        conn.close()
    if missing:
        raise SystemExit(f"{url}: {missing} of {checked} band rows of the scheme not in the fill")
    return {"pages": len(ids), "rows": checked}


def probe_rows(conn: Any, mark: str, keys: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(page_id, fingerprint) of every band row under ``keys``: the probe's rows."""
    per_table: dict[int, list[int]] = {}
    for t, key in keys:
        per_table.setdefault(t, []).append(to_sql_int(key))
    out: list[tuple[int, int]] = []
    for t, ks in per_table.items():
        if mark == "?":
            sql = (
                "SELECT page_id, fingerprint FROM bands WHERE table_no = ? AND key IN "
                "(SELECT value FROM json_each(?))"
            )
            out += conn.execute(sql, (t, json.dumps(ks))).fetchall()
        else:  # the keys in the page rows (key_columns.py)
            sql = f"SELECT id, fingerprint FROM pages WHERE {column_name(t)} = ANY(%s)"
            out += conn.execute(sql, (ks,)).fetchall()
    return out


def count_candidates(store: Any, fingerprint: int, sketch: bytes) -> int:
    """The store's own count of the rows a probe reads (with the sketch where it takes one)."""
    if "sketch" in inspect.signature(store.count_candidates).parameters:
        return int(store.count_candidates(fingerprint, sketch=sketch))
    return int(store.count_candidates(fingerprint))


def probe_cost(url: str, kind: str, pages: list) -> dict[str, Any]:
    """Rows read and candidates a check for ``pages`` (not written): band rows under the
    probe keys; candidates = distinct pages a check must verify with the sketch (within
    the rule's candidate distance for the simhash schemes, every band collision for LSH)."""
    with open_store(url, kind, create=False) as store:
        scheme, rule = store.scheme, store.rule
        public = [count_candidates(store, fp, sketch) for _u, fp, _l, sketch in pages[:20]]
    radius = rule.candidate_distance if rule is not None else scheme.max_distance
    sketch_keyed = getattr(scheme, "sketch_keyed", False)
    conn, mark = connect(url)
    rows_read, candidates, probes = [], [], []
    try:
        for _url, fp, _len, sketch in pages:
            keys = probe_keys(scheme, fp, sketch)
            rows = probe_rows(conn, mark, keys)
            rows_read.append(len(rows))
            probes.append(len(keys))
            found = {
                pid
                for pid, stored in rows
                if sketch_keyed or (from_sql_int(stored) ^ fp).bit_count() <= radius
            }
            candidates.append(len(found))
    finally:
        conn.close()
    return {
        "count_candidates_agrees": public == rows_read[:20],
        "queries": len(pages),
        "probe_keys": statistics.mean(probes),
        "rows_read_mean": statistics.mean(rows_read),
        "rows_read_p50": percentile(rows_read, 0.5),
        "rows_read_p99": percentile(rows_read, 0.99),
        "candidates_mean": statistics.mean(candidates),
        "candidates_p99": percentile(candidates, 0.99),
    }


# ------------------------------------------------------------------ workers


def run_workers(url: str, kind: str, page_lists: list[list], **spec: Any) -> dict[str, Any]:
    """Start one worker per page list, wait until all are ready, let them go together;
    latency percentiles over all calls, rate, client and (PostgreSQL) server CPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    tmp = Path(tempfile.mkdtemp(prefix="sf-scale-"))
    procs = []
    for w, pages in enumerate(page_lists):
        (tmp / f"p{w}.pkl").write_bytes(pickle.dumps(pages))
        (tmp / f"s{w}.json").write_text(
            json.dumps({"url": url, "kind": kind, "pages": str(tmp / f"p{w}.pkl"), **spec})
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "bench.scale.worker", str(tmp / f"s{w}.json")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                cwd=ROOT,
            )
        )
    for p in procs:
        line = p.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != "ready":
            raise SystemExit(f"worker failed to start: {line!r}")
    server = BackendCpu(database_name(url)) if not url.startswith("sqlite") else None
    counters = None
    if server is not None:
        counters = ServerCounters(libpq_url(PG_ADMIN_URL), database_name(url))
        counters.start()
        server.__enter__()
    for p in procs:
        p.stdin.write("go\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
    reports = [json.loads(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]
    if server is not None:
        server.__exit__(None, None, None)
    for p in procs:
        p.wait()
    server_counters = counters.stop() if counters is not None else None
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    latencies = [ns / 1e6 for r in reports for ns in r["latencies_ns"]]
    calls = sum(r["calls"] for r in reports)
    elapsed = max(r["elapsed"] for r in reports)
    kinds: dict[str, int] = {}
    for r in reports:
        for k, v in r["kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    out = {
        "procs": len(page_lists),
        "calls": calls,
        "seconds": round(elapsed, 2),
        "per_s": round(calls / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.5), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "client_cpu_ms": round(1000 * sum(r["cpu"] for r in reports) / calls, 3),
        # the client's CPU split into user and kernel time, and its I/O a call
        # (/proc/self/io: system calls, bytes from and to storage)
        "client_user_ms": round(1000 * sum(r["cpu_user"] for r in reports) / calls, 3),
        "client_system_ms": round(1000 * sum(r["cpu_system"] for r in reports) / calls, 3),
        "client_io": {
            k: round(sum(r["io"].get(k, 0) for r in reports) / calls, 1) for k in reports[0]["io"]
        },
        "kinds": kinds,
    }
    if server is not None:
        out["server_cpu_ms"] = round(1000 * server.seconds / calls, 3)
    if server_counters is not None:
        # WAL and full-page images written, blocks read from outside shared_buffers
        out["server"] = per_call(server_counters, calls)
        out["checkpoints"] = server_counters["checkpoints"]
    return out
