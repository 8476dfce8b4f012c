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


def test_a_bin_without_candidates_takes_every_hash() -> None:
    """A bin none of whose hashes is under the threshold: every hash is kept, so its smallest
    is still found."""
    from simhash_filter.core.sketch import _bin_candidates

    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 2**63, size=50_000, dtype=np.uint64)  # all in the lower half
    high = np.array([(1 << 63) | ((1 << 63) - 5)], dtype=np.uint64)  # bin 1 of 2: one large hash
    both = np.concatenate([hashes, high])
    assert len(_bin_candidates(hashes, 1)) == len(hashes)
    assert len(_bin_candidates(both, 2)) == len(both)
    kept = _bin_candidates(np.concatenate([both, both ^ np.uint64(1 << 63)]), 2)
    assert len(kept) < len(both)  # both bins have small hashes: only candidates are kept
