"""Read-only reports for the command line: domains, sizes, drops, clusters, exports.

Every function takes an open store (:class:`~.reading.ReadableStore`) and only reads,
through schema.py's tables and the store's engine; database errors become a StoreError
that names the (password-free) database URL.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import CompoundSelect, Select, func, select, text, union_all

from simhash_filter.core.simhash import hamming_distance
from simhash_filter.index.schemes import PERMUTED, IndexScheme, TableKey
from simhash_filter.urls.key import canonical_url

from . import key_columns as key_columns
from .batch import Judge
from .encoding import from_sql_int
from .reading import ReadableStore, drops_select, not_kept, page_record_columns, reading
from .records import DuplicateRecord, PageRecord
from .schema import TEXT_TABLES, duplicates_table, keys_table, meta_table, pages_table
from .statements import Probe, chunked, connection_execute

_IN_CHUNK = 500  # ids per IN (...) list: well under SQLite's bound-parameter limit
_PROBE_CHUNK = 200  # pages whose probe keys one statement looks up (probed_pairs)


@dataclass(frozen=True, slots=True)
class DomainCount:
    """Pages kept and dropped for one host: ``duplicates`` distinct URLs dropped and not
    kept now, ``drop_events`` every drop (each re-crawl of a dropped URL is one more)."""

    domain: str
    pages: int
    duplicates: int
    drop_events: int = 0


def domain_counts(store: ReadableStore) -> list[DomainCount]:
    """Every domain with its kept and dropped page counts, most dropped first (then most
    kept, then name)."""
    p, d = pages_table.c, duplicates_table.c
    kept_select = select(p.domain, func.count()).where(p.dropped_at.is_(None))
    dropped_select = select(d.domain, func.count(d.url.distinct())).where(not_kept(d.url))
    events_select = select(d.domain, func.count())
    with reading(store) as conn:  # (not dict(result): a Result has .keys())
        kept = {domain: n for domain, n in conn.execute(kept_select.group_by(p.domain))}
        dropped = {domain: n for domain, n in conn.execute(dropped_select.group_by(d.domain))}
        events = {domain: n for domain, n in conn.execute(events_select.group_by(d.domain))}
    counts = [
        DomainCount(domain, kept.get(domain, 0), dropped.get(domain, 0), events.get(domain, 0))
        for domain in kept.keys() | dropped.keys() | events.keys()
    ]
    counts.sort(key=lambda c: (-c.duplicates, -c.pages, c.domain))
    return counts


def database_size(store: ReadableStore) -> int | None:
    """Bytes the database takes: the whole SQLite file, or on PostgreSQL its tables (and
    the stored texts) with their indexes and TOAST. None for other back-ends."""
    with reading(store) as conn:
        if store.dialect == "sqlite":
            pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
            page_size = conn.exec_driver_sql("PRAGMA page_size").scalar_one()
            return int(pages) * int(page_size)
        if store.dialect == "postgresql":
            tables = (meta_table, pages_table, keys_table, duplicates_table, *TEXT_TABLES)
            total = 0
            for table in tables:
                size = conn.execute(  # (NULL for a text table not made yet)
                    text("SELECT pg_total_relation_size(to_regclass(:name))"),
                    {"name": table.name},
                ).scalar_one()
                total += int(size or 0)
            return total
    return None


def drops_of_url(
    store: ReadableStore, url: str, *, limit: int | None = None
) -> list[DuplicateRecord]:
    """Every time ``url`` (canonicalized) was dropped, newest first."""
    stmt = drops_select().where(duplicates_table.c.url == canonical_url(url))
    if limit is not None:
        stmt = stmt.limit(limit)
    with reading(store) as conn:
        return [DuplicateRecord(*row) for row in conn.execute(stmt)]


def drops_of_page(store: ReadableStore, page_id: int) -> list[DuplicateRecord]:
    """The drops logged against one kept page, newest first."""
    return drops_of_pages(store, [page_id]).get(page_id, [])


def drops_of_pages(
    store: ReadableStore, page_ids: Iterable[int]
) -> dict[int, list[DuplicateRecord]]:
    """The drops logged against each of these kept pages, newest first."""
    ids = sorted(set(page_ids))
    found: dict[int, list[DuplicateRecord]] = {}
    d = duplicates_table.c
    with reading(store) as conn:
        for chunk in chunked(ids, _IN_CHUNK):
            stmt = drops_select().add_columns(d.duplicate_of).where(d.duplicate_of.in_(chunk))
            for *row, page_id in conn.execute(stmt):
                found.setdefault(page_id, []).append(DuplicateRecord(*row))
    return found


def duplicate_counts(store: ReadableStore) -> dict[int, int]:
    """Kept page id → how many distinct URLs were dropped as its near-duplicates."""
    d = duplicates_table.c
    stmt = select(d.duplicate_of, func.count(d.url.distinct())).group_by(d.duplicate_of)
    with reading(store) as conn:
        return {page_id: n for page_id, n in conn.execute(stmt)}


def key_pairs(store: ReadableStore) -> Iterator[tuple[int, int, int, int]]:
    """``(page_a, fingerprint_a, page_b, fingerprint_b)`` for kept pages sharing a table key
    key (``page_a < page_b``), streamed; a pair sharing keys in several tables comes once
    per table. Every pair within max_distance is among them only when each page's probe
    keys are among its own index keys (:func:`_shared_key_is_complete`)."""
    stmt: Select[Any] | CompoundSelect[Any]
    if store.engine.dialect.name == "postgresql":  # the keys in the page rows
        keyed = key_columns.pages_with_keys(store.scheme.n_tables)
        pa, pb = keyed.alias("a"), keyed.alias("b")
        stmt = union_all(
            *(
                select(pa.c.id, pa.c.fingerprint, pb.c.id, pb.c.fingerprint).join(
                    pb, (pa.c[name] == pb.c[name]) & (pa.c.id < pb.c.id)
                )
                for name in key_columns.column_names(store.scheme.n_tables)
            )
        )
    else:
        a, b = keys_table.alias("a"), keys_table.alias("b")
        stmt = select(a.c.page_id, a.c.fingerprint, b.c.page_id, b.c.fingerprint).join(
            b,
            (a.c.table_no == b.c.table_no) & (a.c.key == b.c.key) & (a.c.page_id < b.c.page_id),
        )
    with reading(store) as conn:
        for row in conn.execution_options(yield_per=10_000).execute(stmt):
            yield row[0], row[1], row[2], row[3]


def probed_pairs(store: ReadableStore) -> Iterator[tuple[int, int, int, int]]:
    """``(page_a, fingerprint_a, page_b, fingerprint_b)`` (``page_a < page_b``) for every
    kept page and each page its probe finds: the probe ``check_and_add`` runs, over
    :data:`_PROBE_CHUNK` pages per statement, so every pair within the scheme's
    max_distance is among them whatever the index kind (a pair may come more than once)."""
    scheme = store.scheme
    probe = Probe(store.engine.dialect, scheme.n_tables)
    p = pages_table.c
    last = 0
    with reading(store) as conn:
        execute = connection_execute(conn)
        while True:
            chunk = conn.execute(
                select(p.id, p.fingerprint)
                .where(p.id > last, p.dropped_at.is_(None))
                .order_by(p.id)
                .limit(_PROBE_CHUNK)
            ).all()
            if not chunk:
                return
            last = chunk[-1][0]
            askers: dict[TableKey, list[tuple[int, int]]] = defaultdict(list)
            for page_id, fingerprint in chunk:
                for key in scheme.probe_keys(fingerprint):
                    askers[key].append((page_id, fingerprint))
            for t, key, hit_id, hit_stored in probe.rows(execute, askers):  # raw driver rows
                hit_fingerprint = from_sql_int(hit_stored)
                for page_id, fingerprint in askers[(t, from_sql_int(key))]:
                    if page_id < hit_id:
                        yield page_id, fingerprint, hit_id, hit_fingerprint


def _shared_key_is_complete(scheme: IndexScheme) -> bool:
    """Whether pages within max_distance always share an index key: the permuted tables
    (a query probes its own key in each table), and multi-index hashing probed at radius
    0 at most (no more probe keys than tables: each is the block's own value)."""
    return scheme.sketch_keyed or scheme.kind == PERMUTED or scheme.n_probes <= scheme.n_tables


def near_pairs(store: ReadableStore, k: int) -> Iterator[tuple[int, int, int]]:
    """``(page_a, page_b, distance)`` once for every two kept pages within ``k`` bits
    (``page_a < page_b``, ``k`` at most the scheme's max_distance): the table keys'
    self-join where that is complete, else a probe per page (:func:`probed_pairs`)."""
    if not 0 <= k <= store.scheme.max_distance:
        raise ValueError(
            f"k must be in 0..{store.scheme.max_distance} (the index's max_distance), got {k!r}"
        )
    found = key_pairs if _shared_key_is_complete(store.scheme) else probed_pairs
    seen: set[tuple[int, int]] = set()
    for a, fingerprint_a, b, fingerprint_b in found(store):
        distance = hamming_distance(fingerprint_a, fingerprint_b)
        if distance <= k and (a, b) not in seen:
            seen.add((a, b))
            yield a, b, distance


class _UnionFind:
    """Disjoint sets of page ids; a set is named by its smallest id."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, item: int) -> int:
        root = self.parent.setdefault(item, item)
        while root != self.parent[root]:
            root = self.parent[root]
        while item != root:  # path compression
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


@dataclass(frozen=True, slots=True)
class Cluster:
    """A group of near-duplicates: kept pages linked within k of each other (directly
    or through other members), and how many distinct URLs were dropped against them."""

    page_ids: tuple[int, ...]  # the kept pages, in id (admission) order
    dropped: int

    @property
    def size(self) -> int:
        return len(self.page_ids) + self.dropped


def clusters(store: ReadableStore, k: int, *, min_size: int = 2) -> list[Cluster]:
    """Every cluster of ``min_size`` pages or more, largest first (then oldest).

    A kept page with drops against it is a cluster; two kept pages (possible after k
    was raised, or pages admitted by another spec or rule) are joined when the store
    would call one a near-duplicate of the other: within ``k`` bits, and under the
    store's match rule also judged a copy by it (:class:`~.batch.Judge`: sketches
    confirmed within the candidate distance, the fallback distance when either page has
    no sketch). ``k`` may not exceed the scheme's max_distance: the index finds nothing
    farther.
    """
    dropped = duplicate_counts(store)
    groups = _UnionFind()
    for page_id in dropped:
        groups.find(page_id)
    pairs = list(near_pairs(store, k))
    judge = Judge(k, store.rule)
    sketches = {} if store.rule is None else page_sketches(store, {i for p in pairs for i in p[:2]})
    for a, b, distance in pairs:
        judgement = judge(distance, sketches.get(a), sketches.get(b))
        if judgement is not None and judgement.copy:
            groups.union(a, b)
    members: dict[int, list[int]] = {}
    for page_id in groups.parent:
        members.setdefault(groups.find(page_id), []).append(page_id)
    found = [
        Cluster(tuple(sorted(ids)), sum(dropped.get(i, 0) for i in ids)) for ids in members.values()
    ]
    found = [cluster for cluster in found if cluster.size >= min_size]
    found.sort(key=lambda cluster: (-cluster.size, cluster.page_ids[0]))
    return found


def pages_by_id(store: ReadableStore, page_ids: Iterable[int]) -> dict[int, PageRecord]:
    """The kept pages with these ids."""
    ids = sorted(set(page_ids))
    found: dict[int, PageRecord] = {}
    with reading(store) as conn:
        for chunk in chunked(ids, _IN_CHUNK):
            stmt = select(*page_record_columns()).where(pages_table.c.id.in_(chunk))
            for row in conn.execute(stmt):
                found[row[0]] = PageRecord(*row)
    return found


def page_sketches(store: ReadableStore, page_ids: Iterable[int]) -> dict[int, bytes]:
    """The stored sketches (second signatures) of these kept pages; a page stored from a
    fingerprint alone has none and is left out."""
    ids = sorted(set(page_ids))
    found: dict[int, bytes] = {}
    p = pages_table.c
    with reading(store) as conn:
        for chunk in chunked(ids, _IN_CHUNK):
            stmt = select(p.id, p.sketch).where(p.id.in_(chunk), p.sketch.is_not(None))
            for page_id, sketch in conn.execute(stmt):
                found[page_id] = bytes(sketch)
    return found


def iter_pages(store: ReadableStore) -> Iterator[PageRecord]:
    """Every kept page (in the index) in admission order, streamed."""
    p = pages_table.c
    stmt = select(*page_record_columns()).where(p.dropped_at.is_(None)).order_by(p.id)
    with reading(store) as conn:
        for row in conn.execution_options(yield_per=10_000).execute(stmt):
            yield PageRecord(*row)
