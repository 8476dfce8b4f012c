"""The keep policy: which copy of a cluster stays (core/keep.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simhash_filter.core.keep import (
    ClusterPage,
    UrlForm,
    could_prefer_new,
    defers,
    prefers_new,
    rules_prefer_new,
    support,
)

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
    assert not could_prefer_new(B, A, A)  # it names the kept page: no store read can help
    assert could_prefer_new(B, A, C)  # the store may show the hint wrong
    assert could_prefer_new(B, B, A)
    assert could_prefer_new(B, None, A)


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


def test_a_disproved_hint_counts_as_no_hint() -> None:
    # every page names the home page, which the store holds as another page
    kept, new = ClusterPage(A + "?utm_source=x", HOME), ClusterPage(A, HOME)
    assert not prefers_new(kept, new, {HOME: 3})  # not disproved: the new page is a variant
    forms = (UrlForm(A, 1), UrlForm(A, 0))
    assert prefers_new(kept, new, {HOME: 3}, disproved={HOME}, forms=lambda: forms)
    assert not prefers_new(kept, new, {HOME: 3}, disproved={HOME})  # no rules: a tie
    # a disproved hint adds no support: a page that names itself still wins over it
    assert prefers_new(ClusterPage(B, HOME), ClusterPage(A, A), {}, disproved={HOME})


def test_no_hint_and_a_rule_keep_the_rules_image() -> None:
    variant, page = ClusterPage(A + "?utm_source=x", None), ClusterPage(A, None)
    forms = (UrlForm(A, 1), UrlForm(A, 0))
    assert prefers_new(variant, page, {}, forms=lambda: forms)

    # the hints decide first: the rules are not asked when the supports differ
    def fail() -> tuple[UrlForm, UrlForm]:
        raise AssertionError("rules asked although the hints decided")

    assert not prefers_new(ClusterPage(B, B), ClusterPage(A, None), {}, forms=fail)
    assert prefers_new(ClusterPage(B, A), ClusterPage(A, None), {}, forms=fail)


def test_the_rules_never_choose_the_variant() -> None:
    page, variant = ClusterPage(A, None), ClusterPage(A + "?utm_source=x", None)
    forms = (UrlForm(A, 0), UrlForm(A, 1))  # the rules map the new URL onto the kept one
    assert not prefers_new(page, variant, {}, forms=lambda: forms)
    # of any pair with one form, at most one order prefers the new URL
    for kept_steps in range(3):
        for new_steps in range(3):
            one, other = UrlForm(A, kept_steps), UrlForm(A, new_steps)
            assert not (rules_prefer_new(one, other) and rules_prefer_new(other, one))
    # different forms: the rules do not relate the URLs, the first stays
    assert not rules_prefer_new(UrlForm(A, 2), UrlForm(B, 0))
    # an echo of every URL as its own canonical is a tie the rules break
    echo = ClusterPage(A + "?sid=1", A + "?sid=1")
    assert prefers_new(echo, ClusterPage(A, A), {}, forms=lambda: (UrlForm(A, 1), UrlForm(A, 0)))


_URLS = st.sampled_from([A, B, C, HOME])
_PAGES = st.builds(ClusterPage, _URLS, st.none() | _URLS)
_FORMS = st.builds(UrlForm, _URLS, st.integers(0, 3))


@given(
    kept=_PAGES,
    new=_PAGES,
    votes=st.dictionaries(_URLS, st.integers(0, 5)),
    disproved=st.frozensets(_URLS),
    forms=st.none() | st.tuples(_FORMS, _FORMS),
)
def test_a_page_that_defers_stays_a_copy_unless_its_hint_is_disproved(
    kept: ClusterPage,
    new: ClusterPage,
    votes: dict[str, int],
    disproved: frozenset[str],
    forms: tuple[UrlForm, UrlForm] | None,
) -> None:
    # the store decides such a page on whether its hint is disproved alone, before it reads
    # the kept page, the votes or the rules (store/supersede.py): nothing else may matter
    prefers = prefers_new(
        kept, new, votes, disproved=disproved, forms=None if forms is None else lambda: forms
    )
    if defers(new) and new.declared not in disproved:
        assert not prefers
    assert defers(new) == (new.declared not in (None, new.url))
