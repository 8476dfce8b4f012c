"""The keep policy: which copy of a cluster stays (core/keep.py)."""

from __future__ import annotations

from simhash_filter.core.keep import ClusterPage, could_prefer_new, prefers_new, support

A, B, C, HOME = (
    "https://x.example/a",
    "https://x.example/b",
    "https://x.example/c",
    "https://x.example/",
)


def test_a_page_that_is_its_own_canonical_replaces_a_variant() -> None:
    variant = ClusterPage(A + "?utm_source=rss", A)
    assert prefers_new(variant, ClusterPage(A, A), {})


def test_the_url_a_variant_names_replaces_it_even_without_a_hint_of_its_own() -> None:
    assert prefers_new(ClusterPage(B, A), ClusterPage(A, None), {})


def test_a_variant_never_replaces_anything() -> None:
    assert not prefers_new(ClusterPage(A, None), ClusterPage(B, A), {})
    assert not prefers_new(ClusterPage(A, C), ClusterPage(B, C), {C: 5})
    assert not could_prefer_new(B, A)
    assert could_prefer_new(B, B)
    assert could_prefer_new(B, None)


def test_ties_keep_the_first() -> None:
    assert not prefers_new(ClusterPage(A, A), ClusterPage(B, B), {})  # both self-canonical
    assert not prefers_new(ClusterPage(A, None), ClusterPage(B, None), {})
    assert not prefers_new(ClusterPage(A, A), ClusterPage(A, A), {})


def test_the_clusters_votes_count() -> None:
    # the first page has no hint, but the copies dropped so far name it: a newcomer that
    # names itself does not win
    assert not prefers_new(ClusterPage(A, None), ClusterPage(B, B), {A: 2})
    # the copies dropped so far name the newcomer: it wins with no hint of its own
    assert prefers_new(ClusterPage(A, None), ClusterPage(B, None), {B: 1})
    assert support(B, ClusterPage(A, B), ClusterPage(B, B), {B: 3}) == 5


def test_hints_naming_a_page_outside_the_cluster_change_nothing() -> None:
    # every page names the home page: neither copy is named, the first stays
    assert not prefers_new(ClusterPage(A, HOME), ClusterPage(B, HOME), {HOME: 7})
    assert not prefers_new(ClusterPage(A, HOME), ClusterPage(B, None), {HOME: 7})
