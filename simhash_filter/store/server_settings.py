"""The PostgreSQL settings that decide whether a check costs the same on a large index.

A check changes about 20 leaves of the store's indexes at random. Two server settings then
decide whether its cost grows with the database (bench/history/scale.md, 2026-11-25):
``shared_buffers`` (a leaf outside it is read from the OS cache, and a buffer, often dirty,
evicted for it) and the checkpoint distance (``max_wal_size``: the first change to a page
after a checkpoint writes the whole page into the WAL, so when checkpoints come before the
leaves are changed again, almost every change does).
``stats`` shows them beside the indexes' size, with :func:`advice` (docs/distributed.md).
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import text

from .reading import ReadableStore, reading
from .schema import pages_table

SETTINGS = text(
    "SELECT pg_size_bytes(current_setting('shared_buffers')), "
    "pg_size_bytes(current_setting('max_wal_size')), "
    "(SELECT setting::int FROM pg_settings WHERE name = 'checkpoint_timeout'), "
    "current_setting('wal_compression'), "
    "(SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i "
    "WHERE i.indrelid = to_regclass(:pages))"
).bindparams(pages=pages_table.name)
WAL_PER_INDEX = 2
"""``max_wal_size`` below this many times the indexes' bytes draws :func:`advice`: a
checkpoint starts about every ``max_wal_size / 2`` of WAL, too soon for the leaves to be
changed again before it: most of a check's changes then write whole pages into the WAL
(bench/history/scale.md, 2026-11-25)."""


class ServerSettings(NamedTuple):
    """What :func:`advice` weighs; sizes in bytes."""

    shared_buffers: int
    max_wal_size: int
    checkpoint_timeout_s: int
    wal_compression: str
    index_bytes: int
    """The ``pages`` table's indexes, its table keys' among them (key_columns.py): what a
    check reads and changes."""


class Advice(NamedTuple):
    """A setting too small for the index: its name, its value, the value to reach, why."""

    setting: str
    value: int
    wanted: int
    why: str


def server_settings(store: ReadableStore) -> ServerSettings | None:
    """The settings and the indexes' size of a PostgreSQL database; None elsewhere."""
    if store.dialect != "postgresql":
        return None
    with reading(store) as conn:
        row = conn.execute(SETTINGS).one()
    return ServerSettings(int(row[0]), int(row[1]), int(row[2]), str(row[3]), int(row[4]))


def advice(settings: ServerSettings) -> list[Advice]:
    """The settings that make a check's cost grow with the database, given its indexes."""
    found = []
    if settings.shared_buffers < settings.index_bytes:
        found.append(
            Advice(
                "shared_buffers",
                settings.shared_buffers,
                settings.index_bytes,
                "a check reads the index leaves it changes from outside the buffers",
            )
        )
    if settings.max_wal_size < WAL_PER_INDEX * settings.index_bytes:
        found.append(
            Advice(
                "max_wal_size",
                settings.max_wal_size,
                WAL_PER_INDEX * settings.index_bytes,
                "checkpoints come before the leaves are changed again, so most changes write "
                "whole pages into the WAL (raise checkpoint_timeout too; wal_compression "
                "shrinks those pages)",
            )
        )
    return found
