"""The sketch module's passage containment: how much of a passage a text holds."""

from __future__ import annotations

import numpy as np
import pytest

from simhash_filter.core.sketch import contained_share, passage_hashes


def test_contained_share_of_a_passage() -> None:
    page = "The harbour bridge reopened on Monday after two years of repairs. " * 3
    page += "Traffic engineers expect fewer queues on the eastern approach this winter."
    passage = "TRAFFIC  engineers expect fewer queues\non the eastern approach"  # case, spaces
    assert contained_share(passage_hashes(passage), passage_hashes(page)) == 1.0
    other = "Urban beekeepers report a record honey harvest from rooftop hives in the city."
    assert contained_share(passage_hashes(other), passage_hashes(page)) < 0.2
    assert contained_share(passage_hashes(""), passage_hashes(page)) == 0.0


@pytest.mark.parametrize("slots", [1, 2, 16, 256, 1024])
def test_text_sketch_is_the_sketch_of_every_distinct_hash(slots: int) -> None:
    """The sketch from the bins' candidates alone equals the one from every hash, sorted."""
    import random

    from simhash_filter.core.sketch import shingle_hashes, sketch_of, text_sketch

    rng = random.Random(slots)
    words = ["harbour", "bridge", "北京大学", "épée", "x", *(f"w{i}" for i in range(5000))]
    for n in (0, 3, 5, 40, 2_000, 20_000, 120_000):
        text = " ".join(rng.choice(words) for _ in range(n // 4 + 1))[:n]
        assert np.array_equal(text_sketch(text, slots), sketch_of(shingle_hashes(text), slots))


def test_the_bins_smallest_need_no_sorted_input() -> None:
    """The sketch takes each bin's smallest in one pass: the hashes in any order, with
    repeats, give the sketch of the sorted distinct ones, a bin's smallest whatever its
    neighbours (a bin of one large hash, bins left empty and borrowed)."""
    from simhash_filter.core.sketch import wide_sketch

    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 2**63, size=50_000, dtype=np.uint64)  # all in the lower half
    high = np.array([(1 << 63) | ((1 << 63) - 5)], dtype=np.uint64)  # bin 1 of 2: one large hash
    both = np.concatenate([hashes, high, hashes[:100]])
    for slots in (1, 2, 64, 256, 4096):
        expected = _sorted_reference(np.unique(both), slots)
        assert np.array_equal(wide_sketch(both, slots), expected)
        assert np.array_equal(wide_sketch(both[::-1], slots), expected)
    assert wide_sketch(both, 2)[1] == high[0]


def _sorted_reference(hashes: np.ndarray, slots: int) -> np.ndarray:
    """Each bin's first hash of the sorted hashes, empty bins borrowed (the sketch before
    it took the smallest in one pass)."""
    from simhash_filter.core.sketch import _EMPTY, _GOLDEN, _mix

    bins = (hashes >> np.uint64(64 - slots.bit_length() + 1)).astype(np.int64)
    if slots == 1:
        bins = np.zeros(len(hashes), np.int64)
    first = np.searchsorted(bins, np.arange(slots), side="left")
    filled = np.zeros(slots, dtype=bool)
    filled[bins] = True
    values = np.full(slots, _EMPTY, dtype=np.uint64)
    values[filled] = hashes[first[filled]]
    if not filled.all():
        idx = np.nonzero(filled)[0]
        pos = np.arange(slots)
        nxt = np.searchsorted(idx, pos, side="left")
        wrap = nxt == len(idx)
        donor = idx[np.where(wrap, 0, nxt)]
        distance = np.where(wrap, donor + slots - pos, donor - pos).astype(np.uint64)
        values = np.where(filled, values, _mix(values[donor] ^ (distance * _GOLDEN)))
    return values
