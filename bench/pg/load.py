"""The bulk loader: the stored pages written by ``COPY`` as ``add_many`` would write them.

Before loading, the loader is checked against ``add_many`` on a sample (two fresh
databases, the same rows), and the pages against each other (no two match under the rule,
so ``add_many`` would admit every one, as the loader does).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bench._common import create_pg_database, drop_pg_database
from bench.pg.database import psycopg_connect, table_contents
from bench.pg.setup import Page, Setup, stored_pages

if TYPE_CHECKING:
    from simhash_filter.index.schemes import IndexScheme

__all__ = ["bulk_load", "check_loader", "check_no_matches", "load_pages", "near_pairs"]


def near_pairs(fingerprints: Sequence[int], scheme: IndexScheme) -> list[tuple[int, int, int]]:
    """Every pair (i, j, distance), i < j, within ``scheme.max_distance`` bits, found
    with the scheme's own probe (every index key within each table's probe masks) in
    NumPy."""
    import numpy as np

    n = len(fingerprints)
    if n < 2:
        return []
    masks = scheme.probe_keys(0)  # (table, key ^ mask) is a probe key of key's page
    probe = fingerprints[n // 2]
    own = scheme.index_keys(probe)
    assert scheme.probe_keys(probe) == [(t, own[t] ^ m) for t, m in masks], "not an xor probe"
    fps = np.array(fingerprints, dtype=np.uint64)
    keys = np.array([scheme.index_keys(fp) for fp in fingerprints], dtype=np.uint64)
    found: set[tuple[int, int, int]] = set()
    ids = np.arange(n)
    for t in range(keys.shape[1]):
        order = np.argsort(keys[:, t], kind="stable")
        ordered = keys[order, t]
        for _, mask in (tm for tm in masks if tm[0] == t):
            target = keys[:, t] ^ np.uint64(mask)
            lo = np.searchsorted(ordered, target, side="left")
            hi = np.searchsorted(ordered, target, side="right")
            counts = hi - lo
            total = int(counts.sum())
            if not total:
                continue
            src = np.repeat(ids, counts)
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            dst = order[np.repeat(lo, counts) + offsets]
            keep = src < dst
            src, dst = src[keep], dst[keep]
            distance = np.bitwise_count(fps[src] ^ fps[dst])
            near = distance <= scheme.max_distance
            found.update(
                zip(src[near].tolist(), dst[near].tolist(), distance[near].tolist(), strict=True)
            )
    return sorted(found)


def check_no_matches(pages: Sequence[Page], setup: Setup, scheme: IndexScheme) -> dict[str, int]:
    """Raise unless no stored page matches an earlier one under the rule (then
    ``add_many`` would admit every page, as the bulk loader does)."""
    from simhash_filter.store.batch import Judge

    judge = Judge(scheme.max_distance, setup.rule)
    pairs = near_pairs([page.fingerprint for page in pages], scheme)
    for i, j, distance in pairs:
        if judge(distance, pages[j].sketch, pages[i].sketch) is not None:
            raise SystemExit(
                f"stored page {j} matches page {i} (distance {distance}): add_many would "
                "drop it; choose another --seed"
            )
    return {"pairs_within_radius": len(pairs), "matched": 0}


def bulk_load(url: str, setup: Setup, pages: Sequence[Page]) -> None:
    """Make the database and write ``pages`` as ``add_many`` would (all NEW): one page
    row each (ids in order) and one band row per table, by COPY."""
    from simhash_filter.store import canonical_url, url_domain
    from simhash_filter.store.encoding import to_sql_int

    with setup.open(url) as store:
        scheme = store.scheme
    now = datetime.now(UTC)
    with psycopg_connect(url, autocommit=False) as conn:
        with conn.cursor().copy(
            "COPY pages (url, domain, fingerprint, text_length, sketch, first_seen, last_seen) "
            "FROM STDIN"
        ) as copy:
            for page in pages:
                canonical = canonical_url(page.url)
                copy.write_row(
                    (
                        canonical,
                        url_domain(canonical),
                        to_sql_int(page.fingerprint),
                        page.text_length,
                        page.sketch,
                        now,
                        now,
                    )
                )
        ids = dict(conn.execute("SELECT url, id FROM pages").fetchall())
        with conn.cursor().copy(
            "COPY bands (table_no, key, page_id, fingerprint) FROM STDIN"
        ) as copy:
            for page in pages:
                page_id = ids[canonical_url(page.url)]
                fp = to_sql_int(page.fingerprint)
                for t, key in enumerate(scheme.index_keys(page.fingerprint)):
                    copy.write_row((t, to_sql_int(key), page_id, fp))
        conn.commit()
    with psycopg_connect(url) as conn:
        conn.execute("VACUUM ANALYZE")


def check_loader(setup: Setup, sample: Sequence[Page]) -> dict[str, Any]:
    """Raise unless the bulk loader writes exactly ``add_many``'s rows (timestamps
    aside) for ``sample``, on two fresh databases."""
    from simhash_filter.store import PageRow

    urls = [create_pg_database("sf_bench_load"), create_pg_database("sf_bench_load")]
    try:
        with setup.open(urls[0]) as store:
            verdicts = store.add_many([PageRow(*page) for page in sample], batch_size=100)
        kinds = Counter(v.kind.value for v in verdicts)
        if kinds != {"new": len(sample)}:
            raise SystemExit(f"add_many did not admit every sample page: {dict(kinds)}")
        bulk_load(urls[1], setup, sample)
        a, b = table_contents(urls[0]), table_contents(urls[1])
        for table in a:
            if a[table] != b[table]:
                raise SystemExit(f"the bulk loader's {table} rows differ from add_many's")
        return {"sample": len(sample), "rows": {t: len(r) for t, r in a.items()}}
    finally:
        for url in urls:
            drop_pg_database(url)


def load_pages(url: str, setup: Setup, count: int, seed: int) -> dict[str, Any]:
    """Check the loader on a sample, then load ``count`` pages; what it checked and took."""
    start = time.perf_counter()
    pages = list(stored_pages(setup, count, seed))
    loader = check_loader(setup, pages[:300])
    with setup.open(url) as store:
        scheme = store.scheme
    checked = check_no_matches(pages, setup, scheme)
    bulk_load(url, setup, pages)
    return {
        "seconds": round(time.perf_counter() - start, 1),
        "scheme": scheme.describe(),
        "loader_check": loader,
        **checked,
    }
