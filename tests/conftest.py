"""Shared fixtures: temporary SQLite files and throw-away PostgreSQL databases.

PostgreSQL tests run against the real server (``SIMHASH_FILTER_TEST_PG``, default
``postgresql+psycopg://postgres@127.0.0.1:5432/postgres`` as the admin database).
Where no server answers they skip, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawler.services import REDIS_URL, create_pg_database, drop_pg_database

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _unavailable(what: str, why: object) -> None:
    message = f"{what} is not reachable: {why}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: service tests must not skip)")
    pytest.skip(message)


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line fits its tables to ``$COLUMNS``: no test inherits one (pytest-xdist's
    workers run with ``COLUMNS=80``, a shell may export its own); a test of the width sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite database file in the test's temporary folder (files, not :memory:,
    because threads and processes must see the same database)."""
    return f"sqlite:///{tmp_path / 'dedup.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    try:
        url = create_pg_database("sf_test")
    except Exception as exc:  # the server is down or refuses us
        _unavailable("PostgreSQL", exc)
    try:
        yield url
    finally:
        drop_pg_database(url)


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


_SHARED_FIXTURE = re.compile(r"""@pytest\.fixture\([^)]*scope=["'](?:module|class|package)["']""")


def _files_with_shared_fixtures(root: Path) -> frozenset[str]:
    """The test files (node-id paths) that define a module-, class- or package-scoped fixture."""
    return frozenset(
        path.relative_to(root).as_posix()
        for path in (root / "tests").rglob("test_*.py")
        if _SHARED_FIXTURE.search(path.read_text(encoding="utf-8"))
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``-n N``): the tests of a file that defines a shared fixture (a
    crawl several tests read) go to one worker, so the set-up is still made once; every other
    test is a unit of its own, for whichever worker is free. (xdist's ``loadgroup`` marks do
    not reach its scheduler under pytest 9, whose node ids cannot be renamed.)"""
    from xdist.scheduler import LoadScopeScheduling

    shared = _files_with_shared_fixtures(config.rootpath)

    class SharedSetUpsTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in shared else nodeid

    return SharedSetUpsTogether(config, log)
