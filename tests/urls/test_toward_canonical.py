"""Rules point toward the URL the canonical hints name, and never make a cycle."""

from __future__ import annotations

from simhash_filter.urls.learning import candidate_rules, learn_from_pairs
from simhash_filter.urls.rules import SUFFIX, UrlRule
from simhash_filter.urls.ruleset import RuleSet

H = "site.example"
SLASH_OFF = UrlRule(H, SUFFIX, "/ -> ")
SLASH_ON = UrlRule(H, SUFFIX, " -> /")


def _pairs(toward_slash: bool, count: int = 4) -> list[tuple[str, str, str | None]]:
    """``/news/k`` dropped as a copy of ``/news/k/``, the hints naming the one with the
    slash (or, ``toward_slash`` False, none)."""
    return [
        (
            f"http://{H}/news/{k}",
            f"http://{H}/news/{k}/",
            f"http://{H}/news/{k}/" if toward_slash else None,
        )
        for k in range(count)
    ]


def test_without_hints_a_rule_maps_the_larger_url_to_the_smaller() -> None:
    index = UrlRule(H, SUFFIX, "/index.html -> /")
    assert candidate_rules(f"http://{H}/news/x/index.html", f"http://{H}/news/x/") == [index]


def test_without_hints_the_trailing_slash_is_not_learned() -> None:
    """Which of ``/x`` and ``/x/`` a site keeps is its convention: only its hints tell."""
    assert candidate_rules(f"http://{H}/news/x/", f"http://{H}/news/x") == []
    assert candidate_rules(f"http://{H}/news/x", f"http://{H}/news/x/") == []
    learned = learn_from_pairs(_pairs(False), lambda h: [], min_support=3)
    assert SLASH_OFF not in {r.rule for r in learned}


def test_a_rule_learned_from_hinted_pairs_maps_toward_the_url_the_hints_name() -> None:
    canonical = f"http://{H}/news/x/"
    for first, second in ((f"http://{H}/news/x", canonical), (canonical, f"http://{H}/news/x")):
        assert candidate_rules(first, second, toward=canonical) == [SLASH_ON]
    learned = {r.rule: r for r in learn_from_pairs(_pairs(True), lambda h: [], min_support=3)}
    assert set(learned) == {SLASH_ON}
    rules = RuleSet([SLASH_ON])
    assert rules.form(f"http://{H}/news/y").url == f"http://{H}/news/y/"
    assert not rules.form(f"http://{H}/news/y/").changed  # the canonical itself: unchanged
    assert not rules.form(f"http://{H}/view.php?id=3").changed  # a file: no slash added


def test_a_hinted_url_is_never_mapped_away() -> None:
    """No rule is proposed that would map the URL the hints name onto another one."""
    variant = f"http://{H}/news/x/index.html"
    assert candidate_rules(variant, f"http://{H}/news/x/", toward=variant) == []
    assert (
        candidate_rules(
            f"http://{H}/news/x/?lang=de",
            f"http://{H}/news/x/",
            toward=f"http://{H}/news/x/?lang=de",
        )
        == []
    )
    assert candidate_rules(
        f"http://{H}/news/x/index.html", f"http://{H}/news/x/", toward=f"http://{H}/news/x/"
    ) == [UrlRule(H, SUFFIX, "/index.html -> /")]


def test_a_rule_whose_reverse_is_in_force_never_qualifies() -> None:
    """``/ -> `` in force (a user's pin, an older crawl's rule): hinted pairs propose its
    reverse, which is counted but never qualifies: no cycle."""
    learned = learn_from_pairs(_pairs(True), lambda h: [], min_support=3, base=[SLASH_OFF])
    (reverse,) = learned
    assert (reverse.rule, reverse.support, reverse.qualified) == (SLASH_ON, 4, False)
    # pairs without hints first (a site's hint-less or misconfigured pages) no longer make
    # the slash's removal active ahead of the direction the hints show
    mixed = _pairs(False) + [(a, b, t) for a, b, t in _pairs(True, 8)[4:]]
    both = {r.rule: r for r in learn_from_pairs(mixed, lambda h: [], min_support=3)}
    assert SLASH_OFF not in both
    assert both[SLASH_ON].support >= 3
    assert [r for r in both.values() if r.qualified] == [both[SLASH_ON]]
    assert SLASH_ON.reverse == SLASH_OFF
    assert SLASH_OFF.reverse == SLASH_ON
    assert UrlRule(H, SUFFIX, "/amp -> ").reverse is None  # would add /amp to every path
