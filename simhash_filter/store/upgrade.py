"""Additive schema upgrades: a database of an older, compatible schema gains what is new
when it opens, in place, with no reindex (schema.ADDITIVE_SINCE).

What is new is only ever nullable columns (``ALTER TABLE ... ADD COLUMN``, on SQLite and
PostgreSQL) and tables made when missing, so rows written before read as "not known"
(NULL) and no stored page changes. The upgrade runs once, under the write lock (SQLite) or
the schema's advisory lock (PostgreSQL), and records the new ``schema_version``.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Engine, inspect, select, text, update

from .engine import WRITE_OPTION
from .locks import SCHEMA_LOCK
from .schema import (
    ADDITIVE_SINCE,
    SCHEMA_VERSION,
    SQLITE_SAME_AS,
    duplicates_table,
    meta_table,
    pages_table,
)

__all__ = ["ADDED_COLUMNS", "missing_columns", "upgrade_in_place"]

log = logging.getLogger(__name__)

ADDED_COLUMNS = (
    (pages_table, "canonical_url"),
    (duplicates_table, "canonical_url"),
    (duplicates_table, "kind"),
)
"""The nullable columns schema 5 added to tables of schema 4: (table, column name)."""


def missing_columns(conn: Connection) -> list[tuple[str, str]]:
    """The (table, column) pairs of :data:`ADDED_COLUMNS` the database lacks."""
    inspector = inspect(conn)
    present = {
        table.name: {column["name"] for column in inspector.get_columns(table.name)}
        for table in {table for table, _ in ADDED_COLUMNS}
    }
    return [(t.name, c) for t, c in ADDED_COLUMNS if c not in present[t.name]]


def _stored_version(conn: Connection) -> int | None:
    c = meta_table.c
    value = conn.execute(select(c.value).where(c.key == "schema_version")).scalar_one_or_none()
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _upgradable(version: int | None, dialect: str) -> bool:
    if version is None:
        return False
    return ADDITIVE_SINCE <= version < SCHEMA_VERSION or (
        dialect == "sqlite" and version == SQLITE_SAME_AS
    )


def upgrade_in_place(engine: Engine, where: str) -> bool:
    """Add the missing columns of :data:`ADDED_COLUMNS` and, on a database of an additive
    older version, record the current ``schema_version``; True when anything changed. A
    database of a version ``reindex`` must convert gains the columns and keeps its version.
    ``where``: the database as it may be shown (``display_url``)."""
    dialect = engine.dialect.name
    with engine.connect() as conn:
        with conn.begin():
            missing = missing_columns(conn)
            version = _stored_version(conn)
        if not missing and not _upgradable(version, dialect):
            return False
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
            missing = missing_columns(conn)  # another process may have added them meanwhile
            for table_name, column in missing:
                table = pages_table if table_name == pages_table.name else duplicates_table
                kind = table.c[column].type.compile(dialect=conn.dialect)
                conn.execute(text(f"ALTER TABLE {table_name} ADD COLUMN {column} {kind}"))
            bump = _upgradable(_stored_version(conn), dialect)
            if bump:
                c = meta_table.c
                conn.execute(
                    update(meta_table)
                    .where(c.key == "schema_version")
                    .values(value=str(SCHEMA_VERSION))
                )
    if missing or bump:
        log.info(
            "upgraded %s in place (schema %d): added %s",
            where,
            SCHEMA_VERSION,
            ", ".join(f"{t}.{c}" for t, c in missing) or "no column",
        )
    return bool(missing or bump)
