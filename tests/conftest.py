"""Shared fixtures: temporary SQLite files and throw-away PostgreSQL databases.

PostgreSQL tests run against the real server (``SIMHASH_FILTER_TEST_PG``, default
``postgresql+psycopg://postgres@127.0.0.1:5432/postgres`` as the admin database).
Where no server answers they skip, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get(
    "SIMHASH_FILTER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("SIMHASH_FILTER_TEST_REDIS", "redis://127.0.0.1:6379/0")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _unavailable(what: str, why: object) -> None:
    message = f"{what} is not reachable: {why}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: service tests must not skip)")
    pytest.skip(message)


def _pg_admin_engine():  # type: ignore[no-untyped-def]
    from sqlalchemy import create_engine

    return create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", pool_pre_ping=True)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite database file in the test's temporary folder (files, not :memory:,
    because threads and processes must see the same database)."""
    return f"sqlite:///{tmp_path / 'dedup.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    name = f"sf_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = _pg_admin_engine()
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # the server is down or refuses us
        _unavailable("PostgreSQL", exc)
    url = make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Both back-ends: the same test runs on a SQLite file and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'dedup.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def redis_url() -> str:
    """The Redis server on loopback; flushes nothing, tests use their own key prefixes."""
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:
        _unavailable("Redis", exc)
    return REDIS_URL
