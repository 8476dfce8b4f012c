"""Candidate + verify in the store (issue 13.C/D): multi-index hashing beside the permuted
tables, the match rule stored and checked like the scheme, sketches, similarity,
boilerplate, reindex between schemes, and the refusal of a schema-1 database."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import flip

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.index.schemes import (
    MINHASH_LSH,
    MULTI_INDEX,
    PERMUTED,
    MultiIndexScheme,
    PermutedScheme,
    make_scheme,
)
from simhash_filter.store import (
    FingerprintStore,
    PageRow,
    SchemeMismatchError,
    StoreError,
    StoreOptions,
    VerdictKind,
)

SPEC = "simhash-test;f=64;tok=words;w=tf"
RULE = MatchRule(candidate_distance=7, min_similarity=0.7, fallback_distance=3)

STORY = (
    "The harbour bridge reopened on Monday after eighteen months of repairs. Commuters "
    "crossed it again in the early morning, and the city council promised that the tram "
    "line would follow before the end of the year. Engineers replaced the cables, the "
    "deck and most of the railings, and found the old foundations in better shape than "
    "the surveys of the previous decade had suggested. "
)
OTHER = (
    "A small bakery in the old town won the regional bread prize for the third time. "
    "Its owner starts the ovens at three each night, uses flour from a mill up the river "
    "and refuses to open a second shop, saying the queue outside is part of the taste. "
    "Visitors from the coast now plan their weekends around the Saturday rye loaves. "
)


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter()


def sketch_of(fingerprinter: Fingerprinter, text: str, page: str | None = None) -> bytes:
    return fingerprinter.sketch(text, page_text=page)


@pytest.fixture
def store(db_url: str) -> Iterator[FingerprintStore]:
    s = FingerprintStore.open(db_url, StoreOptions(spec=SPEC, rule=RULE, index=MULTI_INDEX))
    yield s
    s.close()


# ---------------------------------------------------------------- schemes


@pytest.mark.parametrize(
    "scheme",
    [
        MultiIndexScheme(max_distance=7, blocks=4),
        MultiIndexScheme(max_distance=8, blocks=3),
        MultiIndexScheme(max_distance=6, blocks=5),
        MultiIndexScheme(max_distance=2, blocks=4),  # blocks probed at radius -1: none
        PermutedScheme(max_distance=4, blocks=6),
        PermutedScheme(max_distance=6, blocks=8),
    ],
    ids=lambda s: s.describe(),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_fingerprint_within_k_shares_a_probe_key(
    scheme: PermutedScheme | MultiIndexScheme, data: st.DataObject
) -> None:
    fingerprint = data.draw(st.integers(0, 2**64 - 1))
    distance = data.draw(st.integers(0, scheme.max_distance))
    bits = data.draw(
        st.lists(st.integers(0, 63), min_size=distance, max_size=distance, unique=True)
    )
    other = flip(fingerprint, bits)
    stored = set(enumerate(scheme.index_keys(other)))
    assert stored & set(scheme.probe_keys(fingerprint))


def test_multi_index_cost_is_the_papers() -> None:
    scheme = MultiIndexScheme(max_distance=7, blocks=4)
    assert (scheme.n_tables, scheme.n_probes, scheme.block_widths) == (4, 68, (16,) * 4)
    assert scheme.radii == (1, 1, 1, 1)
    # k = 6 = 1*4 + 2: blocks 0..2 at radius 1, block 3 at radius 0
    assert MultiIndexScheme(max_distance=6, blocks=4).radii == (1, 1, 1, 0)
    assert MultiIndexScheme(max_distance=6, blocks=4).n_probes == 3 * 17 + 1
    assert "index=multi-index" in scheme.describe()
    with pytest.raises(ValueError, match="probes"):
        MultiIndexScheme(max_distance=30, blocks=2)
    with pytest.raises(ValueError, match="index must be one of"):
        make_scheme("lsh", max_distance=3)
    assert make_scheme(PERMUTED, max_distance=3) == PermutedScheme(max_distance=3)


@pytest.mark.parametrize("index", [PERMUTED, MULTI_INDEX])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 7))
def test_near_finds_every_stored_fingerprint_within_k(
    tmp_path: Path, index: str, seed: int, k: int
) -> None:
    rng = random.Random(seed)
    url = f"sqlite:///{tmp_path / f'{index}-{seed}-{k}.db'}"
    base = [rng.getrandbits(64) for _ in range(4)]
    stored = {}
    with FingerprintStore.open(url, StoreOptions(spec=SPEC, max_distance=7, index=index)) as store:
        rows = []
        for i in range(150):  # clusters around the bases at every distance, and noise
            if i % 3:
                fp = flip(rng.choice(base), rng.sample(range(64), rng.randint(0, 10)))
            else:
                fp = rng.getrandbits(64)
            rows.append(PageRow(f"http://p.example/{i}", fp))
        for verdict in store.add_many(rows, batch_size=40):
            if verdict.kind is VerdictKind.NEW:
                stored[verdict.url] = verdict.fingerprint
        for query in [*base, rng.getrandbits(64)]:
            expected = sorted(
                ((fp ^ query).bit_count(), u) for u, fp in stored.items()
                if (fp ^ query).bit_count() <= k
            )  # fmt: skip
            assert [(m.distance, m.url) for m in store.near(query, k)] == expected


# ---------------------------------------------------------------- candidate + verify


def test_a_candidate_is_dropped_only_when_its_sketch_agrees(
    store: FingerprintStore, fingerprinter: Fingerprinter
) -> None:
    base = 0x0123_4567_89AB_CDEF
    story, other = sketch_of(fingerprinter, STORY), sketch_of(fingerprinter, OTHER)
    assert store.check_and_add("http://a.example/1", base, sketch=story).kind is VerdictKind.NEW

    # 6 bits away (beyond the old k=4), same text: a copy
    edited = sketch_of(fingerprinter, STORY + " Reported by our desk.")
    copy = store.check_and_add(
        "http://b.example/1", flip(base, [1, 9, 20, 33, 47, 60]), sketch=edited
    )
    assert copy.kind is VerdictKind.DUPLICATE
    assert copy.duplicate_of is not None
    assert copy.duplicate_of.url == "http://a.example/1"
    assert copy.duplicate_of.distance == 6
    assert copy.duplicate_of.similarity is not None
    assert copy.duplicate_of.similarity >= RULE.min_similarity

    # 2 bits away, another text: the simhash collides, the sketch tells them apart
    unrelated = store.check_and_add("http://c.example/1", flip(base, [5, 50]), sketch=other)
    assert unrelated.kind is VerdictKind.NEW
    assert unrelated.duplicate_of is None

    drops = list(store.duplicates())
    assert [(d.url, d.distance) for d in drops] == [("http://b.example/1", 6)]
    assert drops[0].similarity == copy.duplicate_of.similarity


def test_without_a_sketch_the_fallback_distance_decides(
    store: FingerprintStore, fingerprinter: Fingerprinter
) -> None:
    base = 0x0F0F_0F0F_1234_5678
    store.check_and_add("http://a.example/old", base)  # an old row: no sketch
    near = store.check_and_add(
        "http://b.example/1", flip(base, [3, 30, 61]), sketch=sketch_of(fingerprinter, OTHER)
    )
    assert near.kind is VerdictKind.DUPLICATE  # 3 <= fallback_distance, whatever the text
    assert near.duplicate_of is not None
    assert near.duplicate_of.similarity is None
    farther = store.check_and_add(
        "http://b.example/2", flip(base, [3, 30, 61, 62]), sketch=sketch_of(fingerprinter, STORY)
    )
    assert farther.kind is VerdictKind.NEW  # 4 > fallback_distance: never confirmed


def test_candidates_are_verified_nearest_first(
    store: FingerprintStore, fingerprinter: Fingerprinter
) -> None:
    base = 0x7777_0000_FFFF_1234
    story, other = sketch_of(fingerprinter, STORY), sketch_of(fingerprinter, OTHER)
    store.check_and_add("http://near.example/", flip(base, [0]), sketch=other)
    store.check_and_add("http://far.example/", flip(base, [0, 10, 20, 30, 40, 50]), sketch=story)
    verdict = store.check_and_add("http://q.example/", base, sketch=story)
    assert verdict.kind is VerdictKind.DUPLICATE
    assert verdict.duplicate_of is not None
    assert verdict.duplicate_of.url == "http://far.example/"  # the nearest did not confirm


def test_boilerplate_matches_are_admitted_and_named(
    store: FingerprintStore, fingerprinter: Fingerprinter
) -> None:
    blurb = "Subscribe to our newsletter for the weekly digest of the best stories we publish."
    page_a = blurb + " " + STORY * 3
    page_b = blurb + " " + OTHER * 3
    base = 0x1357_9BDF_2468_ACE0
    first = store.check_and_add(
        "http://site.example/a", base, sketch=sketch_of(fingerprinter, blurb, page_a)
    )
    assert first.kind is VerdictKind.NEW
    second = store.check_and_add(
        "http://site.example/b", flip(base, [7]), sketch=sketch_of(fingerprinter, blurb, page_b)
    )
    assert second.kind is VerdictKind.NEW
    assert second.duplicate_of is None
    assert second.boilerplate_of is not None
    assert second.boilerplate_of.url == "http://site.example/a"
    assert second.boilerplate_of.similarity == pytest.approx(1.0)
    # the same article again with the same surroundings is a copy
    again = store.check_and_add(
        "http://mirror.example/a", flip(base, [8]), sketch=sketch_of(fingerprinter, blurb, page_a)
    )
    assert again.kind is VerdictKind.DUPLICATE
    assert again.boilerplate_of is None


def test_a_url_seen_again_with_its_text_is_unchanged_and_gets_its_sketch(
    store: FingerprintStore, fingerprinter: Fingerprinter
) -> None:
    base = 0x2222_3333_4444_5555
    story = sketch_of(fingerprinter, STORY)
    store.check_and_add("http://a.example/x", base)
    again = store.check_and_add("http://a.example/x", flip(base, [1, 2]), sketch=story)
    assert again.kind is VerdictKind.UNCHANGED
    # the stored version now has the sketch: a 6-bit copy is confirmed by it
    copy = store.check_and_add(
        "http://b.example/x", flip(base, [10, 11, 12, 13, 14, 15]), sketch=story
    )
    assert copy.kind is VerdictKind.DUPLICATE
    rewritten = store.check_and_add(
        "http://a.example/x",
        flip(base, [9, 19, 29, 39, 49]),
        sketch=sketch_of(fingerprinter, OTHER),
    )
    assert rewritten.kind is VerdictKind.CHANGED


def test_add_many_gives_the_verdicts_of_single_calls_with_sketches(
    tmp_path: Path, fingerprinter: Fingerprinter
) -> None:
    rng = random.Random(13)
    texts = [STORY, OTHER, STORY + " More.", OTHER[::-1], STORY[::-1]]
    sketches = [sketch_of(fingerprinter, t) for t in texts] + [None]
    base = rng.getrandbits(64)
    rows = [
        PageRow(
            f"http://r{i % 23}.example/{i % 31}",
            flip(base, rng.sample(range(64), rng.randint(0, 9))),
            i,
            rng.choice(sketches),
        )
        for i in range(120)
    ]
    opened = [
        FingerprintStore.open(f"sqlite:///{tmp_path / n}.db", StoreOptions(spec=SPEC, rule=RULE))
        for n in ("single", "bulk")
    ]
    single, bulk = opened
    try:
        expected = [
            single.check_and_add(r.url, r.fingerprint, text_length=r.text_length, sketch=r.sketch)
            for r in rows
        ]
        got = bulk.add_many(rows, batch_size=50)
        assert got == expected  # page ids too: both insert the new pages in row order
        assert {v.kind for v in got} >= {VerdictKind.NEW, VerdictKind.DUPLICATE}
    finally:
        for s in opened:
            s.close()


def test_a_bad_sketch_is_a_value_error(store: FingerprintStore) -> None:
    with pytest.raises(ValueError, match="not a sketch"):
        store.check_and_add("http://a.example/", 1, sketch=b"\x09junk")
    assert store.lookup("http://a.example/") is None


# ---------------------------------------------------------------- meta, reindex, versions


def test_the_rule_and_index_are_stored_and_checked(sqlite_url: str) -> None:
    with FingerprintStore.open(
        sqlite_url, StoreOptions(spec=SPEC, rule=RULE, index=MULTI_INDEX)
    ) as store:
        assert store.scheme.kind == MULTI_INDEX
        assert store.scheme.max_distance == RULE.max_distance
        stats = store.stats()
        assert stats.extra["rule"] == RULE.describe()
        assert stats.extra["index"] == MULTI_INDEX
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, max_distance=7)) as store:
        assert store.rule == RULE  # not named: the database's own
        assert store.scheme.kind == MULTI_INDEX
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert (store.rule, store.scheme.kind) == (RULE, MULTI_INDEX)
    # another threshold for the same candidates: the stored sketches answer it (issue 31.1)
    other = MatchRule(candidate_distance=7, min_similarity=0.5, fallback_distance=3)
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=other)) as store:
        assert (store.rule, store.database_rule) == (other, RULE)
    with FingerprintStore.open_existing(sqlite_url) as store:
        assert store.rule == RULE  # the database keeps its own
    wider = MatchRule(candidate_distance=7, min_similarity=0.7, fallback_distance=2)
    with pytest.raises(SchemeMismatchError, match="rule: stored"):
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=wider))
    with pytest.raises(SchemeMismatchError, match="index: stored multi-index"):
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE, index=PERMUTED))
    with pytest.raises(ValueError, match="below the rule's reach"):
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC, rule=RULE, max_distance=4))


def test_reindex_converts_between_schemes_and_rules(db_url: str) -> None:
    rng = random.Random(5)
    base = [rng.getrandbits(64) for _ in range(5)]
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=4)) as store:
        store.add_many(
            (f"http://a.example/{i}", flip(rng.choice(base), rng.sample(range(64), 8)), 0)
            for i in range(300)
        )
        before = {q: store.near(q) for q in base}
        store.reindex(index=MULTI_INDEX, rule=RULE)
        assert (store.scheme.kind, store.scheme.max_distance, store.rule) == (MULTI_INDEX, 7, RULE)
        wider = {q: store.near(q, 4) for q in base}
        assert wider == before  # the same pages within 4 through the new index
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC, rule=RULE)) as reopened:
        assert reopened.scheme.kind == MULTI_INDEX
    with pytest.raises(SchemeMismatchError):
        FingerprintStore.open(db_url, StoreOptions(spec=SPEC, max_distance=4))


def test_a_schema_1_database_is_refused_with_how_to_move(sqlite_url: str) -> None:
    FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC)).close()
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=r"schema version 1.*re-crawl"):
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC))


def test_new_databases_take_the_default_index_of_their_k(tmp_path: Path) -> None:
    with FingerprintStore.open(f"sqlite:///{tmp_path / 'k4.db'}", StoreOptions(spec=SPEC)) as store:
        assert (store.scheme.kind, store.scheme.n_tables) == (PERMUTED, 15)
    with FingerprintStore.open(
        f"sqlite:///{tmp_path / 'k9.db'}", StoreOptions(spec=SPEC, rule=MatchRule())
    ) as s:
        # a rule that confirms with sketches: bands over the sketch, whatever its k1
        assert (s.scheme.kind, s.scheme.n_blocks, s.scheme.max_distance) == (MINHASH_LSH, 18, 9)
    mi = f"sqlite:///{tmp_path / 'mi.db'}"
    with FingerprintStore.open(
        mi, StoreOptions(spec=SPEC, rule=MatchRule(), index=MULTI_INDEX)
    ) as s:
        # 4 blocks: 3 would probe 2,258 keys a query (bands.MAX_DEFAULT_PROBES)
        assert (s.scheme.kind, s.scheme.n_blocks, s.scheme.max_distance) == (MULTI_INDEX, 4, 9)


def test_threads_never_admit_two_multi_index_near_duplicates(db_url: str) -> None:
    """Under multi-index hashing two near-duplicates need not share an index key: here every
    thread's copy of a center differs from every other's in every block (2 bits a block,
    6 in all), so only the probe-key locks make the racing writers serialize."""
    n_threads, n_centers = 6, 30
    rng = random.Random(17)
    centers = [rng.getrandbits(64) for _ in range(n_centers)]
    with FingerprintStore.open(
        db_url, StoreOptions(spec=SPEC, max_distance=7, index=MULTI_INDEX)
    ) as store:
        assert store.scheme.block_widths == (22, 21, 21)
        shifts = (42, 21, 0)  # the blocks' lowest bits

        def copy(center: int, t: int) -> int:
            return flip(center, [shift + t for shift in shifts])

        for center in centers:
            keys = [set(enumerate(store.scheme.index_keys(copy(center, t)))) for t in range(3)]
            assert not keys[0] & keys[1]
            assert (copy(center, 0) ^ copy(center, 1)).bit_count() == 6

        def add(t: int) -> list[VerdictKind]:
            return [
                store.check_and_add(f"http://t{t}.example/{c}", copy(center, t)).kind
                for c, center in enumerate(centers)
            ]

        with ThreadPoolExecutor(n_threads) as pool:
            kinds = [kind for result in pool.map(add, range(n_threads)) for kind in result]
        assert kinds.count(VerdictKind.NEW) == n_centers
        assert kinds.count(VerdictKind.DUPLICATE) == n_centers * (n_threads - 1)
        for center in centers:
            assert len(store.near(center)) == 1
