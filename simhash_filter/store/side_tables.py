"""Tables beside the check-and-add ones (the URL rules', the hosts' templates'): made on a
writer's open where missing, read and written in transactions of their own."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, Table, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from .engine import WRITE_OPTION, error_reason
from .locks import SCHEMA_LOCK
from .records import StoreError
from .schema import metadata

__all__ = ["ensure_tables", "side_connection"]


def ensure_tables(engine: Engine, tables: Sequence[Table]) -> None:
    """Make ``tables`` where they are missing (a writer's open: SQLite's write lock, on
    PostgreSQL the advisory lock that guards making the schema; upgrade.py records the
    schema version)."""
    with engine.connect() as conn:
        with conn.begin():
            inspector = inspect(conn)
            if all(inspector.has_table(t.name) for t in tables):
                return
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
            metadata.create_all(conn, tables=list(tables), checkfirst=True)


@contextmanager
def side_connection(engine: Engine, where: str, *, write: bool) -> Iterator[Connection]:
    """A connection in a transaction (a write one when ``write``); a database error is a
    :class:`StoreError` naming ``where``."""
    try:
        with engine.connect() as conn:
            if write:
                conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn
    except SQLAlchemyError as exc:
        raise StoreError(f"database error on {where}: {error_reason(exc)}") from exc
