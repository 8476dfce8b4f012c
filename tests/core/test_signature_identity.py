"""The signature's fast paths give what the plain code they replaced gave, bit for bit.

A changed signature changes verdicts on stored databases without the spec saying so, so each
fast path of the signature is pinned here to the code it replaced, kept as a reference:
NFKC through the compatibility characters (``core/nfkc.py``), the Han runs segmented in one
call, the term-frequency weights as a ``Counter``, the features hashed without a Python frame
each, the sketch's bins without a sort. ``bench/check_signatures.py`` compares whole
signatures against another checkout on the public data.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.core.features import shingles, weigh
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.nfkc import compatibility_replacements, replace_compatibility
from simhash_filter.core.segment import segment_function
from simhash_filter.core.simhash import mmh3_64, mmh3_64_many, simhash
from simhash_filter.core.sketch import shingle_hashes, sketch_of, text_sketch
from simhash_filter.core.stopwords import DEFAULT as STOPWORDS
from simhash_filter.core.text import (
    _TOKEN_RE,
    MAX_HAN_RUN,
    Tokenizer,
    cap_non_starters,
    fold,
    non_starters,
)

_TABLE = compatibility_replacements()[1]
_MARKS = [chr(c) for c in non_starters() if c < 0x10000][::7]  # combining marks, every 7th
_SECONDS = ["\u0301", "\u0308", "\u0327", "\u3099", "\u309a", "\u1161", "\u11a8", "\u0b3e"]
_FIRSTS = ["a", "e", "o", "A", "\u3046", "\u304b", "\u1100", "\uac00", "\u0b47", "\u00ea"]
_PLAIN = ["x", " ", "1", "中", "文", "\u00e9", "\u0627", "\n", "\u3000", "\ud800"]
_ALPHABET = sorted(_TABLE)[::3] + _MARKS + _SECONDS + _FIRSTS + _PLAIN
"""Characters the replacement touches, and those that combine with their neighbours: marks
(reordered), second halves of compositions (kana voicing, Hangul vowels and finals, Indic
two-part vowels) and the letters they compose with."""
_RUNS = ["\u0301" * 35, "\u0323\u0301" * 16, "\u3099" * 31, "\u0f72" * 40]
"""Runs of marks past the cap, in canonical order (in NFKC) and not."""
TEXTS = (
    st.text(alphabet=st.sampled_from(_ALPHABET), max_size=40)
    | st.text(max_size=40)
    | st.lists(st.sampled_from(_ALPHABET + _RUNS), max_size=12).map("".join)
)


def _reference_fold(text: str) -> str:
    """:func:`fold` as it was before the compatibility characters went first."""
    text = unicodedata.normalize("NFKC", cap_non_starters(text)).casefold()
    return text.replace("\u2019", "'").replace("\u02bc", "'")


@settings(max_examples=3000)
@given(TEXTS)
def test_the_replacement_keeps_the_nfkc_form_and_the_runs_of_marks(text: str) -> None:
    replaced = replace_compatibility(text)
    assert unicodedata.normalize("NFKC", replaced) == unicodedata.normalize("NFKC", text)
    assert fold(text) == _reference_fold(text)


@pytest.mark.parametrize("compatibility", ["", "，", "…", " "])
@pytest.mark.parametrize("run", ["\u0301" * 40, "\u0301\u0323" * 20, "\u0323" * 31])
def test_a_long_run_of_marks_is_cut_as_before_beside_a_compatibility_character(
    compatibility: str, run: str
) -> None:
    """A run in canonical order is in NFKC, and the cap leaves a text in NFKC as it is: a
    full-width comma beside it must not change whether the run is cut (the cap goes first)."""
    for text in (
        f"x{run}{compatibility}end",
        f"{compatibility}a{run} b",
        f"中{run}文{compatibility}",
    ):
        assert fold(text) == _reference_fold(text), text


def test_every_replaced_character_in_every_hard_context() -> None:
    """Each of the table's characters between each mark, composition half and letter."""
    contexts = _MARKS[::4] + _SECONDS + _FIRSTS
    nfkc = unicodedata.normalize
    for ch, replacement in _TABLE.items():
        assert nfkc("NFKC", ch) == replacement
        for x in contexts:
            for text in (x + ch, ch + x, x + ch + x):
                assert nfkc("NFKC", text.replace(ch, replacement)) == nfkc("NFKC", text), text


def test_the_table_holds_what_chinese_and_english_pages_fail_on() -> None:
    for ch in "，：（）？；！％\u2026\u00a0\u3000\u2116\u2122ａＺ１":
        assert ch in _TABLE
    for ch in "中a\u00e9\u0301\uac00\u3099。、":  # NFKC leaves them, or combines them
        assert ch not in _TABLE


def _reference_tokenize(tokenizer: Tokenizer, text: str) -> list[str]:
    """:meth:`Tokenizer.tokenize` with one segmenter call a Han run, as it was."""
    stop = tokenizer.stopwords
    segment = segment_function(tokenizer.segmenter, None, tokenizer.hmm)
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        kind, run = match.lastgroup, match.group()
        if kind == "word":
            if run not in stop and not (tokenizer.drop_numbers and run.isdigit()):
                out.append(run)
        elif kind == "han":
            for at in range(0, len(run), MAX_HAN_RUN):
                out.extend(w for w in segment(run[at : at + MAX_HAN_RUN]) if w not in stop)
        elif len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


_HAN_WORDS = [
    "中国",
    "人民",
    "北京大学",
    "的",
    "了",
    "研究",
    "生命",
    "科学",
    "㐀",
    "龥",
    "\U00020000",
]
_OTHER = [" ", "，", "。", "abc", "don't", "42", "かな", "ハングル", "한국어", "\n", "\u3000", "é"]
MIXED = st.lists(st.sampled_from(_HAN_WORDS + _OTHER), max_size=30).map("".join)


@pytest.mark.parametrize("segmenter", ["rjieba", "jieba"])
@pytest.mark.parametrize("hmm", [True, False])
@settings(max_examples=300, deadline=None)
@given(text=MIXED)
def test_han_runs_segmented_in_one_call_give_the_words_of_each(
    segmenter: str, hmm: bool, text: str
) -> None:
    for stopwords in (STOPWORDS, frozenset({"\n", "中国", "的"})):
        tokenizer = Tokenizer(stopwords=stopwords, hmm=hmm, segmenter=segmenter)
        folded = fold(text)
        assert tokenizer.tokenize(folded) == _reference_tokenize(tokenizer, folded)


def test_a_run_longer_than_the_cap_is_segmented_in_pieces_as_before() -> None:
    tokenizer = Tokenizer(stopwords=STOPWORDS, segmenter="rjieba")
    text = "研究生命科学" * 900 + " word " + "北京大学" * 10
    assert tokenizer.tokenize(text) == _reference_tokenize(tokenizer, text)


def _reference_simhash(tokens: list[str], fingerprinter: Fingerprinter) -> int:
    """The simhash from :func:`weigh`'s dict, its hashes one call a feature, as it was."""
    weights = weigh(
        shingles(tokens, fingerprinter.shingle_size),
        weighting=fingerprinter.weighting,
        idf=fingerprinter.idf,
        top_n=fingerprinter.top_n,
    )
    names = list(weights)
    hashes = np.array([mmh3_64(n, fingerprinter.seed) for n in names], dtype=np.uint64)
    from simhash_filter.core.simhash import column_sums, fingerprint_from_sums

    return fingerprint_from_sums(column_sums(hashes, list(weights.values())))


WORDS = st.lists(st.sampled_from(["a", "b", "cat", "中文", "é", "x y", "😀", "0"]), max_size=60)


@settings(max_examples=300)
@given(WORDS, st.sampled_from([1, 2, 3]), st.sampled_from(["tf", "uniform", "sublinear"]))
def test_the_counts_as_weights_give_the_simhash_of_the_weights(
    tokens: list[str], shingle_size: int, weighting: str
) -> None:
    fingerprinter = Fingerprinter(shingle_size=shingle_size, weighting=weighting)
    assert fingerprinter._simhash(tokens) == _reference_simhash(tokens, fingerprinter)
    features = shingles(tokens, shingle_size)
    assert simhash(Counter(features)) == simhash(weigh(features, weighting="tf"))


@given(
    st.lists(st.text(max_size=8).filter(lambda s: not any(0xD800 <= ord(c) < 0xE000 for c in s)))
)
def test_the_features_hashed_at_once_are_each_ones_hash(features: list[str]) -> None:
    assert mmh3_64_many(features).tolist() == [mmh3_64(f) for f in features]


def test_a_feature_with_a_lone_surrogate_raises_as_its_encoding_does() -> None:
    """``str.encode`` refuses it (mmh3's own str path would crash the interpreter)."""
    with pytest.raises(UnicodeEncodeError):
        mmh3_64_many(["ok", "\ud800"])
    with pytest.raises(UnicodeEncodeError):
        mmh3_64("\ud800")


@settings(max_examples=300)
@given(st.text(max_size=400), st.sampled_from([1, 2, 16, 64, 256]))
def test_the_text_sketch_is_the_sketch_of_the_sorted_hashes(text: str, slots: int) -> None:
    assert np.array_equal(text_sketch(text, slots), sketch_of(shingle_hashes(text), slots))


def test_fast_paths_on_long_texts() -> None:
    """The texts a page has: tens of thousands of characters, Chinese and English."""
    fingerprinter = Fingerprinter()
    english = " ".join(f"word{i % 997} and the {i % 13}" for i in range(6000)) + " … ok\u00a0"
    chinese = "北京大学的人工智能研究，生命科学（第二版）：新的发现！" * 800

    def check(text: str) -> None:
        assert fold(text) == _reference_fold(text)
        tokens = fingerprinter.tokenizer.tokenize(fold(text))
        assert tokens == _reference_tokenize(fingerprinter.tokenizer, fold(text))
        assert fingerprinter._simhash(tokens) == _reference_simhash(tokens, fingerprinter)
        for slots in (64, 256):
            assert np.array_equal(text_sketch(text, slots), sketch_of(shingle_hashes(text), slots))

    check(english)
    check(chinese)
    check(english[:20_000] + chinese[:20_000])
