"""The sketch module's passage containment: how much of a passage a text holds."""

from __future__ import annotations

from simhash_filter.core.sketch import contained_share, passage_hashes


def test_contained_share_of_a_passage() -> None:
    page = "The harbour bridge reopened on Monday after two years of repairs. " * 3
    page += "Traffic engineers expect fewer queues on the eastern approach this winter."
    passage = "TRAFFIC  engineers expect fewer queues\non the eastern approach"  # case, spaces
    assert contained_share(passage_hashes(passage), passage_hashes(page)) == 1.0
    other = "Urban beekeepers report a record honey harvest from rooftop hives in the city."
    assert contained_share(passage_hashes(other), passage_hashes(page)) < 0.2
    assert contained_share(passage_hashes(""), passage_hashes(page)) == 0.0
