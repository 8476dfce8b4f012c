"""What ``simhash-filter report`` draws, read in a bounded number of statements whatever
the database's size: aggregates computed by the database (one scan each), a capped list
of domains and clusters, and a sample of drops. Drops are counted as pages: each dropped URL
once, at its latest drop (:func:`~.reading.latest_drop`), not once a re-crawl.

Every function takes an open store (:class:`~.reading.ReadableStore`) and only reads.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, select

from .reading import ReadableStore, drops_select, latest_drop, reading
from .records import DuplicateRecord
from .schema import duplicates_table, pages_table


@dataclass(frozen=True, slots=True)
class TimeBucket:
    """Pages first kept and pages dropped in ``[start, start + width)``."""

    start: datetime
    kept: int
    dropped: int


@dataclass(frozen=True, slots=True)
class Timeline:
    """The crawl's own time line, in equal buckets from its first to its last page."""

    width: timedelta
    buckets: list[TimeBucket]


def timeline(store: ReadableStore, buckets: int = 48) -> Timeline | None:
    """Pages kept (by first_seen) and dropped (by seen_at) in ``buckets`` equal spans of
    the crawl's time; None for an empty database. Three scans, whatever the size."""
    p, d = pages_table.c, duplicates_table.c
    with reading(store) as conn:
        kept_span = conn.execute(select(func.min(p.first_seen), func.max(p.first_seen))).one()
        pages = latest_drop()
        drop_span = conn.execute(
            select(func.min(d.seen_at), func.max(d.seen_at)).where(pages)
        ).one()
        moments = [t for t in (*kept_span, *drop_span) if t is not None]
        if not moments:
            return None
        first, last = min(moments), max(moments)
        width = max((last - first) / buckets, timedelta(milliseconds=100))
        count = max(1, min(buckets, int((last - first) / width) + 1))
        edges = [first + width * n for n in range(count)]

        def counts(column: Any, *where: Any) -> list[int]:
            columns = [
                func.coalesce(
                    func.sum(
                        case(
                            (
                                and_(column >= start, column < start + width)
                                if n < count - 1
                                else column >= start,
                                1,
                            ),
                            else_=0,
                        )
                    ),
                    0,
                )
                for n, start in enumerate(edges)
            ]
            return [int(value) for value in conn.execute(select(*columns).where(*where)).one()]

        kept, dropped = counts(p.first_seen), counts(d.seen_at, pages)
    return Timeline(
        width, [TimeBucket(start, k, x) for start, k, x in zip(edges, kept, dropped, strict=True)]
    )


@dataclass(frozen=True, slots=True)
class Histogram:
    """Drops counted in ``bins`` equal bins of the similarity in [0, 1], and the drops
    judged without a sketch (no similarity)."""

    counts: list[int]
    without_similarity: int


def similarity_histogram(store: ReadableStore, bins: int = 20) -> Histogram:
    """The similarity of every dropped page (its latest drop), binned in one scan (1.0 in
    the last bin)."""
    sim = duplicates_table.c.similarity
    columns = [
        func.coalesce(
            func.sum(
                case(
                    (
                        and_(sim >= n / bins, sim < (n + 1) / bins)
                        if n < bins - 1
                        else sim >= n / bins,
                        1,
                    ),
                    else_=0,
                )
            ),
            0,
        )
        for n in range(bins)
    ]
    columns.append(func.coalesce(func.sum(case((sim.is_(None), 1), else_=0)), 0))
    with reading(store) as conn:
        values = [int(v) for v in conn.execute(select(*columns).where(latest_drop())).one()]
    return Histogram(values[:-1], values[-1])


def distance_counts(store: ReadableStore) -> dict[int, int]:
    """Dropped pages (each URL's latest drop) per Hamming distance."""
    d = duplicates_table.c
    with reading(store) as conn:
        stmt = select(d.distance, func.count()).where(latest_drop()).group_by(d.distance)
        rows = conn.execute(stmt).all()
    return {int(distance): int(n) for distance, n in rows}


@dataclass(frozen=True, slots=True)
class DropGroup:
    """A kept page and the pages dropped as its copies (a cluster: each URL once)."""

    page_id: int
    url: str
    domain: str
    drops: int
    drop_domains: int


def largest_drop_groups(store: ReadableStore, limit: int = 10) -> list[DropGroup]:
    """The ``limit`` kept pages with the most pages dropped as their copies, most first."""
    d, p = duplicates_table.c, pages_table.c
    n = func.count().label("n")
    top = (
        select(d.duplicate_of, n, func.count(d.domain.distinct()))
        .where(latest_drop())
        .group_by(d.duplicate_of)
        .order_by(n.desc(), d.duplicate_of)
        .limit(limit)
        .subquery()
    )
    stmt = (
        select(p.id, p.url, p.domain, top.c.n, top.c[2])
        .join(top, top.c.duplicate_of == p.id)
        .order_by(top.c.n.desc(), p.id)
    )
    with reading(store) as conn:
        return [DropGroup(*row) for row in conn.execute(stmt)]


@dataclass(frozen=True, slots=True)
class SampledDrop:
    """A drop chosen for the report, and why: ``nearest`` the threshold or ``random``."""

    drop: DuplicateRecord
    page_id: int  # the kept page it duplicates
    reason: str


def sample_drops(
    store: ReadableStore, size: int, *, seed: int = 20
) -> tuple[list[SampledDrop], int]:
    """Up to ``size`` dropped pages (each URL's latest drop): half the ones nearest the
    match rule's line (lowest similarity, or largest distance without sketches), the rest
    drawn at random by id; and the number of dropped pages there are."""
    d = duplicates_table.c
    pages = latest_drop()
    with reading(store) as conn:
        total, low, high = conn.execute(
            select(func.count(), func.min(d.id), func.max(d.id)).where(pages)
        ).one()
        if not total or size <= 0:
            return [], int(total or 0)
        nearest_order: Sequence[Any] = (
            (d.similarity.asc(), d.id) if store.rule is not None else (d.distance.desc(), d.id)
        )
        condition = d.similarity.is_not(None) if store.rule is not None else d.id.is_not(None)
        near = (size + 1) // 2
        near_ids = [
            row[0]
            for row in conn.execute(
                select(d.id).where(condition, pages).order_by(*nearest_order).limit(near)
            )
        ]
        chosen = {i: "nearest the threshold" for i in near_ids}
        wanted = size - len(chosen)
        pool = range(int(low), int(high) + 1)
        draws = random.Random(seed).sample(pool, min(len(pool), 4 * wanted + 16))
        found = {row[0] for row in conn.execute(select(d.id).where(d.id.in_(draws[:500]), pages))}
        for i in draws[:500]:
            if wanted == 0:
                break
            if i in found and i not in chosen:
                chosen[i] = "random"
                wanted -= 1
        stmt = drops_select().add_columns(d.duplicate_of).where(d.id.in_(list(chosen)))
        records = {row[0]: (DuplicateRecord(*row[:-1]), row[-1]) for row in conn.execute(stmt)}
    ordered = [i for i in chosen if i in records]
    return [SampledDrop(records[i][0], records[i][1], chosen[i]) for i in ordered], int(total)
