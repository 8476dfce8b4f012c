"""Where the local services answer, and throw-away PostgreSQL databases on that server.

For the tests and the benchmarks: the PostgreSQL admin URL
(``SIMHASH_FILTER_TEST_PG``) and the Redis URL (``SIMHASH_FILTER_TEST_REDIS``), both with a
loopback default.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "PG_ADMIN_URL",
    "REDIS_URL",
    "admin_statement",
    "create_pg_database",
    "drop_pg_database",
    "pg_database",
]

PG_ADMIN_URL = os.environ.get(
    "SIMHASH_FILTER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
"""A PostgreSQL database to connect to for creating and dropping throw-away databases."""

REDIS_URL = os.environ.get("SIMHASH_FILTER_TEST_REDIS", "redis://127.0.0.1:6379/0")


def admin_statement(admin_url: str, statement: str) -> None:
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
    admin_statement(admin_url, f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str, admin_url: str = PG_ADMIN_URL) -> None:
    """Drop the database of ``url``, closing its sessions (``WITH (FORCE)``)."""
    from sqlalchemy.engine import make_url

    admin_statement(admin_url, f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


@contextmanager
def pg_database(prefix: str = "sf_bench", admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """A throw-away PostgreSQL database for the block: created empty, dropped afterwards."""
    url = create_pg_database(prefix, admin_url)
    try:
        yield url
    finally:
        drop_pg_database(url, admin_url)
