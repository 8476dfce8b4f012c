"""The one home of a database's index and rule (``index/defaults.py``), and the schemes in
words (issue 28 item 4, issue 31 items 1 and 10)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.core.signature import MatchRule
from simhash_filter.index.defaults import (
    IndexChoice,
    IndexSettings,
    changed_settings,
    index_settings,
    reindex_choice,
)
from simhash_filter.index.schemes import (
    MINHASH_LSH,
    MULTI_INDEX,
    PERMUTED,
    MinHashLshScheme,
    make_scheme,
)
from simhash_filter.store import FingerprintStore, StoreOptions


def test_the_defaults_of_a_new_database() -> None:
    crawl = index_settings()
    assert crawl == IndexSettings(
        make_scheme(MINHASH_LSH, max_distance=64), MatchRule.for_distance(64)
    )
    assert (crawl.scheme.n_blocks, crawl.scheme.rows) == (18, 8)  # type: ignore[union-attr]
    multi = index_settings(IndexChoice(index=MULTI_INDEX))
    assert (multi.scheme.kind, multi.scheme.n_blocks, multi.rule) == (MULTI_INDEX, 4, MatchRule())
    assert index_settings(IndexChoice(min_similarity=0.8)).rule == MatchRule.for_distance(64, 0.8)
    bare = index_settings(sketches=False)  # a library caller judging by the distance alone
    assert (bare.scheme.kind, bare.scheme.max_distance, bare.rule) == (PERMUTED, 4, None)
    given_rule = index_settings(rule=MatchRule())
    assert (given_rule.scheme.kind, given_rule.max_distance) == (MINHASH_LSH, 9)
    with pytest.raises(ValueError, match="below the rule's reach"):
        index_settings(IndexChoice(max_distance=4), rule=MatchRule())


def test_reindex_keeps_what_is_not_named() -> None:
    crawl = index_settings()
    assert changed_settings(crawl, IndexChoice()) == crawl
    stricter = changed_settings(crawl, IndexChoice(min_similarity=0.9))
    assert (stricter.scheme, stricter.rule) == (crawl.scheme, MatchRule.for_distance(64, 0.9))
    multi = changed_settings(crawl, IndexChoice(index=MULTI_INDEX))
    assert (multi.scheme.kind, multi.max_distance, multi.rule) == (MULTI_INDEX, 9, MatchRule())
    back = changed_settings(multi, IndexChoice(index=MINHASH_LSH))
    assert back == crawl
    bare = index_settings(sketches=False)
    assert changed_settings(bare, IndexChoice(index=MULTI_INDEX)).max_distance == 4  # no rule
    given_one = changed_settings(bare, IndexChoice(min_similarity=0.7))
    assert given_one.rule == MatchRule.for_distance(4)


kinds = st.sampled_from([None, MINHASH_LSH, PERMUTED, MULTI_INDEX])
choices = st.builds(
    IndexChoice,
    index=kinds,
    max_distance=st.one_of(st.none(), st.integers(0, 12)),
    blocks=st.one_of(st.none(), st.integers(1, 24)),
    min_similarity=st.one_of(st.none(), st.sampled_from([0.5, 0.7, 0.9])),
)


def _made(choice: IndexChoice, sketches: bool) -> IndexSettings | None:
    try:
        return index_settings(choice, sketches=sketches)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None)
@given(current=choices, wanted=choices, sketches=st.booleans())
def test_a_suggested_reindex_gets_there(
    current: IndexChoice, wanted: IndexChoice, sketches: bool
) -> None:
    """Whenever ``reindex_choice`` suggests options, ``reindex`` with them makes the settings
    asked for (the scheme, and a rule of the same candidates)."""
    start, goal = _made(current, sketches), _made(wanted, True)
    if start is None or goal is None:
        return
    choice = reindex_choice(start, goal)
    if choice is None:
        return
    assert choice.max_distance is None or choice.max_distance <= 63  # what --max-distance takes
    assert choice.blocks is None or 1 <= choice.blocks <= 64
    reached = changed_settings(start, choice)
    assert reached.scheme == goal.scheme
    assert reached.rule is not None
    assert goal.rule is not None
    assert reached.rule.same_candidates(goal.rule)


def test_a_suggested_reindex_is_found_for_the_crawls_settings() -> None:
    crawl = index_settings()
    for wanted in (
        IndexChoice(index=MULTI_INDEX),
        IndexChoice(index=PERMUTED, max_distance=3),
        IndexChoice(max_distance=9),
        IndexChoice(blocks=16),
    ):
        assert reindex_choice(crawl, index_settings(wanted)) is not None, wanted
    assert reindex_choice(crawl, crawl) == IndexChoice(blocks=18)  # nothing to change


def test_a_rule_of_the_same_candidates() -> None:
    rule = MatchRule()
    assert rule.same_candidates(MatchRule(min_similarity=0.9, max_text_share=0.2))
    assert not rule.same_candidates(MatchRule(candidate_distance=7))
    assert not rule.same_candidates(MatchRule(fallback_distance=2))


def test_schemes_in_words() -> None:
    assert make_scheme(MINHASH_LSH, max_distance=64).in_words() == (
        "MinHash LSH index: 18 bands of 8 rows, pages without a sketch: permuted simhash tables k=3"
    )
    assert make_scheme(MINHASH_LSH, max_distance=9).in_words() == (
        "MinHash LSH index: 18 bands of 8 rows, candidates within 9 bits, pages without a "
        "sketch: permuted simhash tables k=3"
    )
    assert make_scheme(PERMUTED, max_distance=3).in_words() == (
        "permuted simhash tables: within 3 bits, 4 blocks, 4 tables of 16-bit keys"
    )
    assert make_scheme(MULTI_INDEX, max_distance=7, blocks=4).in_words() == (
        "multi-index simhash tables: within 7 bits, 4 blocks probed within 1/1/1/1 bits, "
        "68 keys a lookup"
    )


def test_the_log_names_a_new_index_in_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    with caplog.at_level(logging.INFO, logger="simhash_filter"):
        FingerprintStore.open(
            url, StoreOptions(spec="spec", rule=MatchRule.for_distance(64))
        ).close()
    created = [
        r.getMessage() for r in caplog.records if "created fingerprint index" in r.getMessage()
    ]
    assert len(created) == 1
    assert created[0].endswith(
        "(MinHash LSH index: 18 bands of 8 rows, pages without a sketch: permuted simhash "
        "tables k=3)"
    )
    assert "f=64" not in created[0]


def test_the_bands_probability_of_finding_a_pair() -> None:
    scheme = make_scheme(MINHASH_LSH)
    assert isinstance(scheme, MinHashLshScheme)
    assert scheme.candidate_probability(0.7) == pytest.approx(0.657, abs=1e-3)
    assert scheme.candidate_probability(0.5) == pytest.approx(0.068, abs=1e-3)
    assert scheme.candidate_probability(1.0) == 1.0
