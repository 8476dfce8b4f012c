"""Database URLs a store cannot run on: one line saying what to install or use instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.blocked_modules import blocking_path

from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.engine import POSTGRESQL_EXTRA, parse_url
from simhash_filter.store.records import StoreError

SPEC = "test-spec"


def test_postgres_is_an_alias_of_postgresql() -> None:
    assert parse_url("postgres://user@127.0.0.1/crawl").drivername == "postgresql"
    assert parse_url("postgres+psycopg://user@127.0.0.1/crawl").drivername == "postgresql+psycopg"


def test_a_postgres_url_opens(pg_url: str) -> None:
    alias = "postgres" + pg_url[len("postgresql") :].replace("+psycopg", "", 1)
    with FingerprintStore.open(alias, StoreOptions(spec=SPEC)) as store:
        assert store.dialect == "postgresql"


@pytest.mark.parametrize(
    "url", ["mysql://user@127.0.0.1/crawl", "oracle://x@h/db", "mssql+pyodbc://h/db"]
)
def test_an_unsupported_backend_is_named(url: str) -> None:
    with pytest.raises(StoreError, match=r"databases are not supported: .* SQLite .* PostgreSQL"):
        FingerprintStore.open(url, StoreOptions(spec=SPEC))


def _cli(args: list[str], pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "simhash_filter", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_a_missing_driver_names_what_to_install(tmp_path: Path) -> None:
    blocker = blocking_path(tmp_path / "blocked", ["psycopg"])
    result = _cli(["--db", "postgresql://postgres@127.0.0.1:5432/postgres", "stats"], blocker)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line, no traceback
    assert POSTGRESQL_EXTRA in result.stderr
    assert "no module named 'psycopg'" in result.stderr


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The blocker itself: psycopg is installed here, and not importable behind it."""
    blocker = blocking_path(tmp_path / "blocked", ["psycopg"])
    probe = "import importlib.util, psycopg"
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "No module named 'psycopg'" in result.stderr
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0
