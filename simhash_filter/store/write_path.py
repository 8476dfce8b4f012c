"""How a store decides and records pages: one :class:`WritePath`, chosen when it opens.

===============  ========================================  ==================================
``write_path``   where                                     the decision
===============  ========================================  ==================================
"sqlalchemy"     any back-end (the only one on SQLite):    batch.decide_batch, in Python,
                 sqlalchemy_path.SqlAlchemyPath            over statements.SqlBatchIO
"pg-function"    PostgreSQL with psycopg, one round trip:  decide_function.sql, on the
                 pg_function.PgFunctionPath                server
"pg-pipeline"    PostgreSQL with psycopg, two round        batch.decide_batch, in Python,
                 trips: pg_pipeline.PgPipelinePath         between the round trips
===============  ========================================  ==================================

Every path takes the same advisory locks and writes the same rows; the equivalence tests
(tests/store/test_pg_path.py, tests/store/test_pg_function.py) pin that the Python and the SQL
decisions agree. ``near()`` goes through the path too: the PostgreSQL paths filter by
distance on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from simhash_filter.index.schemes import IndexScheme, TableKey

from .batch import Judge, RowToCheck
from .cursors import RawCursors
from .faults import OutageRetry
from .locks import WriteLocks, WriteTransactions
from .pg import Retry, psycopg_connection, server_supports
from .pg_function import PgFunctionPath, function_installable
from .pg_pipeline import PgPipelinePath
from .records import Match, StoreError, Verdict
from .sqlalchemy_path import SqlAlchemyPath

log = logging.getLogger(__name__)

SQLALCHEMY = "sqlalchemy"
PG_FUNCTION = "pg-function"
PG_PIPELINE = "pg-pipeline"
WRITE_PATHS = (SQLALCHEMY, PG_FUNCTION, PG_PIPELINE)
"""The values of ``StoreOptions(write_path=...)``."""


class WritePath(Protocol):
    """Decides and records rows, and finds the pages near a fingerprint."""

    @property
    def name(self) -> str:
        """One of :data:`WRITE_PATHS`."""
        ...

    def check_and_add(
        self,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
        texts: Sequence[bytes | None],
        hints: Sequence[str | None] = (),
        wait: float | None = None,
    ) -> list[Verdict]:
        """Decide and record ``rows`` in one transaction, committed on return, under the
        advisory ``locks`` (PostgreSQL; None: the database-wide lock exclusive); store
        ``texts`` and ``hints`` (declared canonical URLs; one per row, or none at all) with
        the verdicts (store/declared_canonicals.py). ``wait``: seconds this write may wait for
        a lock (None: the store's bound); past it, ``StoreBusy``."""
        ...

    def near(
        self, probe_keys: Collection[TableKey], fingerprint: int, limit: int, *, scheme: IndexScheme
    ) -> list[Match]:
        """The distinct pages within ``limit`` of ``fingerprint`` among those with a table key
        row under ``probe_keys``, nearest first, then by URL."""
        ...


def validate_write_path(write_path: str | None, url: URL) -> None:
    """ValueError unless ``write_path`` is None or one of :data:`WRITE_PATHS` that can run
    on ``url``'s back-end (checked before anything is opened or created)."""
    if write_path is not None and write_path not in WRITE_PATHS:
        raise ValueError(f"write_path must be one of {', '.join(WRITE_PATHS)}, got {write_path!r}")
    if write_path in (PG_FUNCTION, PG_PIPELINE) and url.get_backend_name() != "postgresql":
        raise ValueError(
            f"write_path={write_path!r} needs PostgreSQL with psycopg, not {url.get_backend_name()}"
        )


def open_write_path(
    write_path: str | None,
    *,
    engine: Engine,
    display_url: str,
    durable: bool | None,
    transactions: WriteTransactions,
    cursors: RawCursors,
    n_tables: int,
    outage: OutageRetry | None = None,
) -> WritePath:
    """The write path named ``write_path`` (None: the best the back-end supports: on
        PostgreSQL with psycopg the server-side function where the server has ``bit_count``
        (14 and later) and the function is installed or the role may create it, else the
        pipeline; elsewhere SQLAlchemy; ``n_tables``: the scheme's, whose function is looked
    for). ValueError naming the value when it cannot run here."""
    validate_write_path(write_path, engine.url)
    dialect = engine.dialect
    psycopg = dialect.name == "postgresql" and dialect.driver == "psycopg"
    if write_path == SQLALCHEMY or (write_path is None and not psycopg):
        return SqlAlchemyPath(engine, transactions=transactions, cursors=cursors)
    if not psycopg:
        raise ValueError(
            f"write_path={write_path!r} needs PostgreSQL with psycopg, not "
            f"{dialect.name}+{dialect.driver} ({display_url})"
        )
    try:
        with psycopg_connection(engine, display_url) as conn:
            bit_count = server_supports(conn)
            version = conn.info.server_version
            function = (
                write_path != PG_PIPELINE and bit_count and function_installable(conn, n_tables)
            )
    except Retry as retry:  # (a lost connection: the store is not open yet, nothing to retry)
        raise StoreError(f"database error on {display_url}: {retry.reason}") from retry.__cause__
    if write_path == PG_FUNCTION and not function:
        why = "before 14" if not bit_count else "the role may not create the function"
        raise ValueError(
            f"write_path={write_path!r} cannot run on {display_url}: PostgreSQL {version}, {why}"
        )
    if function:
        return PgFunctionPath(
            engine, display_url=display_url, durable=durable, bit_count=True, outage=outage
        )
    if write_path is None:
        log.info("PostgreSQL %s on %s: check-and-add in two round trips", version, display_url)
    return PgPipelinePath(
        engine, display_url=display_url, durable=durable, bit_count=bit_count, outage=outage
    )
