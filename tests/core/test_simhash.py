"""Charikar simhash: the worked example, the accumulation against a per-bit loop,
and the Hamming distance / similarity properties."""

from __future__ import annotations

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter import hamming_distance, similarity
from simhash_filter.core.simhash import (
    BITS,
    DEFAULT_SEED,
    column_sums,
    fingerprint_from_sums,
    mmh3_64,
    simhash,
)

u64 = st.integers(min_value=0, max_value=2**64 - 1)
DETERMINISTIC = settings(derandomize=True, deadline=None, max_examples=200)


def column_string_to_int(columns: str) -> int:
    """'100101' with the leftmost character as column 0 → the int whose bit i is column i."""
    return sum(1 << i for i, c in enumerate(columns) if c == "1")


# The seeds' worked example: five features, 6-bit hashes, weights 5, 2, 3, 1, 4.
WORKED_HASHES = {"a": "100101", "b": "101011", "c": "100111", "d": "101111", "e": "111011"}
WORKED_WEIGHTS = {"a": 5.0, "b": 2.0, "c": 3.0, "d": 1.0, "e": 4.0}
WORKED_SUMS = [15, -7, -1, 3, 5, 15]
WORKED_BITS = "100111"


def test_worked_example_column_sums() -> None:
    hashes = [column_string_to_int(WORKED_HASHES[f]) for f in WORKED_WEIGHTS]
    sums = column_sums(hashes, list(WORKED_WEIGHTS.values()), bits=6)
    assert sums.tolist() == WORKED_SUMS
    assert fingerprint_from_sums(sums) == column_string_to_int(WORKED_BITS)


def test_worked_example_simhash_with_injected_hash() -> None:
    def six_bit_hash(feature: str) -> int:
        return column_string_to_int(WORKED_HASHES[feature])

    result = simhash(WORKED_WEIGHTS, hash_function=six_bit_hash, bits=6)
    assert [(result >> i) & 1 for i in range(6)] == [1, 0, 0, 1, 1, 1]
    assert result == 0b111001


def test_worked_example_feature_order_does_not_matter() -> None:
    def six_bit_hash(feature: str) -> int:
        return column_string_to_int(WORKED_HASHES[feature])

    reordered = dict(reversed(list(WORKED_WEIGHTS.items())))
    assert simhash(reordered, hash_function=six_bit_hash, bits=6) == 0b111001


def test_mmh3_64_is_the_low_unsigned_half_of_murmur3_x64_128() -> None:
    for feature in ("lighthouse", "北京大学", "", "cat's"):
        expected = mmh3.hash64(feature, DEFAULT_SEED, signed=False)[0]
        assert mmh3_64(feature) == expected
        assert 0 <= mmh3_64(feature) < 2**64
        low = mmh3.hash128(feature, DEFAULT_SEED, signed=False) & (2**64 - 1)
        assert mmh3_64(feature) == low
    assert mmh3_64("lighthouse", 1) != mmh3_64("lighthouse", 2)


def test_column_sums_masks_signed_hashes_to_64_bits() -> None:
    assert column_sums([-1], [2.0]).tolist() == [2.0] * 64
    assert column_sums([2**64 + 1], [1.0]).tolist() == [1.0] + [-1.0] * 63


def test_no_features_give_zero_sums_and_fingerprint_zero() -> None:
    sums = column_sums([], [])
    assert sums.shape == (BITS,)
    assert not sums.any()
    assert simhash({}) == 0


@pytest.mark.parametrize("bits", [0, 65, -1])
def test_column_sums_rejects_bad_bit_counts(bits: int) -> None:
    with pytest.raises(ValueError, match=str(bits)):
        column_sums([1], [1.0], bits=bits)


def test_column_sums_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 hashes but 1 weights"):
        column_sums([1, 2], [1.0])


def reference_sums(hashes: list[int], weights: list[int], bits: int) -> list[int]:
    """The textbook per-bit loop."""
    sums = [0] * bits
    for h, w in zip(hashes, weights, strict=True):
        for i in range(bits):
            sums[i] += w if (h >> i) & 1 else -w
    return sums


@DETERMINISTIC
@given(
    st.lists(st.tuples(u64, st.integers(min_value=0, max_value=1000)), max_size=40),
    st.integers(min_value=1, max_value=64),
)
def test_column_sums_match_the_per_bit_loop(pairs: list[tuple[int, int]], bits: int) -> None:
    hashes = [h for h, _ in pairs]
    weights = [w for _, w in pairs]
    expected = reference_sums(hashes, weights, bits)
    sums = column_sums(hashes, [float(w) for w in weights], bits=bits)
    assert sums.tolist() == expected
    fingerprint = fingerprint_from_sums(sums)
    assert fingerprint == sum(1 << i for i, s in enumerate(expected) if s > 0)
    assert 0 <= fingerprint < 2**bits


@DETERMINISTIC
@given(st.dictionaries(st.text(max_size=6), st.integers(min_value=1, max_value=50), max_size=30))
def test_simhash_matches_the_per_bit_loop_over_mmh3(weights: dict[str, int]) -> None:
    names = list(weights)
    hashes = [mmh3.hash64(n, 0x5EED, signed=False)[0] for n in names]
    expected = reference_sums(hashes, [weights[n] for n in names], 64)
    fingerprint = simhash({n: float(w) for n, w in weights.items()})
    assert fingerprint == sum(1 << i for i, s in enumerate(expected) if s > 0)


def test_fingerprint_from_sums_sets_only_positive_columns() -> None:
    sums = np.array([1.0, 0.0, -1.0, 0.5, -0.0, 1e-12])
    assert fingerprint_from_sums(sums) == 0b101001


@DETERMINISTIC
@given(u64, u64)
def test_hamming_distance_is_symmetric_and_counts_differing_bits(a: int, b: int) -> None:
    d = hamming_distance(a, b)
    assert d == hamming_distance(b, a)
    assert d == bin(a ^ b).count("1")
    assert 0 <= d <= 64
    assert (d == 0) == (a == b)


@DETERMINISTIC
@given(u64)
def test_hamming_distance_to_itself_is_zero(a: int) -> None:
    assert hamming_distance(a, a) == 0
    assert similarity(a, a) == 1.0
    assert hamming_distance(a, a ^ (2**64 - 1)) == 64
    assert similarity(a, a ^ (2**64 - 1)) == 0.0


@DETERMINISTIC
@given(u64, u64, u64)
def test_hamming_distance_triangle_inequality(a: int, b: int, c: int) -> None:
    assert hamming_distance(a, c) <= hamming_distance(a, b) + hamming_distance(b, c)


@DETERMINISTIC
@given(u64, u64)
def test_similarity_is_one_minus_distance_over_64(a: int, b: int) -> None:
    assert similarity(a, b) == pytest.approx(1 - hamming_distance(a, b) / 64)
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0


def test_hamming_distance_examples() -> None:
    assert hamming_distance(0, 0) == 0
    assert hamming_distance(0b1011, 0b0001) == 2
    assert hamming_distance(0, 2**64 - 1) == 64
    assert similarity(0, 0b111) == pytest.approx(61 / 64)
