"""The command line's reports, without argparse: clusters of near-duplicates."""

from __future__ import annotations

import pytest
from support.cli_corpus import ARTICLE_A, ARTICLE_B, FINGERPRINTER

from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, StoreOptions, VerdictKind
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
    with FingerprintStore.open(url, StoreOptions(spec=SPEC, max_distance=1)) as store:
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


# --- multi-index hashing and the match rule ---------------------------------------------


def _bits(*positions: int) -> int:
    return sum(1 << p for p in positions)


# Multi-index hashing with 3 blocks (bits 63..42, 41..21, 20..0): M1, M2 and M3 differ
# from M in two bits of every block (6 apart), M4 in one bit of every block (3 apart), so
# none of them shares a band key with M; M1-M4 and M2-M4 are 9 apart.
M = A
M1 = M ^ _bits(0, 1, 21, 22, 42, 43)
M2 = M ^ _bits(10, 11, 31, 32, 52, 53)
M3 = M ^ _bits(14, 15, 35, 36, 60, 61)
M4 = M ^ _bits(5, 30, 50)
SKETCH_A = FINGERPRINTER.sketch(ARTICLE_A)
SKETCH_B = FINGERPRINTER.sketch(ARTICLE_B)
RULE = MatchRule(candidate_distance=9, min_similarity=0.7, fallback_distance=3)


def _multi_index_store(url: str, rule: MatchRule | None) -> FingerprintStore:
    """M, M1 (both ARTICLE_A's sketch), M2 (ARTICLE_B's), M3 and M4 (no sketch) all kept
    under k=2, then reindexed to k=9 (3 blocks probed within radius 3) under ``rule``."""
    with FingerprintStore.open(
        url, StoreOptions(spec=SPEC, index="multi-index", blocks=3, max_distance=2)
    ) as s:
        for name, fingerprint, sketch in (
            ("m", M, SKETCH_A),
            ("m1", M1, SKETCH_A),
            ("m2", M2, SKETCH_B),
            ("m3", M3, None),
            ("m4", M4, None),
        ):
            verdict = s.check_and_add(f"https://example.com/{name}", fingerprint, sketch=sketch)
            assert verdict.kind is VerdictKind.NEW
        s.reindex(index="multi-index", blocks=3, max_distance=9, rule=rule)
    store = FingerprintStore.open_existing(url)
    assert (store.scheme.kind, store.scheme.max_distance, store.rule) == ("multi-index", 9, rule)
    own = set(enumerate(store.scheme.index_keys(M)))
    for other in (M1, M2, M3, M4):
        assert not own & set(enumerate(store.scheme.index_keys(other)))
    return store


def test_multi_index_clusters_join_pages_that_share_no_band_key(db_url: str) -> None:
    with _multi_index_store(db_url, None) as store:
        # No rule: within k is a duplicate. M links M1, M2, M3 (6) and M4 (3).
        assert clusters(store, 9) == [Cluster(_ids(store, "m", "m1", "m2", "m3", "m4"), 0)]
        assert clusters(store, 5) == [Cluster(_ids(store, "m", "m4"), 0)]
        assert clusters(store, 2) == []


def test_multi_index_clusters_follow_the_rule(db_url: str) -> None:
    with _multi_index_store(db_url, RULE) as store:
        # M1: same sketch, within the candidate distance: a copy. M2: the sketches
        # disagree. M3 (no sketch) is beyond the fallback distance, M4 (no sketch) within
        # it. M1-M4 (9 apart) would need the fallback distance too.
        assert clusters(store, 9) == [Cluster(_ids(store, "m", "m1", "m4"), 0)]
        assert clusters(store, 5) == [Cluster(_ids(store, "m", "m4"), 0)]


@pytest.mark.parametrize("index", ["permuted", "multi-index"])
def test_clusters_do_not_join_kept_pages_the_rule_rejected(sqlite_url: str, index: str) -> None:
    rule = MatchRule(candidate_distance=3, min_similarity=0.7, fallback_distance=1)
    with FingerprintStore.open(
        sqlite_url, StoreOptions(spec=SPEC, rule=rule, index=index)
    ) as store:
        assert store.scheme.kind == index
        assert store.check_and_add("https://example.com/a", A, sketch=SKETCH_A).kind is (
            VerdictKind.NEW
        )
        # B is 2 bits from A (sharing band keys with it) but its text differs: kept.
        verdict = store.check_and_add("https://example.com/b", B, sketch=SKETCH_B)
        assert verdict.kind is VerdictKind.NEW
        # D is 1 bit from A with the same text: dropped as its copy.
        verdict = store.check_and_add("https://example.com/d", D, sketch=SKETCH_A)
        assert verdict.kind is VerdictKind.DUPLICATE
        assert clusters(store, 3) == [Cluster(_ids(store, "a"), dropped=1)]
