"""A parameter rule that qualified in sibling scopes is proposed in their parent scope."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.urls.learning import generalized_rules, learn_from_pairs, parent_scope
from simhash_filter.urls.rules import PARAM, UrlRule
from simhash_filter.urls.ruleset import RuleSet

H = "site.example"


def _replies(month: str, posts: int = 2) -> list[tuple[str, str]]:
    """WordPress's comment-reply links: two a post, in ``/2024/<month>/``."""
    pairs = []
    for post in range(posts):
        page = f"http://{H}/2024/{month}/post-{month}-{post}/"
        pairs += [(f"{page}?replytocom={month}{post}{c}", page) for c in range(2)]
    return pairs


def _learned(pairs: list[tuple[str, str]], kept: list[str] | None = None) -> dict:
    found = learn_from_pairs(pairs, lambda host: kept or [], min_support=3)
    return {learned.rule: learned for learned in found}


def test_the_parent_scope_is_the_folder_above() -> None:
    assert parent_scope("/2024/04/") == "/2024/"
    assert parent_scope("/2024/") == "/"
    assert parent_scope("/") is None


def test_sibling_scopes_generalize_to_their_parent() -> None:
    learned = _learned(_replies("04") + _replies("07"))
    assert learned[UrlRule(H, PARAM, "/2024/04/?replytocom")].qualified
    year = learned[UrlRule(H, PARAM, "/2024/?replytocom")]
    assert year.qualified
    assert year.support == 2
    form = RuleSet([year.rule]).form(f"http://{H}/2024/10/other/?replytocom=5")
    assert form.url == f"http://{H}/2024/10/other/"  # a month not seen yet
    assert UrlRule(H, PARAM, "/?replytocom") not in learned  # one year: no sibling


def test_one_scope_alone_does_not_generalize() -> None:
    learned = _learned(_replies("04", posts=4))
    assert learned[UrlRule(H, PARAM, "/2024/04/?replytocom")].qualified
    assert UrlRule(H, PARAM, "/2024/?replytocom") not in learned


def test_a_value_rule_generalizes_to_that_value_only() -> None:
    pairs = [
        (f"http://{H}/2024/{m}/p{k}/?amp=1", f"http://{H}/2024/{m}/p{k}/")
        for m in ("04", "08")
        for k in range(3)
    ]
    learned = _learned(pairs)
    assert learned[UrlRule(H, PARAM, "/2024/?amp=1")].qualified
    assert UrlRule(H, PARAM, "/2024/?amp") not in learned  # one value: not any value
    ruleset = RuleSet([UrlRule(H, PARAM, "/2024/?amp=1")])
    assert not ruleset.form(f"http://{H}/2024/12/x/?amp=2").changed


def test_a_doubted_rule_of_the_parameter_inside_or_around_blocks_it() -> None:
    siblings = [UrlRule(H, PARAM, "/2024/04/?page"), UrlRule(H, PARAM, "/2024/07/?page")]
    assert set(generalized_rules(siblings)) == {UrlRule(H, PARAM, "/2024/?page")}
    inside = UrlRule(H, PARAM, "/2024/10/list/?page=2")  # selects content under /2024/
    assert generalized_rules(siblings, [inside]) == {}
    around = UrlRule(H, PARAM, "/?page")
    assert generalized_rules(siblings, [around]) == {}
    elsewhere = UrlRule(H, PARAM, "/shop/?page")
    assert set(generalized_rules(siblings, [elsewhere])) == {UrlRule(H, PARAM, "/2024/?page")}
    other_name = UrlRule(H, PARAM, "/2024/10/?lang")
    assert set(generalized_rules(siblings, [other_name])) == {UrlRule(H, PARAM, "/2024/?page")}


def test_the_same_path_shape_changing_content_is_a_counterexample() -> None:
    """``?page`` changes nothing on the posts of April and July, but selects the page of
    October's listing: with both October pages stored, the year's rule never qualifies."""
    pairs = [
        (f"http://{H}/2024/{m}/p{k}/?page={k}", f"http://{H}/2024/{m}/p{k}/")
        for m in ("04", "07")
        for k in range(3)
    ]
    kept = [f"http://{H}/2024/10/list/", f"http://{H}/2024/10/list/?page=2"]
    learned = _learned(pairs, kept)
    assert learned[UrlRule(H, PARAM, "/2024/04/?page")].qualified
    year = learned[UrlRule(H, PARAM, "/2024/?page")]
    assert not year.qualified
    assert year.counterexamples == 1
    assert UrlRule(H, PARAM, "/?page") not in learned  # nothing above a doubted rule


def test_generalization_climbs_while_siblings_agree() -> None:
    pairs = []
    for year in ("2023", "2024"):
        for month in ("04", "07"):
            page = f"http://{H}/{year}/{month}/p/"
            pairs += [(f"{page}?replytocom={year}{month}{c}", page) for c in range(3)]
    learned = _learned(pairs)
    assert learned[UrlRule(H, PARAM, "/2023/?replytocom")].qualified
    assert learned[UrlRule(H, PARAM, "/?replytocom")].qualified


def test_sibling_candidates_pool_their_distinct_witnesses() -> None:
    """A month with one reply pair and a month with two: neither qualifies alone, the year
    does (three distinct values in two sibling scopes)."""
    pairs = _replies("04", posts=1)[:1] + _replies("07", posts=1)
    learned = _learned(pairs)
    assert not learned[UrlRule(H, PARAM, "/2024/04/?replytocom")].qualified
    assert not learned[UrlRule(H, PARAM, "/2024/07/?replytocom")].qualified
    assert learned[UrlRule(H, PARAM, "/2024/?replytocom")].qualified
    assert UrlRule(H, PARAM, "/2024/?replytocom") not in _learned(pairs[1:])  # one month


def test_pooling_counts_a_value_seen_in_several_scopes_once() -> None:
    """``?amp=1`` on one post in each of three months: three pages (the value's rule pools),
    but one value (the any-value rule must not)."""
    months = ("04", "07", "10")
    pairs = [(f"http://{H}/2024/{m}/p/?amp=1", f"http://{H}/2024/{m}/p/") for m in months]
    learned = _learned(pairs)
    assert learned[UrlRule(H, PARAM, "/2024/?amp=1")].qualified
    assert UrlRule(H, PARAM, "/2024/?amp") not in learned


def test_a_parent_with_pairs_of_its_own_is_not_pooled_again() -> None:
    """``/2024/04/`` is a scope of the pairs themselves: its support is its own witnesses,
    never the sum of the posts under it."""
    candidates = {
        UrlRule(H, PARAM, "/2024/04/a/?amp"): 1,
        UrlRule(H, PARAM, "/2024/04/b/?amp"): 1,
        UrlRule(H, PARAM, "/2024/04/c/?amp"): 1,
        UrlRule(H, PARAM, "/2024/04/?amp"): 1,
    }
    asked: list[list[UrlRule]] = []

    def witnesses_of(rules: object) -> dict[UrlRule, set[str]]:
        asked.append(list(rules))  # type: ignore[call-overload]
        return {rule: {"amp=1"} for rule in rules}  # type: ignore[attr-defined]

    found = generalized_rules([], candidates=candidates, witnesses_of=witnesses_of, min_support=3)
    assert found == {}
    assert asked == []  # the parent is a candidate: no witnesses read


def test_pooled_support_below_the_threshold_reads_no_witnesses() -> None:
    candidates = {UrlRule(H, PARAM, "/2024/04/?x"): 1, UrlRule(H, PARAM, "/2024/07/?x"): 1}

    def witnesses_of(rules: object) -> dict[UrlRule, set[str]]:
        raise AssertionError("supports add up to 2 < 3: nothing to read")

    found = generalized_rules([], candidates=candidates, witnesses_of=witnesses_of, min_support=3)
    assert found == {}
    three = {**candidates, UrlRule(H, PARAM, "/2024/10/?x"): 1}
    found = generalized_rules(
        [],
        candidates=three,
        witnesses_of=lambda rules: {rule: {f"x={rule.scope}"} for rule in rules},
        min_support=3,
    )
    assert set(found) == {UrlRule(H, PARAM, "/2024/?x")}


_NAME = st.sampled_from(["p", "page", "replytocom", "amp", "lang", "id", "ref", "sid", "q"])
_VALUE = st.text(alphabet="ab1%2 +=&é", max_size=4)


@settings(deadline=None)
@given(
    path=st.sampled_from(["/", "/news/a/", "/2024/04/x/", "/view.php", "/News/A/index.html"]),
    query=st.lists(st.tuples(_NAME, _VALUE), max_size=4),
    name=_NAME,
    value=st.one_of(st.none(), _VALUE.filter(lambda v: "=" not in v and "&" not in v)),
    raw=st.booleans(),
)
def test_a_rule_that_may_not_change_a_url_leaves_it_as_it_is(
    path: str, query: list[tuple[str, str]], name: str, value: str | None, raw: bool
) -> None:
    """The learner skips the rule sets of a parameter rule whose name is not in the URL: the
    full test must agree, for escaped and raw queries alike."""
    from urllib.parse import urlencode

    from simhash_filter.urls.key import canonical_url
    from simhash_filter.urls.learning import apply_rule, maps_together, may_change

    escaped = [(f"%{ord(k[0]):02X}{k[1:]}", v) for k, v in query]  # `%72eplytocom`
    text = "&".join(f"{k}={v}" for k, v in (escaped if raw else [])) or urlencode(query)
    url = f"http://{H}{path}" + (f"?{text}" if text else "")
    page = canonical_url(url)
    rule = UrlRule(H, PARAM, f"/?{name}" + ("" if value is None else f"={value}"))
    for target in (url, page):
        if not may_change(rule, target):
            assert apply_rule(rule, target) == apply_rule(rule, page) == page
            assert not maps_together(rule, target, f"http://{H}/other/")
