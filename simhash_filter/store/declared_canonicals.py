"""Canonical hints in the store: written beside a batch's verdicts, and read back as
confirmed canonical pairs (URL rules) and "seen" checks (the keep policy reads them as the
cluster's votes with the kept page, in one statement: supersede.py).

A page's hint is the canonical URL it declared (core/canonical.py), in the store's canonical
form, kept in ``pages.canonical_url`` (the last one seen) or ``duplicates.canonical_url``
(with the drop). Hints are written in the verdicts' own transaction on the "sqlalchemy"
path, and in one of their own right after it on the PostgreSQL paths (as texts are): a hint
is evidence, so a hint lost in a crash costs a later supersede at most, never a page.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, and_, bindparam, exists, func, or_, select, update

from .reading import ReadableStore, reading
from .records import CanonicalPair, Verdict, VerdictKind
from .schema import SUPERSEDED, duplicates_table, pages_table

__all__ = [
    "canonical_pairs",
    "superseded_count",
    "was_seen",
    "write_hints",
    "write_hints_after",
]


_p, _d = pages_table.c, duplicates_table.c
_PAGE_HINT = (  # built once, as the others below: every batch with a hint runs them
    update(pages_table)
    .where(
        _p.url == bindparam("u"),
        or_(_p.canonical_url.is_(None), _p.canonical_url != bindparam("c")),
    )
    .values(canonical_url=bindparam("c"))
)
_DROP_HINT = (
    update(duplicates_table)
    .where(_d.url == bindparam("u"), _d.seen_at == bindparam("now"), _d.canonical_url.is_(None))
    .values(canonical_url=bindparam("c"))
)


def write_hints(
    conn: Connection, verdicts: Sequence[Verdict], hints: Sequence[str | None], now: datetime
) -> None:
    """Store ``hints[i]`` (None: nothing) with what ``verdicts[i]`` did, in the caller's
    transaction: on the page row of an admitted page (when it differs), on the drop logged
    at ``now`` for a duplicate."""
    pages = []
    drops = []
    for verdict, hint in zip(verdicts, hints, strict=True):
        if hint is None:
            continue
        if verdict.kind is VerdictKind.DUPLICATE:
            drops.append({"u": verdict.url, "c": hint})
        else:
            pages.append({"u": verdict.url, "c": hint})
    if pages:
        conn.execute(_PAGE_HINT, pages)
    if drops:
        conn.execute(_DROP_HINT, [{**drop, "now": now} for drop in drops])


def write_hints_after(
    engine: Engine, verdicts: Sequence[Verdict], hints: Sequence[str | None], now: datetime
) -> None:
    """:func:`write_hints` in a transaction of its own, for a write path that committed its
    verdicts already (PostgreSQL's)."""
    with engine.begin() as conn:
        write_hints(conn, verdicts, hints, now)


def was_seen(conn: Connection, url: str) -> bool:
    """True when the canonical ``url`` is a kept page or a logged copy."""
    p, d = pages_table.c, duplicates_table.c
    stmt = select(or_(exists().where(p.url == url), exists().where(d.url == url)))
    return bool(conn.execute(stmt).scalar())


def canonical_pairs(
    conn: Connection, *, domain: str | None = None, since: datetime | None = None
) -> Iterator[CanonicalPair]:
    """Every confirmed canonical, oldest first: a logged copy whose declared canonical is
    the very page it copies (see :meth:`FingerprintStore.canonical_pairs`)."""
    d, p = duplicates_table.c, pages_table.c
    stmt = (
        select(d.url, p.url, d.domain, d.seen_at, d.kind)
        .join(pages_table, and_(p.id == d.duplicate_of, p.url == d.canonical_url))
        .order_by(d.seen_at, d.id)
    )
    if domain is not None:
        stmt = stmt.where(d.domain == domain.lower())
    if since is not None:
        stmt = stmt.where(d.seen_at >= (since if since.tzinfo else since.replace(tzinfo=UTC)))
    for variant, canonical, host, seen_at, kind in conn.execution_options(yield_per=1000).execute(
        stmt
    ):
        yield CanonicalPair(variant, canonical, host, seen_at, kind == SUPERSEDED)


def superseded_count(store: ReadableStore) -> int:
    """How many logged pages are superseded (kept, then replaced by their canonical copy)."""
    d = duplicates_table.c
    with reading(store) as conn:
        stmt = select(func.count()).select_from(duplicates_table).where(d.kind == SUPERSEDED)
        return int(conn.execute(stmt).scalar_one())
