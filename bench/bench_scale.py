"""The store at 100k, 1M and 10M pages, real fills with real-like signatures (issue 18).

    .venv/bin/python -m bench.bench_scale --validate            # the generator vs sign()
    nice -n 5 .venv/bin/python -m bench.bench_scale --fill-only --sizes 10000000 --backends sqlite
    .venv/bin/python -m bench.bench_scale --index multi-index --sizes 100000,1000000

Pages are random sentences of one language of the public haystack, signed by composing
the sentences' signatures (bench/scale/corpus.py; ``--validate`` compares them with
``Fingerprinter().sign`` of the joined text). Each size's fill is written by a direct
bulk loader (bench/scale/fill.py) and kept under ``--dir`` (default /work/scale-db) as
``sqlite-<index>-<N>.db`` and PostgreSQL database ``sf_scale_<index>_<N>``, each with
a ``.json`` marker once complete; later runs reuse it. On each fill (bench/scale/measure.py):
rows read and unrelated candidates a check, ``check_and_add`` p50/p99 and rate (SQLite 1
process; PostgreSQL 1 and 4, with the server's CPU a check), ``near()`` p50/p99, and
``add_many`` pages/s; bytes and index rows a page from the fill. Pages checked are 90%
unrelated new pages and 10% near-copies of stored pages (a sentence dropped or swapped).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import (
    DATA_DIR,
    PG_ADMIN_URL,
    admin_statement,
    create_pg_database,
    drop_pg_database,
    machine,
    write_results,
)
from bench.scale import corpus, fill, measure
from bench.scale.validate import validate

SEED = 18


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pg_url(kind: str, n: int) -> str:
    from sqlalchemy.engine import make_url

    name = f"sf_scale_{kind.replace('-', '_')}_{n}"
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def loader_check(backend: str, kind: str, pool: corpus.Pool, root: Path) -> dict[str, Any]:
    """The loader's rows equal add_many's for 300 pages (fill.check_loader)."""
    if backend == "sqlite":
        a, b = root / f"loader-check-{os.getpid()}-a.db", root / f"loader-check-{os.getpid()}-b.db"
        for p in [*root.glob(f"loader-check-{os.getpid()}-*")]:
            p.unlink()
        return fill.check_loader(
            f"sqlite:///{a}",
            f"sqlite:///{b}",
            lambda: fill.fill_sqlite(b, kind, 300, pool, SEED, log),
            kind,
            pool,
            SEED,
        )
    url_a, url_b = create_pg_database("sf_scale_check"), create_pg_database("sf_scale_check")
    try:
        return fill.check_loader(
            url_a, url_b, lambda: fill.fill_pg(url_b, root, kind, 300, pool, SEED, log), kind,
            pool, SEED,
        )  # fmt: skip
    finally:
        drop_pg_database(url_a)
        drop_pg_database(url_b)


def ensure_fill(backend: str, kind: str, n: int, pool: corpus.Pool, root: Path) -> tuple:
    """The URL of the kept fill (made now when missing) and its marker's contents."""
    marker = root / f"{backend}-{kind}-{n}.json"
    url = f"sqlite:///{root / f'sqlite-{kind}-{n}.db'}" if backend == "sqlite" else pg_url(kind, n)
    if marker.exists():
        return url, json.loads(marker.read_text())
    # the signatures of a 10M fill are kept for the next one; a cache another fill is
    # still writing is left alone (this fill composes its own)
    sig = root / f"signatures-s{SEED}-{n}"
    busy = sig.with_suffix(".fps.npy").exists() and not sig.with_suffix(".done").exists()
    cache = root if n >= 5_000_000 and not busy else None
    kept = root / f"keys-{kind}-s{SEED}-{n}.npy" if n >= 5_000_000 else None
    log(f"filling {backend} {kind} {n:,}")
    checked = loader_check(backend, kind, pool, root)
    if backend == "sqlite":
        path = root / f"sqlite-{kind}-{n}.db"
        info = fill.fill_sqlite(path, kind, n, pool, SEED, log, cache, kept)
        info["bytes"] = sum(p.stat().st_size for p in root.glob(path.name + "*"))
    else:
        name = url.rsplit("/", 1)[1]
        admin_statement(PG_ADMIN_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin_statement(PG_ADMIN_URL, f'CREATE DATABASE "{name}"')
        info = fill.fill_pg(url, root, kind, n, pool, SEED, log, cache, kept)
        conn, _ = measure.connect(url)
        info["bytes"] = int(
            conn.execute(
                "SELECT sum(pg_total_relation_size(to_regclass(c))) FROM unnest(ARRAY['pages', "
                "'duplicates', 'meta']) AS c"
            ).fetchone()[0]
        )
        conn.close()
    info["loader_check"] = checked
    info["bytes_per_page"] = round(info["bytes"] / n, 1)
    info["rows_per_page"] = info["band_rows"] / n
    fill.write_done(marker, info)
    log(f"filled {backend} {kind} {n:,}: {info}")
    return url, info


def measure_cell(backend: str, kind: str, n: int, pool: corpus.Pool, args: Any, salt: int):
    url, info = ensure_fill(backend, kind, n, pool, Path(args.dir))
    with fill.open_store(url, kind, create=False) as store:
        scheme = store.scheme
        describe = scheme.describe()
    removed = measure.trim(url, n, scheme)
    verified = measure.verify_keys(url, n, scheme, args.verify)
    warmed = measure.warm(url, into_buffers=args.warm_buffers) if args.warm else None
    cell: dict[str, Any] = {
        "backend": backend,
        "index": kind,
        "pages": n,
        "scheme": describe,
        "fill": info,
        "trimmed_before": removed,
        "verified": verified,
        "warmed": warmed,
    }
    tag = f"{salt}"
    probe = measure.new_pages(pool, SEED, n, args.probes, f"q{tag}", salt)
    unrelated = [p for i, p in enumerate(probe) if i % 10]
    cell["probe"] = measure.probe_cost(url, kind, unrelated)
    log(f"{backend} {kind} {n:,}: probe {cell['probe']}")
    checks = measure.new_pages(pool, SEED, n, args.checks, f"c{tag}", salt + 1)
    cell["check_1"] = measure.run_workers(url, "check", [checks], seconds=args.seconds)
    log(f"{backend} {kind} {n:,}: check x1 {cell['check_1']}")
    if backend == "pg":
        per = args.checks // 2
        more = measure.new_pages(pool, SEED, n, 2 * args.checks, f"d{tag}", salt + 2)
        lists = [more[w * per : (w + 1) * per] for w in range(4)]
        cell["check_4"] = measure.run_workers(url, "check", lists, seconds=args.seconds)
        log(f"{backend} {kind} {n:,}: check x4 {cell['check_4']}")
    stored = measure.stored_pages(pool, SEED, n, args.near // 2, salt + 3)
    fresh = measure.new_pages(pool, SEED, n, args.near // 2, f"r{tag}", salt + 4)
    queries = [q for pair in zip(stored, fresh, strict=True) for q in pair]
    cell["near"] = measure.run_workers(url, "near", [queries], seconds=args.seconds)
    log(f"{backend} {kind} {n:,}: near {cell['near']}")
    bulk = measure.new_pages(pool, SEED, n, args.bulk, f"b{tag}", salt + 5)
    cell["bulk"] = measure.run_workers(
        url, "bulk", [bulk], seconds=args.bulk_seconds, batch_size=args.batch
    )
    log(f"{backend} {kind} {n:,}: bulk {cell['bulk']}")
    cell["trimmed_after"] = measure.trim(url, n, scheme)
    return cell


# ------------------------------------------------------------------ tables


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def table(cells: list[dict[str, Any]]) -> list[str]:
    out = [
        "| back-end | index | pages | check p50 / p99 ms | checks/s 1 proc | checks/s 4 procs "
        "| server CPU ms/check 1 / 4 procs | rows read/check | unrelated candidates/check "
        "| near() p50 / p99 ms | near() answered | add_many pages/s | bytes/page "
        "| index rows/page | near-copies dropped |",
        "| --- | --- |" + " ---: |" * 13,
    ]
    for c in cells:
        c1, c4, nr = c["check_1"], c.get("check_4"), c["near"]
        server = (
            f"{fmt(c1.get('server_cpu_ms'), 3)} / {fmt(c4.get('server_cpu_ms'), 3)}"
            if c4 else "–"
        )  # fmt: skip
        out.append(
            f"| {'SQLite' if c['backend'] == 'sqlite' else 'PostgreSQL'} | {c['index']} | "
            f"{c['pages']:,} | {c1['p50_ms']:.2f} / {c1['p99_ms']:.2f} | {c1['per_s']:,.0f} | "
            f"{fmt(c4['per_s'], 0) if c4 else '–'} | {server} | "
            f"{c['probe']['rows_read_mean']:,.1f} | {c['probe']['candidates_mean']:,.2f} | "
            f"{nr['p50_ms']:.2f} / {nr['p99_ms']:.2f} | "
            f"{1 - nr['kinds'].get('0', 0) / nr['calls']:.0%} | {c['bulk']['per_s']:,.0f} | "
            f"{c['fill']['bytes_per_page']:,.0f} | {c['fill']['rows_per_page']:.0f} | "
            f"{c1['kinds'].get('duplicate', 0) / (measure.NEAR_SHARE * c1['calls']):.0%} |"
        )
    return out


def server_table(cells: list[dict[str, Any]]) -> list[str]:
    """PostgreSQL's own counters a call (bench/pg/counters.py): WAL and its full-page
    images, blocks read from outside shared_buffers and found in them, checkpoints."""
    out = [
        "| index | pages | run | WAL bytes | full-page images | WAL records "
        "| blocks read (not in shared_buffers) | blocks hit | checkpoints in the run |",
        "| --- | ---: | --- |" + " ---: |" * 6,
    ]
    for c in cells:
        for run in ("check_1", "check_4", "near", "bulk"):
            r = c.get(run)
            if not r or "server" not in r:
                continue
            s = r["server"]
            out.append(
                f"| {c['index']} | {c['pages']:,} | {run} | {s['wal_bytes']:,.0f} | "
                f"{s['wal_fpi']:,.2f} | {s['wal_records']:,.1f} | {s['blks_read']:,.1f} | "
                f"{s['blks_hit']:,.1f} | {r['checkpoints']} |"
            )
    return out if len(out) > 2 else []


def ratios(cells: list[dict[str, Any]]) -> list[str]:
    out = [
        "| back-end | index | pages vs 100k | check p50 | server CPU a check (1 proc) "
        "| add_many pages/s |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    # against the 100k cell of the same run where there is one, else of another run
    base = {(c.get("run"), c["backend"], c["index"]): c for c in cells if c["pages"] == 100_000}
    other = {(c["backend"], c["index"]): c for c in cells if c["pages"] == 100_000}
    for c in cells:
        b = base.get((c.get("run"), c["backend"], c["index"]))
        if b is None and c["pages"] != 100_000:
            b = other.get((c["backend"], c["index"]))
        if b is None or c["pages"] == 100_000:
            continue
        server = "–"
        if c["check_1"].get("server_cpu_ms") and b["check_1"].get("server_cpu_ms"):
            server = f"{c['check_1']['server_cpu_ms'] / b['check_1']['server_cpu_ms']:.2f}×"
        out.append(
            f"| {c['backend']} | {c['index']} | {c['pages']:,} / 100,000"
            f"{'' if b.get('run') == c.get('run') else ' (other run)'} | "
            f"{c['check_1']['p50_ms'] / b['check_1']['p50_ms']:.2f}× | {server} | "
            f"{c['bulk']['per_s'] / b['bulk']['per_s']:.2f}× |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default="multi-index", help="index kind (default %(default)s)")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--backends", default="sqlite,pg")
    parser.add_argument("--dir", default="/work/scale-db", help="where fills are kept")
    parser.add_argument("--data", default=str(DATA_DIR))
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--validate", action="store_true", help="the generator vs sign()")
    parser.add_argument("--checks", type=int, default=2000, help="check_and_add calls a run")
    parser.add_argument("--probes", type=int, default=330, help="pages probed for rows read")
    parser.add_argument("--near", type=int, default=1000, help="near() calls")
    parser.add_argument("--bulk", type=int, default=20_000, help="pages add_many adds")
    parser.add_argument("--batch", type=int, default=1000, help="add_many batch size")
    parser.add_argument(
        "--verify", type=int, default=2000, help="fill pages whose keys are checked"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="time limit a run")
    parser.add_argument("--bulk-seconds", type=float, default=120.0)
    parser.add_argument(
        "--warm", action="store_true", help="read the whole fill before measuring (warm cache)"
    )
    parser.add_argument(
        "--warm-buffers",
        action="store_true",
        help="with --warm, PostgreSQL's indexes into shared_buffers (size them to hold it)",
    )
    parser.add_argument("--report", nargs="+", help="tables of these raw results files together")
    args = parser.parse_args(argv)
    if args.report:
        cells = [
            {**c, "run": Path(f).name}
            for f in args.report
            for c in json.loads(Path(f).read_text())["results"]["cells"]
            if c["backend"] in args.backends.split(",")
        ]
        cells.sort(key=lambda c: (c["backend"] != "sqlite", c["index"], c["pages"]))
        print("\n".join(table(cells)) + "\n")
        print("\n".join(ratios(cells)) + "\n")
        print("\n".join(server_table(cells)))
        return 0
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    pool = corpus.build_pool(Path(args.data), log=log)
    if args.validate:
        report = validate(pool, SEED, 4000)
        path = write_results("bench_scale-validate", report)
        print(json.dumps(report, indent=2), f"\nraw results: {path.name}")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    cells = []
    salt = int(time.time()) % 1_000_000 * 10
    began = time.perf_counter()
    for n in sizes:
        for backend in backends:  # the back-ends interleaved, size by size
            if args.fill_only:
                ensure_fill(backend, args.index, n, pool, Path(args.dir))
                continue
            cells.append(measure_cell(backend, args.index, n, pool, args, salt))
            salt += 10
            write_results(f"bench_scale-{args.index}-partial", {"cells": cells})
    if args.fill_only:
        return 0
    conn = sqlite3.connect(":memory:")
    versions = {"sqlite": sqlite3.sqlite_version, "numpy": np.__version__}
    conn.close()
    if "pg" in backends:
        pg_conn, _ = measure.connect(pg_url(args.index, sizes[0]))
        versions["postgresql"] = pg_conn.execute("SHOW server_version").fetchone()[0]
        pg_conn.close()
    path = write_results(f"bench_scale-{args.index}", {"cells": cells, "versions": versions})
    print(f"### Scale: index {args.index} (`.venv/bin/python -m bench.bench_scale "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}`)\n")  # fmt: skip
    print(f"{machine()}; {versions}; {(time.perf_counter() - began) / 60:.1f} min; "
          f"raw results: {path.name}\n")  # fmt: skip
    print("\n".join(table(cells)) + "\n")
    print("\n".join(ratios(cells)) + "\n")
    print("\n".join(server_table(cells)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
