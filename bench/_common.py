"""What the benchmarks share: the data folder, the results file, a line naming the machine.

The service URLs, throw-away PostgreSQL databases (:mod:`crawler.services`) and the
processes below a crawl (:func:`crawler.workers.descendants`), which the tests use too,
are re-exported from the ``crawler`` project.

Benchmarks run from the checkout as modules, so that the editable install provides
``simhash_filter`` and the checkout provides ``crawler`` and ``bench``::

    .venv/bin/python -m bench.bench_store --quick
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler.services import (
    PG_ADMIN_URL,
    REDIS_URL,
    admin_statement,
    create_pg_database,
    drop_pg_database,
    pg_database,
)
from crawler.workers import descendants

__all__ = [
    "DATA_DIR",
    "PG_ADMIN_URL",
    "REDIS_URL",
    "RESULTS_DIR",
    "ROOT",
    "admin_statement",
    "create_pg_database",
    "descendants",
    "drop_pg_database",
    "machine",
    "pg_database",
    "write_results",
]

ROOT = Path(__file__).resolve().parent.parent
"""The checkout."""

DATA_DIR = Path(os.environ.get("SIMHASH_FILTER_BENCH_DATA", ROOT.parent / "shared" / "data"))
"""The public data sets (read-only, never copied into the repository); override with
``SIMHASH_FILTER_BENCH_DATA`` or a benchmark's ``--data``."""

RESULTS_DIR = ROOT / "bench" / "results"
"""Raw results, one JSON file per run (git-ignored)."""


def machine() -> str:
    """One line naming the machine a run was measured on."""
    return (
        f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )


def write_results(name: str, results: Any) -> Path:
    """Write one run's raw results to ``bench/results/<name>-<UTC time>.json`` with the date,
    the machine and the command; the file's path."""
    now = datetime.now(UTC)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}-{now:%Y%m%dT%H%M%SZ}.json"
    record = {
        "benchmark": name,
        "date": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": sys.orig_argv,
        "results": results,
    }
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return path
