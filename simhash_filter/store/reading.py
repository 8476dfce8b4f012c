"""What every reader of the database shares: a read transaction that turns database
errors into a :class:`StoreError` naming the database, and the selects whose columns make
the store's records (one definition each).

Readers take a :class:`ReadableStore` (what they need of a ``FingerprintStore``), so the
read-only modules (reports, audit, texts) never import the store class.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import ColumnElement, Connection, Engine, Select, and_, exists, func, select
from sqlalchemy.exc import SQLAlchemyError

from .engine import error_reason
from .records import StoreError
from .schema import duplicates_table, pages_table

if TYPE_CHECKING:
    from simhash_filter.core.signature import MatchRule
    from simhash_filter.index.schemes import IndexScheme


class ReadableStore(Protocol):
    """What a read-only report needs of an open store (``FingerprintStore`` is one)."""

    @property
    def engine(self) -> Engine: ...

    @property
    def display_url(self) -> str: ...

    @property
    def dialect(self) -> str: ...

    @property
    def scheme(self) -> IndexScheme: ...

    @property
    def rule(self) -> MatchRule | None: ...


@contextmanager
def reading(store: ReadableStore) -> Iterator[Connection]:
    """A connection in a read transaction on ``store``'s database."""
    try:
        with store.engine.connect() as conn, conn.begin():
            yield conn
    except SQLAlchemyError as exc:
        raise StoreError(f"database error on {store.display_url}: {error_reason(exc)}") from exc


def page_record_columns() -> tuple[Any, ...]:
    """The columns of a :class:`~.records.PageRecord`, in order."""
    p = pages_table.c
    return (
        p.id,
        p.url,
        p.fingerprint,
        p.text_length,
        p.first_seen,
        p.last_seen,
        p.dropped_at,
        p.canonical_url,
    )


def not_kept(url: Any) -> Any:
    """A condition: no page in the index has this URL (``url``: a URL column)."""
    p = pages_table.alias("kept")
    return ~exists().where(p.c.url == url, p.c.dropped_at.is_(None))


def latest_drop() -> ColumnElement[bool]:
    """A condition on ``duplicates``: the row is its URL's latest drop and the URL is not kept
    now. Counts and samples of *pages* take these rows (each re-crawl of a dropped URL logs
    one more row: an event, not a page)."""
    other = duplicates_table.alias("latest")
    newest = select(func.max(other.c.id)).group_by(other.c.url)
    d = duplicates_table.c
    return and_(d.id.in_(newest), not_kept(d.url))


def dropped_pages_select() -> Select[Any]:
    """How many distinct URLs were dropped and are not kept now (a URL dropped on every
    re-crawl counts once; one admitted again since counts as kept)."""
    d = duplicates_table.c
    return select(func.count(d.url.distinct())).where(not_kept(d.url))


def drops_select() -> Select[Any]:
    """Drops joined with the page each duplicates, newest first: the columns of a
    :class:`~.records.DuplicateRecord`, in order (add ``where``/``limit`` to it)."""
    d, p = duplicates_table.c, pages_table.c
    return (
        select(
            d.id,
            d.url,
            d.fingerprint,
            p.url,
            p.fingerprint,
            d.distance,
            d.seen_at,
            d.similarity,
            d.canonical_url,
            d.kind,
        )
        .join(pages_table, p.id == d.duplicate_of)
        .order_by(d.seen_at.desc(), d.id.desc())
    )
