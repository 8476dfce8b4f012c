"""``pgbench -N -M prepared`` as a yardstick: its rate, CPU, latency and round trips."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.pg.cells import Cell, percentile
from bench.pg.cpu import BackendCpu
from bench.pg.proxy import CountingProxy

__all__ = [
    "count_pgbench_round_trips",
    "pgbench_args",
    "pgbench_binary",
    "pgbench_env",
    "run_pgbench_cell",
]


def pgbench_binary() -> str | None:
    return shutil.which("pgbench")


def pgbench_args(url: str) -> list[str]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    args = ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres"]
    return [*args, u.database or "postgres"]


def pgbench_env(url: str) -> dict[str, str]:
    from sqlalchemy.engine import make_url

    env = dict(os.environ)
    password = make_url(url).password
    if password:
        env["PGPASSWORD"] = str(password)
    return env


def run_pgbench_cell(binary: str, url: str, database: str, n_procs: int, seconds: float) -> Cell:
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            binary, "-N", "-M", "prepared", "-n", "-c", str(n_procs), "-j", str(min(n_procs, 2)),
            "-T", str(max(1, round(seconds))), "--log", f"--log-prefix={tmp}/pgb",
            *pgbench_args(url),
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with BackendCpu(database) as server:
            result = subprocess.run(
                args, capture_output=True, text=True, env=pgbench_env(url), timeout=600
            )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            raise RuntimeError(result.stderr[-2000:])
        latencies: list[float] = []
        for path in Path(tmp).glob("pgb*"):
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3:
                    latencies.append(int(parts[2]) / 1000)
    done = re.search(r"number of transactions actually processed: (\d+)", result.stdout)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", result.stdout)
    pages = int(done.group(1)) if done else len(latencies)
    rate = float(tps.group(1)) if tps else 0.0
    return Cell(
        variant="pgbench -N",
        procs=n_procs,
        pages=pages,
        calls=pages,
        seconds=pages / rate if rate else seconds,
        client_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


def count_pgbench_round_trips(binary: str, url: str, transactions: int) -> dict[str, float]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        subprocess.run(
            [
                binary,
                "-N",
                "-M",
                "prepared",
                "-n",
                "-c",
                "1",
                "-t",
                str(transactions),
                *pgbench_args(proxied),
            ],
            capture_output=True,
            check=True,
            env=pgbench_env(url),
            timeout=300,
        )
        time.sleep(0.2)
        rt, st = proxy.snapshot()
    finally:
        proxy.close()
    # the connection set-up's few round trips are included (< 0.01 per transaction)
    return {
        "round_trips_per_page": round(rt / transactions, 3),
        "statements_per_page": round(st / transactions, 3),
        "round_trips_per_call": round(rt / transactions, 3),
    }
