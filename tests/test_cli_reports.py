"""The command line's reports, without argparse: clusters of near-duplicates."""

from __future__ import annotations

from simhash_filter.store import FingerprintStore, VerdictKind
from simhash_filter.store.reports import Cluster, clusters

SPEC = "simhash-test;reports"
A = 0x0123_4567_89AB_CDEF
B = A ^ 0b11  # 2 bits from A
C = B ^ (0b111 << 20)  # 3 bits from B, 5 from A
D = A ^ (1 << 40)  # 1 bit from A
E = ~A & (2**64 - 1)  # far from everything


def _store(url: str) -> FingerprintStore:
    """Five kept pages admitted under k=1 (so A, B and C are all kept), then reindexed to
    k=3, where D is dropped as a copy of A."""
    with FingerprintStore.open(url, spec=SPEC, max_distance=1) as store:
        for name, fingerprint in (("a", A), ("b", B), ("c", C), ("e", E)):
            verdict = store.check_and_add(f"https://example.com/{name}", fingerprint)
            assert verdict.kind is VerdictKind.NEW
        store.reindex(blocks=4, max_distance=3)
    store = FingerprintStore.open_existing(url)
    assert store.check_and_add("https://example.com/d", D).kind is VerdictKind.DUPLICATE
    return store


def _ids(store: FingerprintStore, *names: str) -> tuple[int, ...]:
    pages = [store.lookup(f"https://example.com/{name}") for name in names]
    return tuple(sorted(page.page_id for page in pages if page is not None))


def test_kept_pages_within_k_are_joined_through_each_other(db_url: str) -> None:
    with _store(db_url) as store:
        # A-B (2) and B-C (3) link; A-C is 5 apart but joins through B; D's drop counts.
        assert clusters(store, 3) == [Cluster(_ids(store, "a", "b", "c"), dropped=1)]
        # At k=2, C falls out alone (a cluster of one page is not shown).
        assert clusters(store, 2) == [Cluster(_ids(store, "a", "b"), dropped=1)]
        # At k=0 only A and its dropped copy remain together.
        assert clusters(store, 0) == [Cluster(_ids(store, "a"), dropped=1)]
        assert clusters(store, 0, min_size=3) == []
        assert clusters(store, 3)[0].size == 4


def test_clusters_are_largest_first(sqlite_url: str) -> None:
    with _store(sqlite_url) as store:
        for i in range(3):  # three drops against E: a cluster of 4 pages
            assert store.check_and_add(f"https://copies.example/{i}", E).kind is (
                VerdictKind.DUPLICATE
            )
        found = clusters(store, 2)
        assert [c.page_ids for c in found] == [_ids(store, "e"), _ids(store, "a", "b")]
        assert [c.size for c in found] == [4, 3]
