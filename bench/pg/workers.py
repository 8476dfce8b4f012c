"""The benchmark processes: one variant each, started together, timed per call.

A worker (``python -m bench.pg.workers '<spec as JSON>'``) opens its client, warms up,
says "ready", waits for "go" on stdin, runs for its seconds (or calls), and prints its
report as one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench._common import ROOT
from bench.pg.cells import Cell, percentile
from bench.pg.cpu import BackendCpu
from bench.pg.database import libpq_url
from bench.pg.floor import FloorClient
from bench.pg.proxy import CountingProxy
from bench.pg.setup import Page, Setup

__all__ = [
    "WRITE_PATHS",
    "count_round_trips",
    "finish_workers",
    "go",
    "measure_near",
    "run_python_cell",
    "start_workers",
    "worker_main",
]

WRITE_PATHS = {"store-2rt": "pg-pipeline", "store-generic": "sqlalchemy"}
"""The store's write path a variant opens it with (``StoreOptions(write_path=)``);
any other store variant takes the best available (the server-side function)."""


def worker_main(spec: dict[str, Any]) -> None:
    """One benchmark process: warm up, say "ready", wait for "go", run, print JSON."""
    from simhash_filter.store import PageRow

    kind, url, seconds = spec["kind"], spec["url"], spec["seconds"]
    setup = Setup(spec["rule"])
    calls_limit = spec.get("calls")
    rng = random.Random(spec["seed"])
    prefix = f"http://w{spec['seed']}.new.example/"
    counter = iter(range(10**9))

    def new_page() -> Page:
        return Page(f"{prefix}{next(counter)}", rng.getrandbits(64), 1000, setup.sketch(rng))

    call: Callable[[], int]
    closer: Callable[[], None]
    if kind.startswith("floor"):
        floor = FloorClient(libpq_url(url), setup, durable=kind == "floor")

        def call() -> int:
            floor.check(new_page())
            return 1

        closer = floor.close
    else:
        store = setup.open(
            url,
            create=False,
            durable=False if kind == "store-async" else None,
            write_path=WRITE_PATHS.get(kind.removesuffix("-batch16")),
        )
        if kind.endswith("batch16"):

            def call() -> int:
                store.add_many([PageRow(*new_page()) for _ in range(16)], batch_size=16)
                return 16

        elif kind.startswith("near"):

            def call() -> int:
                store.near(rng.getrandbits(64))
                return 1

        else:

            def call() -> int:
                page = new_page()
                store.check_and_add(
                    page.url, page.fingerprint, text_length=page.text_length, sketch=page.sketch
                )
                return 1

        closer = store.close

    for _ in range(spec.get("warmup", 30)):
        call()
    print("ready", flush=True)
    sys.stdin.readline()
    latencies: list[int] = []
    pages = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        t0 = time.perf_counter_ns()
        pages += call()
        latencies.append(time.perf_counter_ns() - t0)
        if calls_limit is not None:
            if len(latencies) >= calls_limit:
                break
        elif time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    closer()
    print(
        json.dumps(
            {
                "pages": pages,
                "calls": len(latencies),
                "elapsed": elapsed,
                "cpu": cpu,
                "latencies_ns": latencies,
            }
        ),
        flush=True,
    )


def start_workers(specs: list[dict[str, Any]]) -> list[subprocess.Popen[str]]:
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.pg.workers", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for spec in specs
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            _, err = proc.communicate(timeout=60)
            raise RuntimeError(f"worker failed: {line} {err[-3000:]}")
    return procs


def finish_workers(procs: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed: {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def go(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def run_python_cell(
    variant: str, setup: Setup, url: str, database: str, n_procs: int, seconds: float, seed: int
) -> Cell:
    specs = [
        {"kind": variant, "rule": setup.name, "url": url, "seconds": seconds, "seed": seed + w}
        for w in range(n_procs)
    ]
    procs = start_workers(specs)
    with BackendCpu(database) as server:
        go(procs)
        reports = finish_workers(procs)
    latencies = [ns / 1e6 for r in reports for ns in r["latencies_ns"]]
    return Cell(
        variant=variant,
        procs=n_procs,
        pages=sum(r["pages"] for r in reports),
        calls=sum(r["calls"] for r in reports),
        seconds=max(r["elapsed"] for r in reports),
        client_cpu=sum(r["cpu"] for r in reports),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


def count_round_trips(
    variant: str, setup: Setup, url: str, calls: int, seed: int
) -> dict[str, float]:
    """Round trips and statements per page and per call of one worker, through the
    counting proxy."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        spec = {
            "kind": variant,
            "rule": setup.name,
            "url": proxied,
            "seconds": 0,
            "calls": calls,
            "seed": seed,
        }
        procs = start_workers([spec])
        rt0, st0 = proxy.snapshot()
        go(procs)
        (report,) = finish_workers(procs)
        time.sleep(0.2)  # let the proxy pass on the close
        rt1, st1 = proxy.snapshot()
    finally:
        proxy.close()
    pages, calls = report["pages"], report["calls"]
    return {
        "round_trips_per_page": round((rt1 - rt0) / pages, 3),
        "statements_per_page": round((st1 - st0) / pages, 3),
        "round_trips_per_call": round((rt1 - rt0) / calls, 3),
    }


def measure_near(kind: str, setup: Setup, url: str, database: str, calls: int) -> dict[str, Any]:
    """near() latency of one process at the stored pages, and its round trips."""
    spec = {"kind": kind, "rule": setup.name, "url": url, "seconds": 0, "calls": calls, "seed": 77}
    procs = start_workers([spec])
    with BackendCpu(database) as server:
        go(procs)
        (report,) = finish_workers(procs)
    latencies = [ns / 1e6 for ns in report["latencies_ns"]]
    return {
        "calls": report["calls"],
        "p50_ms": round(percentile(latencies, 0.5), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "client_cpu_ms_per_call": round(1000 * report["cpu"] / report["calls"], 3),
        "server_cpu_ms_per_call": round(1000 * server.seconds / report["calls"], 3),
        **count_round_trips(kind, setup, url, 200, seed=78),
    }


if __name__ == "__main__":
    worker_main(json.loads(sys.argv[1]))
