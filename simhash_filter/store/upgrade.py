"""A database of an older schema upgraded in place when it opens: what was added since
:data:`~.schema.ADDITIVE_SINCE` is new nullable columns (and new tables, made where they are
missing), so nothing is re-indexed and every page stays.

:func:`upgrade` adds each column of :data:`ADDED_COLUMNS` that a table lacks (``ALTER TABLE
… ADD COLUMN``, on SQLite and PostgreSQL alike) and sets the ``meta`` row's schema version,
under the write lock that guards making the schema, so two processes opening one old
database at once add each column once.
"""

from __future__ import annotations

from sqlalchemy import Engine, Table, inspect, select, text, update
from sqlalchemy.engine import Connection

from .engine import WRITE_OPTION
from .locks import SCHEMA_LOCK
from .passage_index import COMPLETE, STATE_KEY, build_index, has_index, has_text_table
from .schema import (
    ADDITIVE_SINCE,
    SCHEMA_VERSION,
    SQLITE_SAME_AS,
    duplicates_table,
    meta_table,
    pages_table,
)
from .templates import (
    HOST_TABLES,
    PAGE_TABLES,
    ensure_template_index,
    ensure_template_tables,
    has_template_index,
)

__all__ = [
    "ADDED_COLUMNS",
    "is_current",
    "missing_columns",
    "upgrade",
    "upgrade_6_to_7",
    "upgrade_7_to_8",
]

ADDED_COLUMNS: tuple[tuple[Table, str], ...] = (
    (pages_table, "dropped_at"),
    (pages_table, "canonical_url"),  # the keep policy's hints (store/declared_canonicals.py)
    (duplicates_table, "canonical_url"),
    (duplicates_table, "kind"),  # NULL: dropped; "superseded" (store/supersede.py)
)
"""The nullable columns added since :data:`~.schema.ADDITIVE_SINCE`, by table."""


def _missing(conn: Connection) -> list[tuple[Table, str]]:
    inspector = inspect(conn)
    present = {
        table.name: {column["name"] for column in inspector.get_columns(table.name)}
        for table in {table for table, _ in ADDED_COLUMNS}
    }
    return [(table, name) for table, name in ADDED_COLUMNS if name not in present[table.name]]


def missing_columns(conn: Connection) -> list[tuple[str, str]]:
    """The (table, column) names of :data:`ADDED_COLUMNS` the database lacks."""
    return [(table.name, name) for table, name in _missing(conn)]


def _stored_version(conn: Connection) -> int | None:
    m = meta_table.c
    value = conn.execute(select(m.value).where(m.key == "schema_version")).scalar()
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def _upgradable(version: int | None, dialect: str) -> bool:
    """A version whose tables are the current ones but for :data:`ADDED_COLUMNS`."""
    if version is None:
        return False
    return ADDITIVE_SINCE <= version < SCHEMA_VERSION or (
        dialect == "sqlite" and version == SQLITE_SAME_AS
    )


def upgrade_6_to_7(engine: Engine) -> None:
    """Schema 6 to 7: the template tables (store/templates.py), made where missing; new
    tables only, so nothing else of a 6 changes."""
    ensure_template_tables(engine, HOST_TABLES)


def upgrade_7_to_8(engine: Engine) -> None:
    """Schema 7 to 8: the pages' template shares (``template_pages``, store/templates.py),
    made where missing; a new table only, so nothing else of a 7 changes."""
    ensure_template_tables(engine, PAGE_TABLES)


def is_current(conn: Connection) -> bool:
    """Whether there is nothing to upgrade, read without reflecting the tables: the schema
    version is this code's (a database made at it has every column; an older one gains
    them in the transaction that raises its version, and ``reindex`` converts only after
    the open added them) and the passage index is complete (or there are no stored texts
    to index) and the template table has its index. The ``meta`` rows and a few catalogue
    look-ups."""
    m = meta_table.c
    keys = ("schema_version", STATE_KEY)
    meta = {str(k): str(v) for k, v in conn.execute(select(m.key, m.value).where(m.key.in_(keys)))}
    if meta.get("schema_version") != str(SCHEMA_VERSION) or not has_template_index(conn):
        return False
    if meta.get(STATE_KEY) == COMPLETE:
        return has_index(conn)
    return not has_text_table(conn)


def upgrade(engine: Engine) -> None:
    """Add the missing :data:`ADDED_COLUMNS` (an older database: ``reindex`` converts
    those older than :data:`~.schema.ADDITIVE_SINCE`, and finds them added) and set an
    additive version's schema version to the current one. Nothing but one read when all
    is there (:func:`is_current`): a read-only command's open reflects no table."""
    with engine.connect() as conn, conn.begin():
        if is_current(conn):
            return
    dialect = engine.dialect.name
    build_index(engine)  # schema 6: the stored texts' passage index (passage_index.py)
    with engine.connect() as conn, conn.begin():
        version = _stored_version(conn)
    if version is not None and version < SCHEMA_VERSION:
        upgrade_6_to_7(engine)
        upgrade_7_to_8(engine)
    ensure_template_index(engine)  # additive, no version: a schema 8 made before it
    with engine.connect() as conn:
        with conn.begin():
            if not _missing(conn) and not _upgradable(_stored_version(conn), dialect):
                return
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
            for table, name in _missing(conn):  # (again: another process may have added it)
                column_type = table.c[name].type.compile(dialect=engine.dialect)
                conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {name} {column_type}"))
            if _upgradable(_stored_version(conn), dialect):
                conn.execute(
                    update(meta_table)
                    .where(meta_table.c.key == "schema_version")
                    .values(value=str(SCHEMA_VERSION))
                )
