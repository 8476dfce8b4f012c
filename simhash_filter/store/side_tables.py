"""Tables beside the check-and-add ones (the URL rules', the hosts' templates'): made on a
writer's open where missing, read and written in transactions of their own."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, Table, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from .engine import WRITE_OPTION, error_reason
from .locks import SCHEMA_LOCK
from .records import StoreError
from .schema import metadata

__all__ = ["ensure_schema", "ensure_tables", "side_connection"]


def ensure_schema(
    engine: Engine, present: Callable[[Connection], bool], make: Callable[[Connection], None]
) -> None:
    """Where ``present`` says part of the schema is missing, ``make`` it, in a write
    transaction under the lock that guards making the schema (SQLite's write lock; on
    PostgreSQL an advisory lock; upgrade.py records the schema version). One read when it
    is there."""
    with engine.connect() as conn:
        with conn.begin():
            if present(conn):
                return
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
            make(conn)


def ensure_tables(engine: Engine, tables: Sequence[Table]) -> None:
    """Make ``tables`` where they are missing (a writer's open: :func:`ensure_schema`)."""

    def present(conn: Connection) -> bool:
        inspector = inspect(conn)
        return all(inspector.has_table(t.name) for t in tables)

    ensure_schema(
        engine,
        present,
        lambda conn: metadata.create_all(conn, tables=list(tables), checkfirst=True),
    )


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
