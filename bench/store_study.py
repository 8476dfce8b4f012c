"""The index study of ``bench_store --study`` (issue 13.D): index schemes for larger k.

    .venv/bin/python -m bench.bench_store --study 6,7,8

Multi-index hashing with 3, 4 and 5 blocks and the permuted tables, for each k, at each
size: bytes a page, candidates a probe, ``near()`` p50/p99 (wall and CPU) and the
``add_many`` rate of new pages at that size.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import machine, write_results
from bench.store_common import SPEC, db_bytes, log, percentiles
from simhash_filter.index.schemes import MULTI_INDEX, PERMUTED, default_blocks
from simhash_filter.store import FingerprintStore, StoreOptions

__all__ = ["run_study"]


StudyScheme = tuple[str, int, int]  # (index kind, k, blocks)


def study_schemes(ks: list[int], permuted_max: int) -> list[tuple[StudyScheme, int | None]]:
    """Multi-index hashing with 3, 4 and 5 blocks for each k, and the permuted tables of
    default_blocks(k) (measured only up to ``permuted_max`` pages: C(b, k) rows a page)."""
    schemes: list[tuple[StudyScheme, int | None]] = []
    for k in ks:
        for m in (3, 4, 5):
            schemes.append(((MULTI_INDEX, k, m), None))
        schemes.append(((PERMUTED, k, default_blocks(k)), permuted_max))
    return schemes


def study_name(scheme: StudyScheme) -> str:
    kind, k, blocks = scheme
    return f"k={k} {'MIH' if kind == MULTI_INDEX else 'permuted'} b={blocks}"


def fill_store(store: FingerprintStore, url: str, fps: np.ndarray, start: int, end: int) -> None:
    """Write pages ``start..end`` of the SQLite database at ``url`` and their band rows
    straight into the store's tables, *without* the check: random 64-bit fingerprints are
    almost never within k of each other, and the check's cost is measured separately
    (``add_many`` rate). The bench's fast loader: the rows ``add_many`` would write."""
    from sqlalchemy import create_engine, insert

    from simhash_filter.store.schema import keys_table, pages_table

    now = datetime.now(UTC)
    scheme = store.scheme
    engine = create_engine(url)
    try:
        for lo in range(start, end, 20_000):
            pages = [
                {
                    "id": i + 1,
                    "url": f"http://bench.example/p/{i}",
                    "domain": "bench.example",
                    "fingerprint": int(fps[i]),
                    "text_length": 1000,
                    "sketch": None,
                    "first_seen": now,
                    "last_seen": now,
                }
                for i in range(lo, min(end, lo + 20_000))
            ]
            bands = [
                {
                    "table_no": t,
                    "key": key,
                    "page_id": page["id"],
                    "fingerprint": page["fingerprint"],
                }
                for page in pages
                for t, key in scheme.index_items(page["fingerprint"])
            ]
            with engine.begin() as conn:
                conn.execute(insert(pages_table), pages)
                conn.execute(insert(keys_table), bands)
    finally:
        engine.dispose()


def near_queries(stored: np.ndarray, k: int, count: int, seed: int) -> list[int]:
    """Half variants of stored pages with 1..k flipped bits, half random misses."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        if i % 2:
            fp = int(stored[rng.randrange(len(stored))])
            for bit in rng.sample(range(64), rng.randint(1, k)):
                fp ^= 1 << bit
            queries.append(fp)
        else:
            queries.append(rng.getrandbits(64))
    return queries


def index_study(
    workdir: Path,
    fps: np.ndarray,
    sizes: list[int],
    schemes: list[tuple[StudyScheme, int | None]],
    n_queries: int,
    check_pages: int,
) -> list[dict[str, Any]]:
    """Every scheme at every size (up to its cap): fill, bytes/page, candidates per probe,
    near() p50/p99 (all schemes of one k timed in alternating blocks of 50 queries), and
    the add_many rate of ``check_pages`` new pages at that size."""
    rows: list[dict[str, Any]] = []
    stores: dict[StudyScheme, FingerprintStore] = {}
    urls: dict[StudyScheme, str] = {}
    filled: dict[StudyScheme, int] = {}
    fill_seconds: dict[StudyScheme, float] = {}
    extra = np.random.default_rng(99).integers(0, 2**64, size=check_pages * len(sizes),
                                               dtype=np.uint64)  # fmt: skip
    try:
        for scheme, _cap in schemes:
            kind, k, blocks = scheme
            path = workdir / f"{kind}-k{k}-b{blocks}.db"
            urls[scheme] = f"sqlite:///{path}"
            stores[scheme] = FingerprintStore.open(
                urls[scheme], StoreOptions(spec=SPEC, max_distance=k, blocks=blocks, index=kind)
            )
            filled[scheme] = 0
            fill_seconds[scheme] = 0.0
        for size_no, size in enumerate(sizes):
            active = [s for s, cap in schemes if cap is None or size <= cap]
            for scheme in active:
                log(f"{study_name(scheme)}: filling to {size:,} pages")
                began = time.perf_counter()
                fill_store(stores[scheme], urls[scheme], fps, filled[scheme], size)
                fill_seconds[scheme] += time.perf_counter() - began
                filled[scheme] = size
            for k in sorted({s[1] for s in active}):
                group = [s for s in active if s[1] == k]
                queries = near_queries(fps[:size], k, n_queries, seed=size * 31 + k)
                samples: dict[StudyScheme, list[int]] = {s: [] for s in group}
                cpu: dict[StudyScheme, list[int]] = {s: [] for s in group}
                for s in group:  # warm up
                    for q in queries[:50]:
                        stores[s].near(q)
                for start in range(0, len(queries), 50):
                    chunk = queries[start : start + 50]
                    for s in group:
                        near = stores[s].near
                        for q in chunk:
                            c0 = time.thread_time_ns()
                            t0 = time.perf_counter_ns()
                            near(q)
                            samples[s].append(time.perf_counter_ns() - t0)
                            cpu[s].append(time.thread_time_ns() - c0)
                for s in group:
                    store = stores[s]
                    path = workdir / f"{s[0]}-k{s[1]}-b{s[2]}.db"
                    p50, p99 = percentiles(samples[s])
                    cpu50, cpu99 = percentiles(cpu[s])
                    misses = queries[::2][:300]
                    candidates = statistics.mean(store.count_candidates(q) for q in misses)
                    bytes_per_page = db_bytes(path) / size
                    new = extra[size_no * check_pages : (size_no + 1) * check_pages]
                    began = time.perf_counter()
                    store.add_many(
                        (
                            (f"http://bench.example/new/{size}/{i}", int(fp), 1000)
                            for i, fp in enumerate(new)
                        ),
                        batch_size=500,
                    )
                    check_rate = len(new) / (time.perf_counter() - began)
                    row = {
                        "scheme": study_name(s),
                        "index": s[0],
                        "k": s[1],
                        "blocks": s[2],
                        "describe": store.scheme.describe(),
                        "pages": size,
                        "rows_per_page": store.scheme.n_tables,
                        "probe_keys": store.scheme.n_probes,
                        "bytes_per_page": bytes_per_page,
                        "candidates_measured": candidates,
                        "candidates_expected": store.scheme.expected_candidates(size),
                        "near_p50_us": p50,
                        "near_p99_us": p99,
                        "near_cpu_p50_us": cpu50,
                        "near_cpu_p99_us": cpu99,
                        "fill_pages_per_s": filled[s] / fill_seconds[s],
                        "add_many_pages_per_s": check_rate,
                        "queries": len(queries),
                    }
                    rows.append(row)
                    log(
                        f"{row['scheme']} at {size:,}: near {p50:.0f}/{p99:.0f} us, "
                        f"{candidates:.1f} candidates, {bytes_per_page:.0f} B/page, "
                        f"add_many {check_rate:.0f}/s"
                    )
    finally:
        for store in stores.values():
            store.close()
    return rows


def study_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| k | scheme | rows/page | probe keys | pages | bytes/page | candidates/probe "
        "measured / expected | near() p50 / p99 µs | near() CPU p50 / p99 µs "
        "| add_many pages/s | fill pages/s |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: (r["k"], r["pages"], r["near_p99_us"])):
        out.append(
            f"| {r['k']} | {r['scheme']} | {r['rows_per_page']} | {r['probe_keys']} | "
            f"{r['pages']:,} | {r['bytes_per_page']:.0f} | "
            f"{r['candidates_measured']:.1f} / {r['candidates_expected']:.1f} | "
            f"{r['near_p50_us']:.0f} / {r['near_p99_us']:.0f} | "
            + (
                f"{r['near_cpu_p50_us']:.0f} / {r['near_cpu_p99_us']:.0f} | "
                if "near_cpu_p50_us" in r
                else "n/a | "
            )
            + f"{r['add_many_pages_per_s']:,.0f} | {r['fill_pages_per_s']:,.0f} |"
        )
    return out


def run_study(args: argparse.Namespace, argv: list[str] | None) -> int:
    ks = [int(k) for k in args.study.split(",")]
    sizes = [int(s) for s in (args.sizes or "100000,1000000").split(",")]
    schemes = study_schemes(ks, args.permuted_max)
    if args.study_only:
        wanted = set(args.study_only.split(","))
        schemes = [(s, cap) for s, cap in schemes if f"{s[0]}:{s[1]}:{s[2]}" in wanted]
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="simhash-study-"))
    workdir.mkdir(parents=True, exist_ok=True)
    fps = np.random.default_rng(20070508).integers(0, 2**64, size=max(sizes), dtype=np.uint64)
    started = time.perf_counter()
    try:
        rows = index_study(workdir, fps, sizes, schemes, args.queries or 2000, args.check_pages)
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    path = write_results("bench_store-index-study", {"rows": rows, "sizes": sizes, "ks": ks})
    cmd = "bench.bench_store " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"### Index schemes for k in {ks} (`.venv/bin/python -m {cmd.strip()}`)\n")
    minutes = (time.perf_counter() - started) / 60
    sqlite = __import__("sqlite3").sqlite_version
    print(f"{machine()}; SQLite {sqlite}; {minutes:.1f} min; raw results: {path.name}\n")
    print("\n".join(study_table(rows)))
    return 0
