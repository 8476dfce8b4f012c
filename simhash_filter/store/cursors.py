"""DB-API cursors for the store's hot reads, and the rule that turns a database error into
a :class:`StoreError` naming the (password-free) database URL.

The probes of ``near()`` and ``count_candidates`` run pre-compiled SQL on a DB-API cursor,
skipping SQLAlchemy's per-call statement processing (statements.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from .engine import error_reason
from .records import StoreError

KEPT_READERS = 4
"""SQLite connections :class:`RawCursors` keeps checked out between calls."""


@contextmanager
def database_errors(display_url: str) -> Iterator[None]:
    """A SQLAlchemy error inside becomes a :class:`StoreError` naming ``display_url``."""
    try:
        yield
    except StoreError:
        raise
    except SQLAlchemyError as exc:
        raise StoreError(f"database error on {display_url}: {error_reason(exc)}") from exc


class RawCursors:
    """DB-API cursors on pooled connections of one engine (autocommit reads on SQLite).

    On SQLite up to :data:`KEPT_READERS` connections stay checked out between calls (a
    pool checkout and reset cost about as much as a probe's SQL); they hold no
    transaction, so they block no writer and no checkpoint.
    """

    def __init__(self, engine: Engine, *, display_url: str) -> None:
        self._engine = engine
        self._display_url = display_url
        self._keep = engine.dialect.name == "sqlite"
        self._readers: deque[Any] = deque()
        self._closed = False

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A cursor; a database error leaves as a :class:`StoreError`."""
        with database_errors(self._display_url):
            try:
                raw = self._readers.pop()
            except IndexError:
                raw = self._engine.raw_connection()
            healthy = False
            try:
                cursor = raw.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
                healthy = True
            except self._engine.dialect.loaded_dbapi.Error as exc:
                raise StoreError(
                    f"database error on {self._display_url}: {error_reason(exc)}"
                ) from exc
            finally:
                if not healthy:
                    raw.invalidate()
                elif self._keep and not self._closed and len(self._readers) < KEPT_READERS:
                    self._readers.append(raw)
                else:
                    raw.close()

    def close(self) -> None:
        """Release the kept connections (the store is closing)."""
        self._closed = True
        while self._readers:
            self._readers.pop().close()
