"""PostgreSQL write path benchmark: the project's check_and_add against a one-round-trip floor.

    .venv/bin/python -m bench.bench_pg             # ~6 min here (--rounds 3: ~13 min)
    .venv/bin/python -m bench.bench_pg --seconds 5 --procs 1,4
    .venv/bin/python -m bench.bench_pg --rule legacy   # the old k=4 configuration

One run, one PostgreSQL server, one throw-away database holding ``--pages`` stored pages,
new random pages for every call. ``--rule`` chooses what the database is made with:

- ``default``: the simhash match rule (``MatchRule.for_distance(9)``: candidates within
  k1=9 bits, confirmed when the sketches agree on at least 70% of
  their slots; a page without a sketch within 3 bits) over the default multi-index
  scheme (4 blocks of 16 bits, 308 probe keys a page): the project's default before the
  minhash-lsh index, whose store this bench's floor does not model (bench_scale measures
  it). Every page, stored or new, has a
  random fingerprint and a valid random sketch of 256 text slots (``encode_sketch``
  without the page part, so the boilerplate check never applies);
- ``legacy``: the configuration this bench was first written for: no rule, k=4 over the
  permuted tables (15 tables), no sketches;
- ``default,k1=7,blocks=4`` (either option alone too): the default rule at another
  candidate distance (``MatchRule.for_distance``) and block count, e.g. the cheaper index
  of 4 blocks probed at radius 1 (68 probe keys a page).

The stored pages are written by a bulk loader here (``COPY`` of the rows ``add_many``
would write: pages, and band rows from ``scheme.index_keys``), after checking that no
two of them match under the rule (random fingerprints have a few pairs within 9 bits
among 100k: their random sketches must reject them), and that on a small sample the
loader's rows equal ``add_many``'s on a second database. The variants:

- ``store``: ``FingerprintStore.check_and_add``, one page a call;
- ``store-2rt``: the same, opened with ``write_path="pg-pipeline"`` (the store's
  two-round-trip path instead of its server-side function);
- ``store-batch16``: ``FingerprintStore.add_many`` of 16 pages a call (the pipeline's
  group commit). Under the default rule 16 pages need ~5,000 key locks, more than
  ``MAX_KEY_LOCKS``, so the store writes them in parts within that bound (3 pages a
  part), one transaction each (the run reports the lock count);
- ``store-async``: as ``store``, opened with ``durable=False`` (``synchronous_commit=off``);
- ``floor``: a minimal hand-written equivalent written here, one server-side PL/pgSQL
  function called once per page (one round trip, autocommit, a prepared statement with
  typed parameters): the same advisory locks, probe, decision (candidates nearest first,
  confirmed by the sketches' agreement, the fallback distance without a sketch) and rows
  as the store. The run first replays a mixed stream (new pages, near copies with
  similar sketches, near fingerprints with dissimilar sketches, pages without sketches,
  unchanged and changed re-crawls) through the store and through the function on two
  fresh databases and stops unless verdicts and table contents agree;
- ``floor-async``: the same with ``SET LOCAL synchronous_commit = off``;
- ``pgbench``: ``pgbench -N -M prepared`` (scale 1: 100k accounts) as a yardstick, when
  installed.

``store-generic`` and ``store-generic-batch16`` (the store opened with
``write_path="sqlalchemy"``, its generic path) are left out of the default list to keep the run
short; ``--variants`` still takes them.

Each with 1, 2 and 4 processes (``--procs``), ``--seconds`` each, variants interleaved per
process count, ``--rounds`` times in alternating order (the median round is reported). Per
variant: pages/s (all processes), calls/s, client CPU per page (the worker processes' CPU
time), server CPU per page (utime + stime of the backends serving the benchmark database,
sampled from /proc every 50 ms), latency p50/p99 per call. Round trips and statements per
page and per call come from a separate short run of one process through a counting TCP
proxy (a round trip: the client sends after having received; a statement: an Execute or
Query message). ``near()`` p50/p99 and its round trips are measured at the loaded size,
before the write variants add pages.

Raw results go to ``bench/results/bench_pg-<time>.json``; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from typing import Any

from bench._common import create_pg_database, drop_pg_database, machine, write_results
from bench.pg.cells import Cell
from bench.pg.database import database_name, psycopg_connect
from bench.pg.equivalence import check_floor_equivalence
from bench.pg.floor import install_floor
from bench.pg.load import load_pages
from bench.pg.pgbench import (
    count_pgbench_round_trips,
    pgbench_args,
    pgbench_binary,
    pgbench_env,
    run_pgbench_cell,
)
from bench.pg.setup import Setup
from bench.pg.workers import (
    count_round_trips,
    measure_near,
    run_python_cell,
    worker_main,
)

__all__ = ["main"]

DEFAULT_VARIANTS = "store,store-2rt,store-batch16,store-async,floor,floor-async,pgbench"

# --------------------------------------------------------------------------- main


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def markdown(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| variant | procs | pages/s | calls/s | round trips / call | round trips / page "
        "| statements / page | client CPU / page | server CPU / page | p50 | p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def number(value: Any) -> str:
        return "" if value is None else f"{value:g}"

    for c in cells:
        lines.append(
            f"| {c['variant']} | {c['procs']} | {c['pages_per_s']:,.0f} | "
            f"{c['calls_per_s']:,.0f} | {number(c.get('round_trips_per_call'))} | "
            f"{number(c.get('round_trips_per_page'))} | "
            f"{number(c.get('statements_per_page'))} | {c['client_cpu_ms_per_page']:.2f} ms | "
            f"{c['server_cpu_ms_per_page']:.2f} ms | {c['p50_ms']:.2f} ms | "
            f"{c['p99_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def ratios(cells: list[dict[str, Any]]) -> dict[str, float]:
    """Each store variant's rate over the floor's (async over floor-async) per procs."""
    rate = {(c["variant"], c["procs"]): c["pages_per_s"] for c in cells}
    out = {}
    for (variant, n), value in rate.items():
        base = "floor-async" if variant == "store-async" else "floor"
        if variant.startswith("store") and rate.get((base, n)):
            out[f"{variant}/{base} x{n}"] = round(value / rate[(base, n)], 3)
    return out


def batch_locks(setup: Setup, size: int = 16) -> dict[str, Any]:
    """How many advisory locks a batch of ``size`` new pages needs, and how many
    transactions the store writes it in (parts within MAX_KEY_LOCKS, ``lock_parts``)."""
    from simhash_filter.store import canonical_url
    from simhash_filter.store.locks import MAX_KEY_LOCKS, lock_parts, write_locks

    scheme = setup.scheme()
    rng = random.Random(5)
    keys = []
    for i in range(size):
        fp = rng.getrandbits(64)
        keys.append(
            (
                canonical_url(f"http://x.example/{i}"),
                list(enumerate(scheme.index_keys(fp))),
                scheme.probe_keys(fp),
            )
        )
    single, batch = len(write_locks(keys[:1]).ids), len(write_locks(keys).ids)
    return {
        "locks_per_page": single,
        f"locks_per_batch_of_{size}": batch,
        "max_key_locks": MAX_KEY_LOCKS,
        "transactions_per_batch": len(lock_parts(keys)),
        "page_takes_database_lock": single > MAX_KEY_LOCKS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument(
        "--rule",
        default="default",
        help="default: the match rule at k1=9 over the multi-index scheme, pages with "
        "sketches; legacy: k=4, permuted tables, no sketches; default,k1=K,blocks=B: the "
        "default rule at another k1 and block count (default)",
    )
    parser.add_argument("--pages", type=int, default=100_000, help="stored pages (100000)")
    parser.add_argument("--seed", type=int, default=1, help="of the stored pages (1)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per cell (10)")
    parser.add_argument("--procs", default="1,2,4", help="process counts (1,2,4)")
    parser.add_argument(
        "--variants",
        default=DEFAULT_VARIANTS,
        help="which variants, in this order within each process count; store-generic and "
        f"store-generic-batch16 are known too ({DEFAULT_VARIANTS})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every cell this many times (in alternating order) and report the "
        "median round (1)",
    )
    parser.add_argument("--near", type=int, default=2000, help="near() calls to time (2000)")
    parser.add_argument("--label", default="", help="a word stored with the results")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(json.loads(args.worker))
        return 0

    setup = Setup(args.rule)
    variants = [v for v in args.variants.split(",") if v]
    procs = [int(p) for p in args.procs.split(",")]
    pgbench = pgbench_binary() if "pgbench" in variants else None
    if "pgbench" in variants and pgbench is None:
        log("pgbench is not installed: skipping it (apt-get install postgresql-contrib)")
    results: dict[str, Any] = {
        "label": args.label,
        "rule": args.rule,
        "machine_at_start": machine(),
        "pages": args.pages,
        "seconds_per_cell": args.seconds,
        "batch16_locks": batch_locks(setup),
        "cells": [],
    }
    log(f"{args.rule} rule: {results['batch16_locks']}")
    log("checking the floor function against the store on a mixed stream")
    results["floor_equivalence"] = check_floor_equivalence(setup)
    log(f"floor equivalence: {results['floor_equivalence']}")
    url = create_pg_database("sf_bench_pg")
    pg_url = create_pg_database("sf_bench_pgbench") if pgbench is not None else ""
    try:
        bench_db = database_name(url)
        log(f"loading {args.pages:,} pages into {bench_db}")
        results["load"] = load_pages(url, setup, args.pages, seed=args.seed)
        log(f"loaded: {results['load']}")
        install_floor(url)
        with psycopg_connect(url) as conn:
            results["server"] = conn.execute("SELECT version()").fetchone()[0]
            results["server_settings"] = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]
                for name in ("synchronous_commit", "fsync", "shared_buffers", "wal_level")
            }
        if args.near:  # at the loaded size, before the write variants add pages
            results["near"] = {"near": measure_near("near", setup, url, bench_db, args.near)}
            log(f"near: {results['near']['near']}")
        if pgbench is not None:
            subprocess.run(
                [pgbench, "-i", "-s", "1", "-q", *pgbench_args(pg_url)],
                capture_output=True,
                check=True,
                env=pgbench_env(pg_url),
                timeout=300,
            )
        round_trips: dict[str, dict[str, float]] = {}
        for variant in variants:
            if variant == "pgbench":
                if pgbench is not None:
                    round_trips[variant] = count_pgbench_round_trips(pgbench, pg_url, 500)
            else:
                round_trips[variant] = count_round_trips(variant, setup, url, 200, seed=900)
            log(f"round trips {variant}: {round_trips.get(variant)}")
        seed = 1000
        measured: dict[tuple[str, int], list[Cell]] = {}
        for round_no in range(args.rounds):
            order = variants if round_no % 2 == 0 else variants[::-1]
            for n in procs:
                for variant in order:
                    if variant == "pgbench":
                        if pgbench is None:
                            continue
                        cell = run_pgbench_cell(
                            pgbench, pg_url, database_name(pg_url), n, args.seconds
                        )
                    else:
                        cell = run_python_cell(variant, setup, url, bench_db, n, args.seconds, seed)
                    seed += 100
                    measured.setdefault((variant, n), []).append(cell)
                    log(
                        f"{variant} x{n}: {cell.rate:,.0f} pages/s, client "
                        f"{1000 * cell.client_cpu / max(1, cell.pages):.3f} ms, server "
                        f"{1000 * cell.server_cpu / max(1, cell.pages):.3f} ms, "
                        f"p50 {cell.p50_ms:.3f} ms"
                    )
        for n in procs:
            for variant in variants:
                cells = sorted(measured.get((variant, n), []), key=lambda c: c.rate)
                if not cells:
                    continue
                cell = cells[(len(cells) - 1) // 2]  # the median round (the lower of two)
                cell.extra.update(round_trips.get(variant, {}))
                row = cell.row()
                row["pages_per_s_each_round"] = [round(c.rate, 1) for c in cells]
                results["cells"].append(row)
        results["ratios"] = ratios(results["cells"])
        with psycopg_connect(url) as conn:
            results["pages_at_end"] = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    finally:
        if not args.keep:
            for db in (url, pg_url):
                if db:
                    drop_pg_database(db)
    print(markdown(results["cells"]))
    print()
    print("ratios to the floor:", json.dumps(results["ratios"]))
    if "near" in results:
        print("near():", json.dumps(results["near"]["near"]))
    log(f"raw results: {write_results('bench_pg', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
