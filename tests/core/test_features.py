"""Features: word shingles, weightings, top-N selection, IDF tables."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.core.features import WEIGHTINGS, IdfTable, shingles, weigh

DETERMINISTIC = settings(derandomize=True, deadline=None, max_examples=150)
TOKENS = ["lamp", "tower", "lamp", "sea", "lamp", "tower", "keeper"]


def test_shingles_of_size_one_are_the_tokens() -> None:
    assert shingles(TOKENS, 1) == TOKENS
    assert shingles([], 1) == []


def test_shingles_are_space_joined_word_ngrams() -> None:
    assert shingles(["a", "b", "c", "d"], 2) == ["a b", "b c", "c d"]
    assert shingles(["a", "b", "c", "d"], 3) == ["a b c", "b c d"]
    assert shingles(["a", "b", "c", "d"], 4) == ["a b c d"]


def test_short_text_is_one_shingle_and_no_tokens_no_shingle() -> None:
    assert shingles(["a", "b"], 3) == ["a b"]
    assert shingles([], 3) == []


@pytest.mark.parametrize("size", [0, -2])
def test_shingle_size_below_one_is_rejected_naming_it(size: int) -> None:
    with pytest.raises(ValueError, match=f"got {size}"):
        shingles(TOKENS, size)


@DETERMINISTIC
@given(st.lists(st.sampled_from("abcdef"), max_size=30), st.integers(min_value=1, max_value=6))
def test_shingle_count(tokens: list[str], size: int) -> None:
    result = shingles(tokens, size)
    if not tokens:
        assert result == []
    elif len(tokens) < size:
        assert result == [" ".join(tokens)]
    else:
        assert len(result) == len(tokens) - size + 1
        assert all(len(s.split(" ")) == size for s in result)


def test_tf_weights_are_counts() -> None:
    assert weigh(TOKENS) == {"lamp": 3.0, "tower": 2.0, "sea": 1.0, "keeper": 1.0}
    assert weigh(TOKENS, weighting="tf") == weigh(TOKENS)


def test_sublinear_weights_are_one_plus_log_tf() -> None:
    weights = weigh(TOKENS, weighting="sublinear")
    assert weights["lamp"] == pytest.approx(1 + math.log(3))
    assert weights["tower"] == pytest.approx(1 + math.log(2))
    assert weights["sea"] == 1.0


def test_uniform_weights_are_one() -> None:
    assert weigh(TOKENS, weighting="uniform") == dict.fromkeys(
        ["lamp", "tower", "sea", "keeper"], 1.0
    )


def test_tfidf_multiplies_sublinear_tf_by_idf() -> None:
    idf = IdfTable({"lamp": 2.0, "sea": 5.0}, default=3.0)
    weights = weigh(TOKENS, weighting="tfidf", idf=idf)
    assert weights["lamp"] == pytest.approx((1 + math.log(3)) * 2.0)
    assert weights["sea"] == pytest.approx(5.0)
    assert weights["keeper"] == pytest.approx(3.0)  # unseen: the table's default


def test_tfidf_of_a_shingle_uses_the_mean_idf_of_its_words() -> None:
    idf = IdfTable({"lamp": 2.0, "sea": 6.0}, default=1.0)
    assert weigh(["lamp sea"], weighting="tfidf", idf=idf) == {"lamp sea": pytest.approx(4.0)}


def test_tfidf_needs_an_idf_table() -> None:
    with pytest.raises(ValueError, match="IdfTable"):
        weigh(TOKENS, weighting="tfidf")


def test_unknown_weighting_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="'bm25'"):
        weigh(TOKENS, weighting="bm25")
    assert set(WEIGHTINGS) == {"tf", "sublinear", "tfidf", "uniform"}


@pytest.mark.parametrize("top_n", [0, -1])
def test_top_n_below_one_is_rejected_naming_it(top_n: int) -> None:
    with pytest.raises(ValueError, match=f"got {top_n}"):
        weigh(TOKENS, top_n=top_n)


def test_top_n_keeps_the_heaviest_and_breaks_ties_by_feature() -> None:
    assert weigh(TOKENS, top_n=1) == {"lamp": 3.0}
    assert weigh(TOKENS, top_n=2) == {"lamp": 3.0, "tower": 2.0}
    # "keeper" and "sea" tie at 1: the alphabetically first one stays.
    assert weigh(TOKENS, top_n=3) == {"lamp": 3.0, "tower": 2.0, "keeper": 1.0}
    assert weigh(TOKENS, top_n=10) == weigh(TOKENS)


@DETERMINISTIC
@given(
    st.lists(st.sampled_from(["ash", "birch", "cedar", "elm", "fir", "oak", "yew"]), max_size=40),
    st.integers(min_value=1, max_value=8),
    st.sampled_from(["tf", "sublinear", "uniform"]),
    st.randoms(use_true_random=False),
)
def test_top_n_does_not_depend_on_token_order(
    tokens: list[str], top_n: int, weighting: str, rng: random.Random
) -> None:
    shuffled = list(tokens)
    rng.shuffle(shuffled)
    chosen = weigh(tokens, weighting=weighting, top_n=top_n)
    assert chosen == weigh(shuffled, weighting=weighting, top_n=top_n)
    assert len(chosen) == min(top_n, len(set(tokens)))
    everything = weigh(tokens, weighting=weighting)
    dropped = set(everything) - set(chosen)
    for kept in chosen:
        for other in dropped:  # every kept feature outranks every dropped one
            assert (-everything[kept], kept) < (-everything[other], other)


def test_idf_table_lookup_falls_back_to_the_default() -> None:
    table = IdfTable({"lamp": 2.5}, default=7.0)
    assert table["lamp"] == 2.5
    assert table["unseen"] == 7.0


def test_idf_table_is_immutable() -> None:
    source = {"lamp": 2.5}
    table = IdfTable(source, default=1.0)
    source["lamp"] = 99.0  # the table took a copy
    assert table["lamp"] == 2.5
    with pytest.raises(TypeError):
        table.weights["lamp"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("default", [-1.0, math.nan, math.inf])
def test_idf_table_rejects_a_bad_default_naming_it(default: float) -> None:
    with pytest.raises(ValueError, match=repr(default)):
        IdfTable({}, default=default)


def test_idf_table_name_is_a_digest_of_its_content() -> None:
    a = IdfTable({"lamp": 2.0, "sea": 3.0}, default=1.0)
    same = IdfTable({"sea": 3.0, "lamp": 2.0}, default=1.0)
    assert a.name == same.name
    assert a.name.startswith("idf-")
    assert a.name != IdfTable({"lamp": 2.0, "sea": 3.5}, default=1.0).name
    assert a.name != IdfTable({"lamp": 2.0, "sea": 3.0}, default=1.5).name
    assert a.name != IdfTable({"lamp": 2.0}, default=1.0).name
    assert IdfTable({"lamp": 2.0}, default=1.0, name="crawl-2024").name == "crawl-2024"


def test_idf_table_fit_is_smoothed_idf() -> None:
    docs = [["lamp", "sea"], ["lamp"], ["lamp", "tower", "tower"]]
    table = IdfTable.fit(docs)
    assert table["lamp"] == pytest.approx(math.log(4 / 4) + 1)
    assert table["sea"] == pytest.approx(math.log(4 / 2) + 1)
    assert table["tower"] == pytest.approx(math.log(4 / 2) + 1)  # counted once per document
    assert table.default == pytest.approx(math.log(4) + 1)
    assert table["unseen"] > table["sea"] > table["lamp"]


def test_idf_table_fit_accepts_a_generator_and_is_deterministic() -> None:
    docs = [["lamp", "sea"], ["lamp"], ["tower"]]
    fitted = IdfTable.fit(iter(docs))
    assert fitted.name == IdfTable.fit(list(reversed(docs))).name
    assert IdfTable.fit(docs, name="fitted").name == "fitted"
    assert IdfTable.fit([]).default == 1.0
