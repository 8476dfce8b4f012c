"""What the benchmarks and the tests share: service URLs, data folder, throw-away databases.

Where the services and the public data are, a throw-away PostgreSQL database, a line
describing the machine, and the raw results file.

Benchmarks run from the checkout as modules, so that the editable install provides
``simhash_filter`` and the checkout provides ``crawler`` and ``bench``::

    .venv/bin/python -m bench.bench_store --quick
"""

from __future__ import annotations

import json
import os
import platform
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DATA_DIR",
    "PG_ADMIN_URL",
    "REDIS_URL",
    "RESULTS_DIR",
    "ROOT",
    "create_pg_database",
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

PG_ADMIN_URL = os.environ.get(
    "SIMHASH_FILTER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
"""A PostgreSQL database to connect to for creating and dropping throw-away databases."""

REDIS_URL = os.environ.get("SIMHASH_FILTER_TEST_REDIS", "redis://127.0.0.1:6379/0")


def _admin(admin_url: str, statement: str) -> None:
    """Run one statement on the admin database, outside a transaction (CREATE/DROP DATABASE)."""
    from sqlalchemy import create_engine, text

    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


def create_pg_database(prefix: str = "sf_bench", admin_url: str = PG_ADMIN_URL) -> str:
    """Create an empty database named ``<prefix>_<random>`` on the server of ``admin_url``;
    its URL (the admin URL's user and password, the new database)."""
    from sqlalchemy.engine import make_url

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    _admin(admin_url, f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str, admin_url: str = PG_ADMIN_URL) -> None:
    """Drop the database of ``url``, closing its sessions (``WITH (FORCE)``)."""
    from sqlalchemy.engine import make_url

    _admin(admin_url, f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


@contextmanager
def pg_database(prefix: str = "sf_bench", admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """A throw-away PostgreSQL database for the block: created empty, dropped afterwards."""
    url = create_pg_database(prefix, admin_url)
    try:
        yield url
    finally:
        drop_pg_database(url, admin_url)


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


def descendants(pid: int) -> set[int]:
    """The pids of every process below ``pid`` (children, their children, ...), read from
    /proc: the page workers of a crawl process, for RSS sampling and orphan checks."""
    children: dict[int, set[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, set()).add(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found
