"""What the distributed and fault tests know about a crawl's index and the test site."""

from __future__ import annotations

import html
import itertools
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from sqlalchemy import Connection, create_engine, select

from crawler.distributed import RedisKeys
from crawler.testsite import Page, generated_site
from simhash_filter import hamming_distance
from simhash_filter.core.signature import MatchRule
from simhash_filter.store.schema import SUPERSEDED, duplicates_table, meta_table, pages_table

from . import DISTINCT, HARBOUR_CLUSTER, ZH_CLUSTER


def path_of(url: str) -> str:
    """``/path?query`` of an absolute URL (the test site's page names)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def site_clusters(clusters: int, *, seed: int = 0) -> dict[str, int]:
    """Page path → near-duplicate cluster number, for ``build_site(clusters=..., seed=...)``:
    the fixed site's clusters and distinct pages, then the generated ones."""
    groups: list[Iterable[str]] = [HARBOUR_CLUSTER, ZH_CLUSTER, *([p] for p in sorted(DISTINCT))]
    if clusters:
        groups += generated_site(clusters, seed=seed)[1]
    return {path: n for n, group in enumerate(groups) for path in group}


@dataclass(frozen=True)
class Dropped:
    fingerprint: int
    duplicate_of: str  # path of the kept page
    distance: int


@dataclass(frozen=True)
class IndexContents:
    kept: dict[str, int]  # path → fingerprint
    dropped: dict[str, Dropped]
    dropped_rows: int  # rows in duplicates (a URL dropped twice counts twice)
    max_distance: int  # k, as stored in the database
    rule: MatchRule | None = None  # candidate + verify, as stored (None: within k is a copy)
    sketches: dict[str, bytes | None] = field(default_factory=dict)  # path → sketch
    exact: dict[str, int] = field(default_factory=dict)
    """Pages of too little text stored under their exact-content key (text length 0):
    only a byte-identical page matches one, so they are no cluster's kept page."""
    superseded: set[str] = field(default_factory=set)
    """Pages kept first and replaced by the copy the keep policy prefers (their ``dropped``
    entry names it): their items passed, they are no longer kept."""


def _meta(conn: Connection, key: str) -> str | None:
    return conn.execute(select(meta_table.c.value).where(meta_table.c.key == key)).scalar()


def read_index(db_url: str) -> IndexContents:
    """Every kept page and every logged drop of a simhash-filter database."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            pages = conn.execute(
                select(
                    pages_table.c.id,
                    pages_table.c.url,
                    pages_table.c.fingerprint,
                    pages_table.c.sketch,
                    pages_table.c.text_length,
                )
            ).all()
            k = _meta(conn, "max_distance")
            rule = _meta(conn, "rule")
            drops = conn.execute(
                select(
                    duplicates_table.c.url,
                    duplicates_table.c.fingerprint,
                    duplicates_table.c.duplicate_of,
                    duplicates_table.c.distance,
                    duplicates_table.c.kind,
                )
            ).all()
    finally:
        engine.dispose()
    url_of = {page.id: page.url for page in pages}
    kept = {path_of(page.url): int(page.fingerprint) for page in pages if page.text_length}
    exact = {path_of(page.url): int(page.fingerprint) for page in pages if not page.text_length}
    assert len(kept) + len(exact) == len(pages), "two pages rows for one path"
    dropped = {}
    superseded = {path_of(row.url) for row in drops if row.kind == SUPERSEDED}
    for url, fp, ref, distance, _kind in drops:
        assert ref in url_of, f"{url} is logged as a duplicate of page id {ref}, which is not kept"
        dropped[path_of(url)] = Dropped(int(fp), path_of(url_of[ref]), int(distance))
    return IndexContents(
        kept,
        dropped,
        len(drops),
        int(k or 0),
        MatchRule.parse(rule) if rule else None,
        {path_of(page.url): page.sketch for page in pages},
        exact,
        superseded,
    )


def is_copy(index: IndexContents, a: str, b: str) -> bool:
    """Whether the stored match rule calls kept pages ``a`` and ``b`` near-duplicates."""
    distance = hamming_distance(index.kept[a], index.kept[b])
    rule = index.rule
    if rule is None:
        return distance <= index.max_distance
    sketch_a, sketch_b = index.sketches.get(a), index.sketches.get(b)
    if sketch_a is None or sketch_b is None:
        return distance <= rule.fallback_distance
    if distance > rule.candidate_distance:
        return False
    verdict = rule.verify(sketch_a, sketch_b)
    return verdict.confirmed and not verdict.boilerplate


def assert_consistent(index: IndexContents) -> None:
    """No two kept pages that the stored match rule calls copies; every drop points at a
    kept page within the index's radius, at the distance it logged; no page both kept and
    dropped."""
    radius = index.rule.max_distance if index.rule else index.max_distance
    for a, b in itertools.combinations(sorted(index.kept), 2):
        distance = hamming_distance(index.kept[a], index.kept[b])
        assert not is_copy(index, a, b), f"both kept, copies {distance} bits apart: {a} {b}"
    stored = {**index.kept, **index.exact}
    for path, drop in index.dropped.items():
        assert path not in stored, f"{path} is both kept and dropped"
        kept_fp = stored[drop.duplicate_of]
        assert hamming_distance(drop.fingerprint, kept_fp) == drop.distance <= radius, path


def representatives(index: IndexContents, clusters: dict[str, int]) -> dict[int, str]:
    """Cluster number → its kept page; fails if a cluster has two."""
    kept: dict[int, str] = {}
    for path in index.kept:
        cluster = clusters[path]
        assert cluster not in kept, f"cluster {cluster} kept twice: {kept[cluster]} and {path}"
        kept[cluster] = path
    return kept


def unique_keys() -> RedisKeys:
    return RedisKeys(f"sftest-{uuid.uuid4().hex[:12]}")


def delete_keys(redis_url: str, keys: RedisKeys) -> None:
    import redis

    redis.Redis.from_url(redis_url).delete(*keys.all())


def queued(redis_url: str, keys: RedisKeys) -> int:
    """Requests waiting in a crawl's shared Redis queue (scrapy-redis's priority queue, a
    sorted set)."""
    import redis

    return int(redis.Redis.from_url(redis_url).zcard(keys.requests))


def redis_keys_fixture(redis_url: str) -> Iterator[RedisKeys]:
    keys = unique_keys()
    try:
        yield keys
    finally:
        delete_keys(redis_url, keys)


_HREF = re.compile(r"""<a\s[^>]*?href=["']([^"'#]*)""", re.IGNORECASE)


def link_parents(pages: Mapping[str, Page]) -> dict[str, set[str]]:
    """Page path → the paths of the pages linking to it (``<a href>`` only, as Scrapy's
    LinkExtractor; fragments dropped; same-site links)."""
    parents: dict[str, set[str]] = defaultdict(set)
    for path, page in pages.items():
        if not page.content_type.startswith("text/html") or not page.body:
            continue
        text = page.body.decode("utf-8", "replace")
        for href in _HREF.findall(text):
            target = path_of(urljoin("http://site" + path, html.unescape(href)))
            if href and target != path:
                parents[target].add(path)
    return parents


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll ``condition`` (every 20 ms) until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
