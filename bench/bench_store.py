"""Benchmark of the band-indexed fingerprint store; prints markdown tables.

    .venv/bin/python bench/bench_store.py            # 100k and 1M pages (~20-25 min here)
    .venv/bin/python bench/bench_store.py --quick    # 10k and 100k pages (~3 min)
    .venv/bin/python bench/bench_store.py --schemes 4:6,3:4,3:6@100000   # 3:6 only to 100k
    .venv/bin/python -m bench.bench_store --study 6,7,8   # index schemes for larger k

What it measures, side by side in one run, on the same random fingerprints:

1. bulk load (``add_many``) rate and database bytes per page, per band scheme ``k:b``
   (default: the default scheme k=4 b=6, the paper's k=3 b=4, and k=3 b=6);
2. ``near()`` latency p50/p99 at each size for each scheme, against the PyPI ``simhash``
   package's in-memory ``SimhashIndex`` with the same k and a NumPy XOR/popcount scan
   over the same fingerprints (timed in alternating blocks of 50 queries with the store,
   so that a busy moment of a shared machine slows both alike);
3. ``check_and_add`` throughput with 1 and 2 processes on SQLite and on PostgreSQL
   (the first scheme), and each worker's peak RSS (it must not grow with the number of
   stored pages);
4. a projection (bytes per page, candidates per probe) to 10M, 100M and 1B pages.

Random fingerprints are the worst case for nothing and the best case for nothing: a
probe's candidates are ``N / 2**key_bits`` per table, exactly as for real pages whose
fingerprints are spread evenly (simhash bits are balanced).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import ROOT, create_pg_database, drop_pg_database
from bench.store_common import SPEC, db_bytes, log, percentiles
from simhash_filter.index.schemes import (
    DEFAULT_MAX_DISTANCE,
    PermutedScheme,
    default_blocks,
)
from simhash_filter.store import FingerprintStore, StoreOptions

PG_ADMIN = os.environ.get(
    "SIMHASH_FILTER_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)

WORKER = r"""
import json, random, resource, sys, time
from simhash_filter.store import FingerprintStore
db_url, worker, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = FingerprintStore.open_existing(db_url)
rng = random.Random(1000 + worker)
fps = [rng.getrandbits(64) for _ in range(ops)]
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
kinds = {}
for i, fp in enumerate(fps):
    verdict = store.check_and_add(f"http://w{worker}.bench.example/{i}", fp, text_length=1000)
    kinds[verdict.kind.value] = kinds.get(verdict.kind.value, 0) + 1
elapsed = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent
rss = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1]) // 1024
print(json.dumps({"elapsed": elapsed, "ops": ops, "rss_mb": rss, "kinds": kinds}), flush=True)
"""


def timed_pair(
    fn_a: Callable[[int], object],
    fn_b: Callable[[int], object],
    queries: Sequence[int],
    block: int = 50,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """p50/p99 of two functions over the same queries, in alternating blocks of ``block``
    queries (a's block, then b's on the same queries, then the next block): a busy moment
    of a shared machine slows both alike, while each runs with its own warm caches (run
    query by query instead, the NumPy scan's 8 MB sweep at 1M pages evicts the B-tree pages
    the store just used and doubled its time in a trial run)."""
    for q in queries[:50]:  # warm up
        fn_a(q)
        fn_b(q)
    samples_a, samples_b = [], []
    for start in range(0, len(queries), block):
        chunk = queries[start : start + block]
        for fn, samples in ((fn_a, samples_a), (fn_b, samples_b)):
            for q in chunk:
                began = time.perf_counter_ns()
                fn(q)
                samples.append(time.perf_counter_ns() - began)
    return percentiles(samples_a), percentiles(samples_b)


def numpy_scan(data: np.ndarray, k: int) -> Callable[[int], object]:
    """The brute-force yardstick: XOR and popcount over every stored fingerprint."""

    def scan(q: int) -> object:
        return np.flatnonzero(np.bitwise_count(data ^ np.uint64(q)) <= k)

    return scan


def make_queries(stored: np.ndarray, count: int, seed: int) -> list[int]:
    """Half near-duplicates (1-4 flipped bits) of stored pages, half random misses; the
    same queries for every scheme and yardstick at one size."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        if i % 2:
            fp = int(stored[rng.randrange(len(stored))])
            for bit in rng.sample(range(64), rng.randint(1, 4)):
                fp ^= 1 << bit
            queries.append(fp)
        else:
            queries.append(rng.getrandbits(64))
    return queries


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


# ---------------------------------------------------------------- sections


Scheme = tuple[int, int]  # (k, b)


def parse_schemes(text: str) -> list[tuple[Scheme, int | None]]:
    """``"4:6,3:4,3:6@100000"`` -> [((4, 6), None), ((3, 4), None), ((3, 6), 100000)];
    ``k`` alone takes that k's default blocks; ``@N``: measure this one up to N pages."""
    schemes: list[tuple[Scheme, int | None]] = []
    for item in text.split(","):
        spec, _, cap = item.strip().partition("@")
        k_text, _, b_text = spec.partition(":")
        k = int(k_text)
        b = int(b_text) if b_text else default_blocks(k)
        PermutedScheme(max_distance=k, blocks=b)  # validates
        schemes.append(((k, b), int(cap) if cap else None))
    return schemes


def name(scheme: Scheme) -> str:
    k, b = scheme
    default = " (default)" if scheme == (DEFAULT_MAX_DISTANCE, default_blocks(k)) else ""
    paper = " (paper)" if scheme == (3, 4) else ""
    return f"k={k} b={b}{default}{paper}"


def band_scheme(scheme: Scheme) -> PermutedScheme:
    return PermutedScheme(max_distance=scheme[0], blocks=scheme[1])


def bench_schemes(
    workdir: Path,
    fps: np.ndarray,
    sizes: list[int],
    schemes: list[tuple[Scheme, int | None]],
    n_queries: int,
) -> dict[str, Any]:
    """Load each scheme up to each size; near() latency and candidates at each size."""
    results: dict[str, Any] = {"load": {}, "near": {}, "numpy": {}, "bytes": {}, "candidates": {}}
    for scheme, cap in schemes:
        k, blocks = scheme
        path = workdir / f"k{k}b{blocks}.db"
        store = FingerprintStore.open(
            f"sqlite:///{path}", StoreOptions(spec=SPEC, max_distance=k, blocks=blocks)
        )
        loaded = 0
        load_seconds = 0.0
        for size in sizes:
            if cap is not None and size > cap:
                continue
            log(f"{name(scheme)}: loading to {size:,} pages")
            start = time.perf_counter()
            store.add_many(
                ((f"http://bench.example/p/{i}", int(fps[i]), 1000) for i in range(loaded, size)),
                batch_size=5000,
            )
            load_seconds += time.perf_counter() - start
            loaded = size
            queries = make_queries(fps[:size], n_queries, seed=size)
            scan = numpy_scan(np.ascontiguousarray(fps[:size]), k)
            near, numpy = timed_pair(store.near, scan, queries)
            results["near"][(scheme, size)] = near
            results["numpy"][(scheme, size)] = numpy
            misses = queries[::2][:300]
            results["candidates"][(scheme, size)] = statistics.mean(
                store.count_candidates(q) for q in misses
            )
            results["bytes"][(scheme, size)] = db_bytes(path) / size
        pages = store.stats().pages
        results["load"][scheme] = (pages, load_seconds)
        store.close()
    return results


def bench_simhash_pkg(
    fps: np.ndarray, sizes: list[int], ks: list[int], n_queries: int, max_size: int
) -> dict[tuple[int, int], tuple[float, float, float]]:
    import logging

    from simhash import Simhash, SimhashIndex  # the PyPI package

    logging.getLogger("simhash").setLevel(logging.ERROR)
    results = {}
    for k, size in [(k, size) for k in ks for size in sizes]:
        if size > max_size:
            continue
        log(f"simhash.SimhashIndex k={k}: building over {size:,} pages")
        start = time.perf_counter()
        index = SimhashIndex([(str(i), Simhash(int(fps[i]))) for i in range(size)], k=k)
        build = time.perf_counter() - start
        queries = [Simhash(q) for q in make_queries(fps[:size], n_queries, seed=size)]
        for q in queries[:50]:
            index.get_near_dups(q)
        samples = []
        for q in queries:
            t0 = time.perf_counter_ns()
            index.get_near_dups(q)
            samples.append(time.perf_counter_ns() - t0)
        p50, p99 = percentiles(samples)
        results[(k, size)] = (p50, p99, build)
        del index
    return results


def run_workers(db_url: str, n_procs: int, ops: int) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, db_url, str(w + n_procs * 10), str(ops)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(n_procs)
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(proc.stderr.read() if proc.stderr else "worker failed")
    start = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(err)
        reports.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - start
    total = sum(r["ops"] for r in reports)
    return {
        "rate": total / wall,
        "rss_mb": max(r["rss_mb"] for r in reports),
        "kinds": reports[0]["kinds"],
    }


def pg_database() -> str | None:
    """A fresh PostgreSQL database for the benchmark, or None when there is no server."""
    try:
        return create_pg_database("simhash_bench")
    except Exception as exc:
        log(f"PostgreSQL not available, skipping: {exc}")
        return None


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k pages, fewer queries")
    parser.add_argument("--sizes", help="comma-separated page counts (default 100000,1000000)")
    parser.add_argument(
        "--schemes",
        default=f"{DEFAULT_MAX_DISTANCE}:{default_blocks(DEFAULT_MAX_DISTANCE)},3:4,3:6",
        help="band schemes k:b to measure, the first one also for check_and_add; "
        "k alone: that k's default b; k:b@N: only up to N pages (default: %(default)s)",
    )
    parser.add_argument("--queries", type=int, help="near() queries per measurement")
    parser.add_argument("--ops", type=int, help="check_and_add calls per worker process")
    parser.add_argument("--pg-size", type=int, help="pages preloaded into PostgreSQL")
    parser.add_argument("--simhash-max", type=int, default=1_000_000,
                        help="largest size to build the simhash package's index for")  # fmt: skip
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    parser.add_argument(
        "--study",
        help="compare index schemes instead (issue 13.D) for these k, e.g. 6,7,8: multi-index "
        "hashing with 3, 4, 5 blocks and the permuted tables, at --sizes (default 100k,1M)",
    )
    parser.add_argument("--study-only", help="only these schemes, as kind:k:blocks,...")
    parser.add_argument(
        "--permuted-max",
        type=int,
        default=100_000,
        help="largest size to fill the permuted tables to (C(b, k) rows a page)",
    )
    parser.add_argument(
        "--check-pages",
        type=int,
        default=1000,
        help="new pages add_many checks and adds at each size (its rate)",
    )
    args = parser.parse_args(argv)
    if args.study:
        from bench.store_study import run_study

        return run_study(args, argv)

    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([10_000, 100_000] if args.quick else [100_000, 1_000_000])
    )
    n_queries = args.queries or (500 if args.quick else 2000)
    ops = args.ops or (300 if args.quick else 2000)
    pg_size = args.pg_size or sizes[0]
    scheme_caps = parse_schemes(args.schemes)
    scheme_list = [scheme for scheme, _cap in scheme_caps]
    ks = sorted({k for k, _b in scheme_list}, reverse=True)
    first = scheme_list[0]
    first_k, first_b = first
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="simhash-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)

    fps = np.random.default_rng(20070508).integers(0, 2**64, size=max(sizes), dtype=np.uint64)
    started = time.perf_counter()
    try:
        schemes = bench_schemes(workdir, fps, sizes, scheme_caps, n_queries)
        simhash_lat = bench_simhash_pkg(fps, sizes, ks, n_queries, args.simhash_max)

        log("check_and_add throughput")
        throughput: list[tuple[str, int, int, dict[str, Any]]] = []
        first_db = workdir / f"k{first_k}b{first_b}.db"
        label = f"k={first_k} b={first_b}"
        for size in sizes:
            # each run adds pages; copy so every run starts from `size` pages
            run_path = workdir / f"run-{size}.db"
            if size == sizes[-1]:
                shutil.copy(first_db, run_path)
                for suffix in ("-wal", "-shm"):
                    if Path(str(first_db) + suffix).exists():
                        shutil.copy(str(first_db) + suffix, str(run_path) + suffix)
                url = f"sqlite:///{run_path}"
                for n in (1, 2):
                    throughput.append((f"SQLite {label}", size, n, run_workers(url, n, ops)))
            elif size == sizes[0]:
                small = workdir / "small.db"
                store = FingerprintStore.open(
                    f"sqlite:///{small}",
                    StoreOptions(spec=SPEC, max_distance=first_k, blocks=first_b),
                )
                store.add_many(
                    ((f"http://bench.example/p/{i}", int(fps[i]), 1000) for i in range(size)),
                    batch_size=5000,
                )
                store.close()
                throughput.append(
                    (f"SQLite {label}", size, 1, run_workers(f"sqlite:///{small}", 1, ops))
                )
        pg_load = None
        pg_url = pg_database()
        if pg_url is not None:
            try:
                store = FingerprintStore.open(
                    pg_url, StoreOptions(spec=SPEC, max_distance=first_k, blocks=first_b)
                )
                start = time.perf_counter()
                store.add_many(
                    ((f"http://bench.example/p/{i}", int(fps[i]), 1000) for i in range(pg_size)),
                    batch_size=5000,
                )
                pg_load = pg_size / (time.perf_counter() - start)
                store.close()
                for n in (1, 2):
                    throughput.append(
                        (f"PostgreSQL {label}", pg_size, n, run_workers(pg_url, n, ops))
                    )
            finally:
                drop_pg_database(pg_url)
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    total = time.perf_counter() - started
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

    # ------------------------------------------------------------ report
    out: list[str] = []
    cmd = "bench/bench_store.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out.append(f"### Fingerprint store benchmark (`.venv/bin/python {cmd.strip()}`)")
    out.append("")
    out.append(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"SQLite {__import__('sqlite3').sqlite_version}; random 64-bit fingerprints; "
        f"{n_queries} near() queries per cell, the same for every scheme (half 1-4-bit "
        f"variants of stored pages, half random); total {total / 60:.1f} min; load average "
        f"at the end {os.getloadavg()[0]:.1f} (other jobs shared the machine)."
    )
    out.append("")
    out.append("**Bulk load (`add_many`, batches of 5000, SQLite file)**")
    out.append("")
    out.append("| scheme | tables | key bits | pages | pages/s | bytes/page |")
    out.append("| --- | ---: | --- | ---: | ---: | ---: |")
    largest: dict[Scheme, int] = {}
    for scheme in scheme_list:
        pages, seconds = schemes["load"][scheme]
        largest[scheme] = max(size for (sch, size) in schemes["bytes"] if sch == scheme)
        bs = band_scheme(scheme)
        key_bits = "/".join(str(b) for b in sorted({t.key_bits for t in bs.tables}))
        out.append(
            f"| {name(scheme)} | {bs.n_tables} | {key_bits} | {pages:,} | "
            f"{fmt_rate(pages / seconds)} | {schemes['bytes'][(scheme, largest[scheme])]:.0f} |"
        )
    if pg_load is not None:
        out.append(
            f"| {name(first)} (PostgreSQL) | {band_scheme(first).n_tables} | | "
            f"{pg_size:,} | {fmt_rate(pg_load)} | |"
        )
    out.append("")
    out.append(
        "**near() latency, µs (p50 / p99); yardsticks with the same k; ratios of p50 "
        "(yardstick ÷ store: above 1 the store is faster); the NumPy scan ran in "
        "alternating blocks of 50 queries with the store**"
    )
    out.append("")
    out.append(
        "| pages | scheme | store | simhash.SimhashIndex | NumPy scan | NumPy ÷ store "
        "| SimhashIndex ÷ store | candidates/probe measured / expected |"
    )
    out.append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        for scheme in scheme_list:
            if (scheme, size) not in schemes["near"]:
                continue
            k = scheme[0]
            p50, p99 = schemes["near"][(scheme, size)]
            n50, n99 = schemes["numpy"][(scheme, size)]
            cells = [f"{size:,}", name(scheme), f"{p50:.0f} / {p99:.0f}"]
            if (k, size) in simhash_lat:
                s50, s99, _build = simhash_lat[(k, size)]
                cells.append(f"{s50:.0f} / {s99:.0f}")
            else:
                cells.append("n/a")
            cells.append(f"{n50:.0f} / {n99:.0f}")
            cells.append(f"{n50 / p50:.1f}×")
            cells.append(
                f"{simhash_lat[(k, size)][0] / p50:.1f}×" if (k, size) in simhash_lat else "n/a"
            )
            cells.append(
                f"{schemes['candidates'][(scheme, size)]:.3f} / "
                f"{band_scheme(scheme).expected_candidates(size):.3f}"
            )
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("**check_and_add throughput (new random pages, each worker its own process)**")
    out.append("")
    out.append(
        "| database | stored pages | processes | check_and_add/s (total) | worker peak RSS |"
    )
    out.append("| --- | ---: | ---: | ---: | ---: |")
    for db_name, size, n, report in throughput:
        out.append(
            f"| {db_name} | {size:,} | {n} | {fmt_rate(report['rate'])} | {report['rss_mb']} MB |"
        )
    out.append("")
    out.append(
        f"Peak RSS of this benchmark process (holds the NumPy array and the simhash "
        f"package's in-memory index): {peak_rss} MB."
    )
    out.append("")
    out.append(
        "**Projection (SQLite bytes/page as measured at each scheme's largest size; "
        "expected candidates per probe N·Σ2^-key_bits)**"
    )
    out.append("")
    out.append("| scheme | tables | bytes/page | " + " | ".join(
        f"{n} pages: size, candidates/probe" for n in ("10M", "100M", "1B")
    ) + " |")  # fmt: skip
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for scheme in scheme_list:
        bs = band_scheme(scheme)
        per_page = schemes["bytes"][(scheme, largest[scheme])]
        cells = []
        for n in (10**7, 10**8, 10**9):
            cells.append(f"{per_page * n / 1e9:,.0f} GB, {bs.expected_candidates(n):,.1f}")
        out.append(
            f"| {name(scheme)} | {bs.n_tables} | {per_page:.0f} | " + " | ".join(cells) + " |"
        )
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
