"""``near()`` of a bare fingerprint under the minhash-lsh index: with no sketch there is no
band to probe, so every stored fingerprint is read, in chunks, and measured with NumPy."""

from __future__ import annotations

from sqlalchemy import Connection, select

from .records import Match
from .schema import pages_table
from .statements import IN_CHUNK, chunked

__all__ = ["SCAN_CHUNK", "scan_near"]

SCAN_CHUNK = 100_000
"""Fingerprints per read of the scan."""


def scan_near(conn: Connection, fingerprint: int, limit: int) -> list[Match]:
    """Every stored page within ``limit`` of ``fingerprint``, by reading every stored
    fingerprint in chunks (what a bare fingerprint costs under the minhash-lsh index)."""
    import numpy as np  # here, not at import: the crawl process never scans (core/signature.py)

    p = pages_table.c
    hits: dict[int, tuple[int, int]] = {}  # page id -> (fingerprint, distance)
    query = np.uint64(fingerprint)
    last = None
    while True:
        stmt = (
            select(p.id, p.fingerprint)
            .where(p.dropped_at.is_(None))  # (a page out of the index is not near)
            .order_by(p.id)
            .limit(SCAN_CHUNK)
        )
        if last is not None:
            stmt = stmt.where(p.id > last)
        chunk = conn.execute(stmt).all()
        if not chunk:
            break
        last = chunk[-1][0]
        fingerprints = np.fromiter((fp for _, fp in chunk), np.uint64, len(chunk))
        distances = np.bitwise_count(fingerprints ^ query)
        for i in np.flatnonzero(distances <= limit):
            page_id, stored = chunk[int(i)]
            hits[page_id] = (stored, int(distances[i]))
    matches = [
        Match(url, *hits[page_id], page_id)
        for ids in chunked(hits, IN_CHUNK)
        for page_id, url in conn.execute(select(p.id, p.url).where(p.id.in_(ids)))
    ]
    matches.sort(key=lambda m: (m.distance, m.url))
    return matches
