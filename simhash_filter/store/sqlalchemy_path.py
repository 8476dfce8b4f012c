"""The "sqlalchemy" write path: any back-end SQLAlchemy drives (the only one on SQLite).

A write is one transaction of locks.WriteTransactions (SQLite's ``BEGIN IMMEDIATE``
behind the writer queue; on PostgreSQL the advisory locks): batch.decide_batch decides
in Python on what statements.SqlBatchIO reads, and SqlBatchIO writes the outcome and
texts.py the texts, in the same transaction. ``near()`` runs the compiled probe on a
DB-API cursor (cursors.py) and measures the distances in Python.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from simhash_filter.index.schemes import IndexScheme, TableKey

from .batch import Judge, RowToCheck, decide_batch
from .cursors import RawCursors
from .declared_canonicals import write_hints
from .encoding import from_sql_int, to_sql_int
from .locks import WriteLocks, WriteTransactions
from .records import Match, Verdict
from .statements import SqlBatchIO, cursor_execute, statements_for
from .texts import write_texts

_U64 = (1 << 64) - 1


class SqlAlchemyPath:
    """The "sqlalchemy" write path (see the module doc)."""

    name = "sqlalchemy"

    def __init__(
        self, engine: Engine, *, transactions: WriteTransactions, cursors: RawCursors
    ) -> None:
        self._dialect = engine.dialect
        self._transactions = transactions
        self._cursors = cursors

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
        """:meth:`~.write_path.WritePath.check_and_add`: verdicts, texts and hints, one
        transaction."""
        statements = statements_for(self._dialect, scheme.n_tables)
        with_texts = any(blob is not None for blob in texts)
        with_hints = any(hint is not None for hint in hints)

        def work(conn: Connection) -> list[Verdict]:
            verdicts = decide_batch(
                rows,
                SqlBatchIO(conn, statements),
                judge=judge,
                index_items=scheme.index_items,
                now=now,
            )
            if with_texts:
                write_texts(conn, verdicts, texts, now)
            if with_hints:
                write_hints(conn, verdicts, hints, now)
            return verdicts

        return self._transactions.run(work, locks=locks, wait=wait)

    def near(
        self, probe_keys: Collection[TableKey], fingerprint: int, limit: int, *, scheme: IndexScheme
    ) -> list[Match]:
        """:meth:`~.write_path.WritePath.near`: the probe's key rows read, their
        distances measured here."""
        statements = statements_for(self._dialect, scheme.n_tables)
        hits: dict[int, tuple[int, int]] = {}
        urls: dict[int, str] = {}
        with self._cursors.cursor() as cursor:
            execute = cursor_execute(cursor)
            signed = to_sql_int(fingerprint)
            for _t, _key, page_id, stored in statements.probe.rows(execute, probe_keys):
                distance = ((stored ^ signed) & _U64).bit_count()  # two's complement alike
                if distance <= limit:
                    hits[page_id] = (from_sql_int(stored), distance)
            for page_id in hits:  # usually none or one (a page superseded meanwhile: no URL)
                for (url,) in execute(
                    statements.url_by_id.sql, statements.url_by_id.bind([page_id])
                ):
                    urls[page_id] = url
        matches = [
            Match(urls[page_id], stored, distance, page_id)
            for page_id, (stored, distance) in hits.items()
            if page_id in urls
        ]
        matches.sort(key=lambda m: (m.distance, m.url))
        return matches
