"""Learned rule kinds: what they map, what pairs teach them, and what never becomes one."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simhash_filter.urls.learning import (
    apply_rule,
    candidate_rules,
    learn_from_pairs,
    maps_together,
)
from simhash_filter.urls.rules import CASE, PARAM, PREFIX, SUFFIX, RuleState, UrlRule
from simhash_filter.urls.ruleset import REASON_RULE, RuleSet
from simhash_filter.urls.sampling import is_sampled, sample_key

H = "site.example"


@pytest.mark.parametrize(
    ("first", "second", "rule"),
    [
        (f"http://{H}/print/2024/x", f"http://{H}/2024/x", UrlRule(H, PREFIX, "/print/ -> /")),
        (f"http://{H}/amp/a/b", f"http://{H}/a/b", UrlRule(H, PREFIX, "/amp/ -> /")),
        (
            f"http://{H}/mirror/a/b",
            f"http://{H}/news/a/b",
            UrlRule(H, PREFIX, "/mirror/ -> /news/"),
        ),
        (f"http://{H}/a/index.html", f"http://{H}/a/", UrlRule(H, SUFFIX, "/index.html -> /")),
        (f"http://{H}/x/amp", f"http://{H}/x", UrlRule(H, SUFFIX, "/amp -> ")),
        (f"http://{H}/News/A", f"http://{H}/news/a", UrlRule(H, CASE, "/")),
        (
            f"http://{H}/blog/a?replytocom=3",
            f"http://{H}/blog/a",
            UrlRule(H, PARAM, "/blog/?replytocom"),
        ),
    ],
)
def test_a_pair_proposes_the_rule_that_maps_it(first: str, second: str, rule: UrlRule) -> None:
    assert rule in candidate_rules(first, second)
    assert candidate_rules(second, first) == candidate_rules(first, second)  # toward the smaller
    assert apply_rule(rule, first) == apply_rule(rule, second)
    assert maps_together(rule, first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (f"http://{H}/?p=1", f"http://{H}/?p=2"),  # one parameter, two values: no rule
        (f"http://{H}/list?page=2", f"http://{H}/list?page=3"),
        (f"http://{H}/a?x=1", f"http://{H}/b?y=1"),  # path and query both differ
        (f"http://{H}/a", "http://other.example/a"),  # another host
        (f"http://{H}/a", f"https://{H}/a"),  # another scheme
        (f"http://{H}/p/123", f"http://{H}/p/456"),  # no shared tail, no extension
        (f"http://{H}/a?utm_source=x", f"http://{H}/a"),  # the universal rules cover it
    ],
)
def test_pairs_that_teach_nothing(first: str, second: str) -> None:
    assert candidate_rules(first, second) == []


def test_rules_never_cycle_toward_a_larger_url() -> None:
    for first, second in [
        (f"http://{H}/mirror/a", f"http://{H}/news/a"),
        (f"http://{H}/a/index.html", f"http://{H}/a/"),
    ]:
        for rule in candidate_rules(first, second):
            for url in (first, second):
                mapped = apply_rule(rule, url)
                assert (len(mapped), mapped) <= (len(url), url)


def test_the_ruleset_applies_rules_of_the_url_host_only() -> None:
    rules = RuleSet(
        [
            UrlRule(H, PREFIX, "/print/ -> /"),
            UrlRule(H, SUFFIX, "/amp -> "),
            UrlRule(H, PARAM, "/news/?replytocom"),
            UrlRule(H, CASE, "/"),
        ]
    )
    form = rules.form(f"http://{H}/print/News/Story/amp?replytocom=4&utm_source=x&id=3")
    assert form.url == f"http://{H}/news/story?id=3"
    assert form.reason == REASON_RULE
    assert not rules.form("http://other.example/print/a").changed
    out_of_scope = f"http://{H}/blog/a?replytocom=4"
    assert not rules.form(out_of_scope).changed  # the param rule holds under /news/ only


def test_ten_thousand_rules_on_one_host_still_map_by_lookup() -> None:
    rules = [UrlRule(H, PREFIX, f"/section-{k}/ -> /") for k in range(5000)]
    rules += [UrlRule(H, PARAM, f"/?p{k}") for k in range(5000)]
    ruleset = RuleSet(rules)
    assert ruleset.form(f"http://{H}/section-4321/a?p77=1&q=2").url == f"http://{H}/a?q=2"
    assert not ruleset.form(f"http://{H}/section-x/a?q=2").changed


def test_sampling_is_deterministic_by_path_and_about_one_in_n() -> None:
    urls = [f"http://{H}/a/{k}?x={k}" for k in range(20_000)]
    sampled = [url for url in urls if is_sampled(url, 20)]
    assert 0.04 < len(sampled) / len(urls) < 0.06
    assert all(is_sampled(url.replace(H, "127.0.0.1:8080"), 20) for url in sampled[:50])
    assert sample_key(f"http://{H}:81/a?b=1") == "/a?b=1"
    assert all(is_sampled(url, 1) for url in urls[:10])


def test_states_that_skip() -> None:
    assert {state for state in RuleState if state.skips} == {RuleState.ACTIVE, RuleState.PINNED}


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        UrlRule(H, "regex", ".*")
    with pytest.raises(ValueError, match="FROM -> TO"):
        UrlRule(H, PREFIX, "/print/")
    with pytest.raises(ValueError, match="SCOPE"):
        UrlRule(H, PARAM, "ref")


@pytest.mark.parametrize(
    "url",
    [
        "http://a.example",
        "http://A.Example:8080/x/y?b=1&a=2",
        "https://user:secret@[::1]:443/p;jsessionid=1?x=",
        "http://a.example?q=1",
        "http://xn--bcher-kva.example/%C3%A9t%C3%A9",
    ],
)
def test_the_fast_split_agrees_with_urlsplit(url: str) -> None:
    """``_split_canonical`` is a second copy of ``urlsplit`` for canonical URLs: pinned."""
    from urllib.parse import urlsplit

    from w3lib.url import canonicalize_url

    from simhash_filter.urls.ruleset import (
        _split_canonical,
        canonical_host,
        canonical_path_query,
        url_host,
    )

    canonical = canonicalize_url(url)
    parts = urlsplit(canonical)
    origin, host, path, query = _split_canonical(canonical)
    assert origin == f"{parts.scheme}://{parts.netloc}"
    assert host == (parts.hostname or "")
    assert canonical_host(canonical) == url_host(canonical)
    assert (path, query) == (parts.path or "/", parts.query)
    assert canonical_path_query(canonical) == (parts.path or "/", parts.query)


_SEGMENTS = ["a", "B", "print", "amp", "news", "News", "index.html", "mirror", ""]
_PARAMS = ["utm_source=x", "replytocom=2", "p=1", "id=7", "sid=4f9a2c7e81b3d5f0a6c2"]


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(st.sampled_from(_SEGMENTS), max_size=5),
    params=st.lists(st.sampled_from(_PARAMS), max_size=3),
)
@example(segments=["print", "news", "a"], params=[])  # a path rule's target, lower-cased after
def test_a_canonical_form_is_its_own_form(segments: list[str], params: list[str]) -> None:
    """Applying the rules to a canonical form changes nothing more: every variant reaches
    one form in one step, whatever rules are active."""
    rules = RuleSet(
        [
            UrlRule(H, PREFIX, "/print/ -> /"),
            UrlRule(H, PREFIX, "/mirror/ -> /news/"),
            UrlRule(H, PREFIX, "/print/news/ -> /News/"),  # learned from a pair, beside case
            UrlRule(H, SUFFIX, "/amp -> "),
            UrlRule(H, SUFFIX, "/index.html -> /"),
            UrlRule(H, PARAM, "/?replytocom"),
            UrlRule(H, CASE, "/"),
        ]
    )
    url = f"http://{H}/" + "/".join(segments) + ("?" + "&".join(params) if params else "")
    form = rules.form(url).url
    assert rules.form(form).url == form
    assert len(form) <= len(rules.form(url).own)  # toward the smaller URL


def test_learning_from_a_history_of_pairs_reads_them_again_under_what_qualified() -> None:
    pairs = []
    for k in range(3):
        pairs.append((f"http://{H}/a{k}/amp", f"http://{H}/a{k}"))
        pairs.append((f"http://{H}/a{k}?replytocom=1", f"http://{H}/a{k}/amp"))  # path and query
    for k in range(5):  # ?p= supported by unknown values showing the home page...
        pairs.append((f"http://{H}/?p={900 + k}", f"http://{H}/"))
    kept = {H: [f"http://{H}/", f"http://{H}/?p=1", f"http://{H}/?p=2"]}  # ...yet selects pages
    learned = {r.rule: r for r in learn_from_pairs(pairs, kept.__getitem__, min_support=3)}
    assert learned[UrlRule(H, SUFFIX, "/amp -> ")].support == 3
    replies = learned[UrlRule(H, PARAM, "/?replytocom=1")]  # one value, on three pages
    assert replies.support == 3  # found in the second pass, under /amp
    assert learned[UrlRule(H, PARAM, "/?replytocom")].support == 1
    p_rule = learned[UrlRule(H, PARAM, "/?p")]
    assert p_rule.support == 5
    assert p_rule.counterexamples == 2  # /?p=1 and /?p=2 both map onto the stored /


def test_a_parameter_pair_proposes_its_value_and_any_value_in_two_scopes() -> None:
    found = candidate_rules(f"http://{H}/news/x/?lang=en", f"http://{H}/news/x/")
    assert [rule.pattern for rule in found] == [
        "/news/x/?lang=en",
        "/news/x/?lang",
        "/news/?lang=en",
        "/news/?lang",
    ]
    lang_en = RuleSet([UrlRule(H, PARAM, "/news/?lang=en")])
    assert lang_en.form(f"http://{H}/news/y/?lang=en").url == f"http://{H}/news/y/"
    assert not lang_en.form(f"http://{H}/news/y/?lang=de").changed


def test_support_counts_distinct_witnesses() -> None:
    """A parameter's any-value rule needs several values; any other rule several pages."""
    pairs = [(f"http://{H}/news/{k}/?lang=en", f"http://{H}/news/{k}/") for k in range(4)]
    pairs += pairs  # seen again (another crawl, other tracking parameters): counts once
    learned = {
        r.rule.pattern: r.support for r in learn_from_pairs(pairs, lambda h: [], min_support=3)
    }
    assert learned["/news/?lang=en"] == 4  # four pages
    assert learned["/news/?lang"] == 1  # one value: never enough for "any value"
    replies = [(f"http://{H}/news/{k}/?replytocom={k}", f"http://{H}/news/{k}/") for k in range(3)]
    learned = {
        r.rule.pattern: r.support for r in learn_from_pairs(replies, lambda h: [], min_support=3)
    }
    assert learned["/news/?replytocom"] == 3  # three values


def test_a_pair_the_rules_in_force_explain_says_nothing_about_another_rule() -> None:
    base = [UrlRule(H, PARAM, "/news/?print=1")]
    first, second = f"http://{H}/news/x/?lang=de&print=1", f"http://{H}/news/x/?lang=de"
    assert not maps_together(UrlRule(H, PARAM, "/news/?lang"), first, second, base)
    tracking = UrlRule(H, "tracking", "utm_*")
    assert maps_together(tracking, f"http://{H}/a?utm_source=x", f"http://{H}/a")
