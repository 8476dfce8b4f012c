"""The second signature and the match rule: sketches estimate character-5-gram Jaccard,
the byte format round-trips and rejects garbage, MatchRule validates, describes and
parses itself, and verify() confirms copies, rejects unrelated texts and flags
boilerplate (same extracted text, different pages)."""

from __future__ import annotations

import hashlib
import random
import re

import numpy as np
import pytest

from simhash_filter import Fingerprinter
from simhash_filter.core.signature import (
    MatchRule,
    PageSignature,
    Verification,
    decode_sketch,
    encode_sketch,
    encode_slots,
    marks_listing,
    sketch_parts,
    slot_agreement,
)
from simhash_filter.core.sketch import agreement, shingle_hashes, sketch_of
from simhash_filter.core.text import normalize
from tests.core.test_fingerprint import ENGLISH, UNRELATED


def c5_jaccard(a: str, b: str) -> float:
    """The reference measure of the labelled data sets, on normalized text."""

    def grams(t: str) -> set[str]:
        t = re.sub(r"\s+", " ", t).strip()
        return {t[i : i + 5] for i in range(max(1, len(t) - 4))}

    x, y = grams(normalize(a)), grams(normalize(b))
    return len(x & y) / len(x | y)


def edited(text: str, fraction: float, seed: int) -> str:
    """``text`` with about ``fraction`` of its words replaced by invented ones."""
    rng = random.Random(seed)
    words = text.split()
    for i in rng.sample(range(len(words)), int(len(words) * fraction)):
        words[i] = f"w{rng.randrange(10**6)}"
    return " ".join(words)


FP = Fingerprinter()
RULE = MatchRule()


def test_shingle_hashes_are_distinct_sorted_and_cover_short_texts() -> None:
    h = shingle_hashes("abcdefabcdef")
    assert list(h) == sorted(set(h.tolist()))
    assert len(h) == 6  # abcde bcdef cdefa defab efabc fabcd (the last 2 repeat)
    assert len(shingle_hashes("abc")) == 1
    assert len(shingle_hashes("")) == 0


@pytest.mark.parametrize("fraction", [0.0, 0.02, 0.05, 0.1, 0.2, 0.4])
def test_sketch_estimates_character_5_gram_jaccard(fraction: float) -> None:
    text = " ".join([ENGLISH, *UNRELATED])
    for seed in range(3):
        other = edited(text, fraction, seed)
        estimate = RULE.verify(FP.sketch(text), FP.sketch(other)).similarity
        # 256 slots: standard error <= 0.032; 4 sigma
        assert abs(estimate - c5_jaccard(text, other)) < 0.13


def test_unrelated_texts_are_not_confirmed() -> None:
    sketches = [FP.sketch(t) for t in [ENGLISH, *UNRELATED]]
    for i, a in enumerate(sketches):
        for b in sketches[i + 1 :]:
            v = RULE.verify(a, b)
            assert not v.confirmed
            assert v.similarity < 0.1


def test_densified_sketch_of_a_short_text_fills_every_slot_consistently() -> None:
    short = "a short text of forty characters or so."
    s = sketch_of(shingle_hashes(short), 256)
    again = sketch_of(shingle_hashes(short), 256)
    assert np.array_equal(s, again)
    assert agreement(s, sketch_of(shingle_hashes(short.upper()), 256)) < 0.2
    # borrowed slots differ by position, so a short text does not look like a constant
    assert len(set(s.tolist())) > 30


def test_sketch_bytes_round_trip_and_reject_garbage() -> None:
    text = np.arange(256, dtype=np.uint16)
    page = np.arange(64, dtype=np.uint16) * 7
    decoded = decode_sketch(encode_sketch(text, page, 0.3))
    assert np.array_equal(decoded.text, text)
    assert decoded.page is not None
    assert np.array_equal(decoded.page, page)
    assert decoded.share == pytest.approx(0.3, abs=0.005)
    plain = decode_sketch(encode_sketch(text))
    assert plain.page is None
    assert plain.share is None
    good = encode_sketch(text)
    for bad in [b"", good[:4], good[:-2], b"\x09" + good[1:], good + b"\x00\x00"]:
        with pytest.raises(ValueError, match="sketch"):
            decode_sketch(bad)


def test_verify_refuses_sketches_of_different_sizes() -> None:
    small = Fingerprinter(sketch_slots=128)
    with pytest.raises(ValueError, match="cannot be compared"):
        RULE.verify(FP.sketch(ENGLISH), small.sketch(ENGLISH))


def test_match_rule_describes_and_parses_itself() -> None:
    for rule in [MatchRule(), MatchRule(6, 0.75, 4), MatchRule(8, 0.6, 2, 0.4, 0.1)]:
        assert MatchRule.parse(rule.describe()) == rule
    assert MatchRule.parse("candidate_distance=5;min_similarity=0.8;fallback_distance=2") == (
        MatchRule(5, 0.8, 2)
    )
    for bad in [
        "",
        "candidate_distance=5",
        "candidate_distance=5;min_similarity=x;fallback_distance=2",
        "candidate_distance=5;min_similarity=0.8;fallback_distance=2;colour=blue",
        "candidate_distance=5;candidate_distance=5;min_similarity=0.8;fallback_distance=2",
        "candidate_distance=99;min_similarity=0.8;fallback_distance=2",
    ]:
        with pytest.raises(ValueError, match=r"match rule|number|twice|between"):
            MatchRule.parse(bad)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"candidate_distance": -1},
        {"candidate_distance": 65},
        {"fallback_distance": 2.5},
        {"min_similarity": 1.5},
        {"min_similarity": float("nan")},
        {"max_text_share": True},
    ],
)
def test_match_rule_rejects_values_out_of_range(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        MatchRule(**kwargs)  # type: ignore[arg-type]


def test_max_distance_is_the_larger_radius() -> None:
    assert MatchRule().max_distance == MatchRule().candidate_distance == 9
    assert MatchRule(7, 0.7, 3).max_distance == 7
    assert MatchRule(2, 0.7, 5).max_distance == 5


def test_sign_gives_fingerprint_sketch_and_length() -> None:
    signature = FP.sign(ENGLISH)
    assert isinstance(signature, PageSignature)
    assert signature.fingerprint == FP.fingerprint(ENGLISH)
    assert signature.sketch == FP.sketch(ENGLISH)
    assert signature.text_length == len(ENGLISH)
    assert FP.sign("too short") is None
    # pinned: the sketch is part of the spec, a change must be deliberate
    assert hashlib.sha256(signature.sketch).hexdigest()[:16] == _PINNED_SKETCH


_PINNED_SKETCH = "2574d7ce7f1f839d"


def test_edited_copy_is_confirmed() -> None:
    copy = edited(ENGLISH, 0.03, 1)
    assert RULE.verify(FP.sketch(ENGLISH), FP.sketch(copy)).confirmed


# --- boilerplate: the same extracted text on pages that differ ------------------------------

SIDEBAR = (
    "Subscribe to our newsletter for the week's best stories, delivered every Friday morning. "
    "We never share your address and you can unsubscribe at any time with a single click."
)


def test_same_small_block_on_different_pages_is_boilerplate() -> None:
    # two different articles of one site; the extractor returned only the sidebar
    nav = "Home News Sport Weather Contact About us Subscribe Archive"
    page_a = f"{nav}\n{ENGLISH}\n{SIDEBAR}\n© Harbour Gazette"
    page_b = f"{nav}\n{UNRELATED[0]}\n{UNRELATED[1]}\n{UNRELATED[2]}\n{SIDEBAR}\n© Harbour Gazette"
    verdict = RULE.verify(
        FP.sketch(SIDEBAR, page_text=page_a), FP.sketch(SIDEBAR, page_text=page_b)
    )
    assert verdict.confirmed
    assert verdict.boilerplate


def test_same_page_twice_with_a_small_extracted_block_is_a_copy() -> None:
    nav = "Home News Sport Weather Contact About us Subscribe Archive"
    page = f"{nav}\n{ENGLISH}\n{SIDEBAR}\n© Harbour Gazette"
    edited_page = page.replace("forty years", "four decades")
    verdict = RULE.verify(
        FP.sketch(SIDEBAR, page_text=page), FP.sketch(SIDEBAR, page_text=edited_page)
    )
    assert verdict.confirmed
    assert not verdict.boilerplate


def test_same_article_in_two_templates_is_a_copy_not_boilerplate() -> None:
    page_a = f"Home News Sport Weather\n{ENGLISH}\n© Harbour Gazette. All rights reserved."
    page_b = f"Menu Front page Opinion Archive\n{ENGLISH}\nPublished by the Coast Courier, 2024."
    verdict = RULE.verify(
        FP.sketch(ENGLISH, page_text=page_a), FP.sketch(ENGLISH, page_text=page_b)
    )
    assert verdict == Verification(confirmed=True, similarity=1.0, boilerplate=False)


def test_boilerplate_needs_both_page_texts() -> None:
    page_a = f"{ENGLISH}\n{UNRELATED[0]}\n{SIDEBAR}"
    with_page = FP.sketch(SIDEBAR, page_text=page_a)
    without = FP.sketch(SIDEBAR)
    verdict = RULE.verify(with_page, without)
    assert verdict.confirmed
    assert not verdict.boilerplate


# --- a reference implementation of the sketch, in plain Python integers --------------------

_MASK = (1 << 64) - 1


def _ref_mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _ref_sketch(text: str, slots: int) -> list[int]:
    """One-permutation MinHash with rotation densification, written from the description."""
    codes = [ord(c) for c in text] + [0] * max(0, 5 - len(text))
    hashes = set()
    for i in range(len(codes) - 4):
        h = (codes[i] + 0x51C3) & _MASK
        for j in range(1, 5):
            h = (h * 0x9E3779B97F4A7C15 + codes[i + j]) & _MASK
        hashes.add(_ref_mix(h))
    bits = slots.bit_length() - 1
    best: dict[int, int] = {}
    for h in hashes:
        b = h >> (64 - bits)
        best[b] = min(best.get(b, h), h)
    out = []
    for b in range(slots):
        if b in best:
            out.append(best[b] & 0xFFFF)
            continue
        distance = next(d for d in range(1, slots + 1) if (b + d) % slots in best)
        donor = best[(b + distance) % slots]
        out.append(_ref_mix(donor ^ ((distance * 0x9E3779B97F4A7C15) & _MASK)) & 0xFFFF)
    return out


@pytest.mark.parametrize("slots", [16, 256])
@pytest.mark.parametrize(
    "text",
    ["", "abc", "a short text that leaves many bins empty", ENGLISH, "北京大学的人工智能研究"],
)
def test_sketch_matches_the_reference_implementation(text: str, slots: int) -> None:
    if not text:
        assert sketch_of(shingle_hashes(text), slots).tolist() == [0] * slots
        return
    assert sketch_of(shingle_hashes(text), slots).tolist() == _ref_sketch(text, slots)


def test_for_distance_is_the_default_rule_at_another_candidate_distance() -> None:
    assert MatchRule.for_distance(MatchRule().candidate_distance) == MatchRule()
    rule = MatchRule.for_distance(2, 0.8)
    assert (rule.candidate_distance, rule.min_similarity, rule.fallback_distance) == (2, 0.8, 2)


def test_the_listing_flag_round_trips_beside_the_other_parts() -> None:
    rng = np.random.default_rng(3)
    text = rng.integers(0, 1 << 16, 64, dtype=np.uint16)
    page = rng.integers(0, 1 << 16, 16, dtype=np.uint16)
    for listing in (False, True):
        for parts in ((text, None, None), (text, page, 0.25)):
            decoded = decode_sketch(encode_sketch(*parts, listing=listing))
            assert decoded.listing is listing
            assert np.array_equal(decoded.text, text)
            assert (decoded.page is None) is (parts[1] is None)
    # a sketch written before the flag (flags byte 0 or 1) reads as "not a listing"
    assert not decode_sketch(encode_sketch(text, page, 0.25)).listing
    assert encode_sketch(text, listing=True)[1] == 2
    assert encode_sketch(text, page, 0.5, listing=True)[1] == 3


def test_fingerprinter_marks_a_listing_without_changing_its_spec() -> None:
    fp = Fingerprinter()
    marked = fp.sign(ENGLISH, page_text=ENGLISH + " Home News", listing=True)
    plain = fp.sign(ENGLISH, page_text=ENGLISH + " Home News")
    assert marked is not None
    assert plain is not None
    assert decode_sketch(marked.sketch).listing
    assert not decode_sketch(plain.sketch).listing
    assert marked.fingerprint == plain.fingerprint
    assert marked.sketch[:1] + marked.sketch[2:] == plain.sketch[:1] + plain.sketch[2:]
    assert decode_sketch(fp.sketch(ENGLISH, listing=True)).listing
    assert Fingerprinter().spec == fp.spec  # one spec: old stored sketches stay comparable


def test_a_listing_and_a_page_that_is_not_one_match_but_are_not_copies() -> None:
    fp = Fingerprinter()
    post, other = fp.sketch(ENGLISH), fp.sketch(edited(ENGLISH, 0.05, 1), listing=True)
    listed = RULE.verify(post, other)
    assert listed == Verification(True, listed.similarity, boilerplate=False, listing=True)
    assert RULE.verify(other, post).listing  # symmetric
    # two listings, or two pages that are not: a copy as before
    both = fp.sketch(ENGLISH, listing=True)
    assert RULE.verify(both, other) == Verification(True, RULE.verify(both, other).similarity)
    assert not RULE.verify(post, fp.sketch(edited(ENGLISH, 0.05, 1))).listing
    # not confirmed: no flag either
    assert RULE.verify(post, fp.sketch(UNRELATED[0], listing=True)) == Verification(
        False, RULE.verify(post, fp.sketch(UNRELATED[0])).similarity
    )


def test_a_boilerplate_pair_is_boilerplate_whatever_the_listing_flags() -> None:
    fp = Fingerprinter()
    sidebar = "Subscribe to our newsletter for the week's best stories. " * 3
    a = fp.sketch(sidebar, page_text=" ".join([ENGLISH] * 3) + sidebar, listing=True)
    b = fp.sketch(sidebar, page_text=" ".join(UNRELATED * 3) + sidebar)
    verdict = RULE.verify(a, b)
    assert verdict.confirmed
    assert verdict.boilerplate
    assert not verdict.listing


@pytest.mark.parametrize("listing", [False, True])
@pytest.mark.parametrize("with_page", [False, True])
def test_marks_listing_reads_the_flag_decode_sketch_reads(listing: bool, with_page: bool) -> None:
    text = np.arange(256, dtype=np.uint16)
    page = np.arange(64, dtype=np.uint16) if with_page else None
    data = encode_sketch(text, page, 0.5, listing=listing)
    assert marks_listing(data) is decode_sketch(data).listing is listing
    assert not marks_listing(b"")
    assert not marks_listing(bytes([9, 2, 8, 0, 0]))


@pytest.mark.parametrize("slots", [1, 2, 64, 256, 4096])
def test_slot_agreement_counts_the_equal_slots_as_numpy_does(slots: int) -> None:
    # verify compares sketches on their bytes (no NumPy in the crawl process): one slot
    # differing in one bit, in either byte, anywhere, is counted once
    rng = random.Random(slots)
    for _ in range(50):
        a = np.frombuffer(rng.randbytes(2 * slots), dtype="<u2")
        b = a.copy()
        for i in rng.sample(range(slots), rng.randrange(slots + 1)):
            b[i] ^= 1 << rng.randrange(16)
        expected = float(np.count_nonzero(a == b)) / slots
        assert slot_agreement(a.tobytes(), b.tobytes()) == expected == agreement(a, b)


def test_slot_agreement_rejects_sketches_of_other_sizes() -> None:
    with pytest.raises(ValueError, match="sketches of 2 and 3 slots"):
        slot_agreement(bytes(4), bytes(6))
    with pytest.raises(ValueError, match="sketches of 0 and 0 slots"):
        slot_agreement(b"", b"")


def test_sketch_parts_are_the_decoded_arrays_bytes() -> None:
    text = np.arange(256, dtype=np.uint16) * 257
    page = np.arange(64, dtype=np.uint16)
    data = encode_sketch(text, page, 0.5, listing=True, unsure=True)
    parts, decoded = sketch_parts(data), decode_sketch(data)
    assert parts.text == decoded.text.astype("<u2").tobytes() == text.astype("<u2").tobytes()
    assert parts.page == page.astype("<u2").tobytes()
    assert (parts.share, parts.listing, parts.unsure) == (decoded.share, True, True)
    assert encode_slots(parts.text, parts.page, parts.share, listing=True, unsure=True) == data


def test_encode_slots_rejects_a_number_of_slots_not_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        encode_slots(bytes(6))
