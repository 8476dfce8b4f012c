"""Learning site rules from pairs of URLs whose pages the content check called copies.

:func:`candidate_rules` turns one pair (a dropped URL, the kept URL it copies; or a page and
its confirmed canonical) into the rules that would map one onto the other: one per differing
parameter when only the query differs, a prefix rule when the paths differ at the start and
share their tail segments, a suffix rule when one path extends the other, a case rule when
only case differs. Pairs that differ in host or scheme, or in both path and query, teach
nothing (conservative: one difference at a time). Every rule points from the larger URL to
the smaller one, whichever of the two was kept, unless the pages' canonical hints name the
larger one: then the rule points toward it (`` -> /``, the trailing slash), and a rule whose
reverse is in force is never made active, so rules never cycle. The trailing slash alone is
learned from hinted pairs only: "shorter" says nothing about it (WordPress keeps the slash,
many sites drop it), and a wrong first guess, once active, would block the right one.

A candidate becomes a skipping rule only with enough supporting pairs and no
counterexample; :func:`maps_together` is the test both use. A parameter rule that qualified
in sibling scopes, or whose sibling candidates have enough distinct witnesses together, is
proposed one step up the pattern tree (:func:`generalized_rules`), so a site whose posts
live in ``/2024/MM/`` learns ``?replytocom`` once, not once a month.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from .rules import ARROW, CASE, PARAM, PREFIX, SUFFIX, UrlRule, split_query
from .ruleset import RuleSet
from .universal import SESSION, TRACKING

__all__ = [
    "MIN_SIBLINGS",
    "LearnedRule",
    "Witnesses",
    "apply_rule",
    "candidate_rules",
    "generalized_rules",
    "learn_from_pairs",
    "maps_together",
    "may_change",
    "parent_scope",
    "witness",
]

_UNIVERSAL = RuleSet()  # universal rules only: pairs are compared without tracking/sessions
_MAX_ROUNDS = 4  # passes over the pairs in learn_from_pairs
MIN_SIBLINGS = 2
"""Sibling scopes in which a parameter rule qualified before it is proposed in their parent."""


def _key(path: str) -> tuple[int, str]:
    return (len(path), path)


def candidate_rules(first: str, second: str, toward: str | None = None) -> list[UrlRule]:
    """The rules that map one of two same-content URLs onto the other (module doc).
    ``toward``: the URL of the two that the pages' canonical hints name; a rule then maps
    toward it (the trailing slash added), and no rule is proposed that would map it away."""
    a, b = urlsplit(_UNIVERSAL.form(first).url), urlsplit(_UNIVERSAL.form(second).url)
    host = (a.hostname or "").lower()
    if not host or host != (b.hostname or "").lower() or a.scheme != b.scheme:
        return []
    hinted = _UNIVERSAL.form(toward).url if toward is not None else None
    if hinted not in (a.geturl(), b.geturl()):
        hinted = None
    rules = _unhinted_rules(host, a.path or "/", b.path or "/", a.query, b.query)
    slash = UrlRule(host, SUFFIX, f"{ARROW}/")  # `/ -> ` reversed: the hints name `/x/`
    if hinted is None:  # shorter is no evidence for the slash: sites keep it either way
        return [rule for rule in rules if rule.reverse != slash]
    kept = [rule for rule in rules if apply_rule(rule, hinted) == hinted]
    if kept or len(rules) != 1 or rules[0].reverse != slash:
        return kept  # a rule that would map the hinted URL away is not proposed
    other = (b if a.geturl() == hinted else a).path or "/"
    return [slash] if slash.apply_path(other) == (urlsplit(hinted).path or "/") else []


def _unhinted_rules(
    host: str, path_a: str, path_b: str, query_a: str, query_b: str
) -> list[UrlRule]:
    """The rules from the larger URL to the smaller one (:func:`candidate_rules`)."""
    if path_a == path_b:
        return _param_rules(host, path_a, query_a, query_b) if query_a != query_b else []
    if query_a != query_b:
        return []
    if path_a.lower() == path_b.lower():
        return [UrlRule(host, CASE, "/")]
    longer, shorter = (path_a, path_b) if _key(path_a) > _key(path_b) else (path_b, path_a)
    rule = _path_rule(host, longer, shorter)
    return [] if rule is None else [rule]


def _scopes(path: str) -> list[str]:
    """Where a parameter rule learned on ``path`` may hold: the path's folder and the folder
    above it (``/news/a/`` → ``/news/a/``, ``/news/``; the pattern tree's first step up)."""
    folder = path[: path.rfind("/") + 1] or "/"
    scopes = [folder]
    if folder != "/":
        scopes.append(folder[: folder.rstrip("/").rfind("/") + 1] or "/")
    return scopes


def _param_rules(host: str, path: str, query_a: str, query_b: str) -> list[UrlRule]:
    """Rules per parameter one URL has and the other lacks, when every parameter they both
    have has the same value (a different value is another page, or another question): the
    parameter with this value, and with any value, each in the scopes of :func:`_scopes`."""
    pairs_a, pairs_b = dict(split_query(query_a)), dict(split_query(query_b))
    if any(pairs_a[name] != pairs_b[name] for name in pairs_a.keys() & pairs_b.keys()):
        return []
    values = {**pairs_a, **pairs_b}
    rules = []
    for name in sorted(pairs_a.keys() ^ pairs_b.keys()):
        for scope in _scopes(path):
            rules.append(UrlRule(host, PARAM, f"{scope}?{name}={values[name]}"))
            rules.append(UrlRule(host, PARAM, f"{scope}?{name}"))
    return rules


def parent_scope(scope: str) -> str | None:
    """The folder above ``scope`` (``/2024/04/`` → ``/2024/``; ``/`` → None)."""
    if scope == "/" or not scope.endswith("/"):
        return None
    return scope[: scope.rstrip("/").rfind("/") + 1] or "/"


Witnesses = Callable[[Sequence[UrlRule]], Mapping[UrlRule, Collection[str]]]
"""The stored witnesses of some rules (:func:`generalized_rules` pools its candidates')."""


def generalized_rules(
    qualified: Iterable[UrlRule],
    doubted: Iterable[UrlRule] = (),
    *,
    min_siblings: int = MIN_SIBLINGS,
    candidates: Mapping[UrlRule, int] | None = None,
    witnesses_of: Witnesses | None = None,
    min_support: int = 1,
) -> dict[UrlRule, tuple[str, ...]]:
    """Parameter rules one step up the pattern tree (Lei et al., WWW 2010): ``A?name`` (or
    ``A?name=value``) when rules of that parameter and value hold in at least
    ``min_siblings`` scopes directly under ``A`` (``/2024/04/?replytocom`` and
    ``/2024/07/?replytocom`` → ``/2024/?replytocom``), and no ``doubted`` rule of that
    parameter (a counterexample, retired, banned) has a scope inside ``A`` or around it: the
    parameter selects content somewhere there. Each sibling is a ``qualified`` rule, or else
    a rule of ``candidates`` (rule → support) when their witnesses (``witnesses_of``) come to
    ``min_support`` distinct ones together, and ``A``'s rule is not a candidate already (its
    own pairs count it): a month with one reply pair and a month with two make the year's
    rule, where neither month alone would qualify. Value: the sibling scopes (the new rule's
    witnesses). A proposal is a candidate like any other: checked against the stored pages,
    sampled, retired by one counterexample."""
    known = set(qualified)
    pooled = {
        rule: support
        for rule, support in (candidates or {}).items()
        if support > 0 and rule not in known and witnesses_of is not None
    }
    groups: dict[tuple[str, str, str | None, str], list[UrlRule]] = defaultdict(list)
    for rule in [*known, *pooled]:
        parent = parent_scope(rule.scope) if rule.kind == PARAM else None
        if parent is not None:
            groups[(rule.host, rule.parameter, rule.value, parent)].append(rule)
    against: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rule in doubted:
        if rule.kind == PARAM:
            against[(rule.host, rule.parameter)].append(rule.scope)
    proposed: dict[UrlRule, tuple[str, ...]] = {}
    for (host, name, value, parent), members in sorted(groups.items(), key=str):
        scopes = {rule.scope for rule in members}
        if len(scopes) < min_siblings:
            continue
        doubts = against.get((host, name), ())
        if any(s.startswith(parent) or parent.startswith(s) for s in doubts):
            continue
        rule = UrlRule(host, PARAM, f"{parent}?{name}" + ("" if value is None else f"={value}"))
        if rule in known:
            continue
        enough = len({r.scope for r in members if r in known}) >= min_siblings
        if not enough and (
            rule in pooled or not _pooled_support(members, known, pooled, witnesses_of, min_support)
        ):
            continue
        proposed[rule] = tuple(sorted(scopes))
    return proposed


def _pooled_support(
    members: Sequence[UrlRule],
    known: set[UrlRule],
    pooled: Mapping[UrlRule, int],
    witnesses_of: Witnesses | None,
    min_support: int,
) -> bool:
    """Whether siblings that are not all qualified have the support of one rule together:
    any qualified one carries it; else their distinct witnesses (asked only when their
    supports could add up to it)."""
    if any(rule in known for rule in members):
        return True
    if witnesses_of is None or sum(pooled[rule] for rule in members) < min_support:
        return False
    seen: set[str] = set()
    for found in witnesses_of(members).values():
        seen.update(found)
    return len(seen) >= min_support


def witness(rule: UrlRule, first: str, second: str) -> str | None:
    """What a pair that supports ``rule`` shows: for a parameter rule of any value, the
    value (a rule for any value needs pairs with several values; None when neither URL has
    the parameter: the pair says nothing about its values), else the page the pair maps
    onto (a rule needs pairs onto several pages). Support counts distinct witnesses, so one
    pair seen again, under other tracking parameters or in another crawl, counts once."""
    a, b = _UNIVERSAL.form(first).url, _UNIVERSAL.form(second).url
    if rule.kind == PARAM and rule.value is None:
        for url in (a, b):
            for name, value in split_query(urlsplit(url).query):
                if name == rule.parameter:
                    return f"{name}={value}"
        return None
    return min(apply_rule(rule, a), apply_rule(rule, b), key=_key_url)


def _key_url(url: str) -> tuple[int, str]:
    return (len(url), url)


def _path_rule(host: str, longer: str, shorter: str) -> UrlRule | None:
    """A suffix rule when ``longer`` extends ``shorter`` at a segment boundary, else a
    prefix rule when they share their last segments; None when neither."""
    if longer.startswith(shorter):
        rest = longer[len(shorter) :]
        if shorter.endswith("/"):
            return UrlRule(host, SUFFIX, f"/{rest}{ARROW}/")
        if rest.startswith("/"):
            return UrlRule(host, SUFFIX, f"{rest}{ARROW}")
        return None
    segments_l, segments_s = longer[1:].split("/"), shorter[1:].split("/")
    common = 0
    while (
        common < min(len(segments_l), len(segments_s))
        and segments_l[-1 - common] == segments_s[-1 - common]
    ):
        common += 1
    if common == 0:
        return None
    head_l = segments_l[: len(segments_l) - common]
    head_s = segments_s[: len(segments_s) - common]
    source = "/" + "".join(segment + "/" for segment in head_l)
    target = "/" + "".join(segment + "/" for segment in head_s)
    return UrlRule(host, PREFIX, f"{source}{ARROW}{target}")


def apply_rule(rule: UrlRule, url: str) -> str:
    """``url`` (canonical) under one rule alone (a universal one takes out its own
    parameter only)."""
    if rule.kind in (TRACKING, SESSION):
        form = _UNIVERSAL.form(url)
        if rule not in form.rules:
            return form.own
        others = [other for other in form.rules if other != rule]
        return RuleSet(exempt=others).form(url).url
    return RuleSet([rule], universal=False).form(url).url


def may_change(rule: UrlRule, url: str) -> bool:
    """False only when ``rule`` certainly leaves ``url`` as it is: a learned parameter rule
    whose parameter's name is nowhere in the URL (no rule in force ever adds a parameter).
    A cheap test before :func:`apply_rule` and :func:`maps_together`, which build rule sets:
    the learner asks it for every rule of a host, on every page."""
    if rule.kind != PARAM or "%" in url or "+" in url:
        return True  # an escaped name is decoded before it is compared: the full test decides
    return rule.parameter in url


def maps_together(rule: UrlRule, first: str, second: str, base: Sequence[UrlRule] = ()) -> bool:
    """True when ``rule`` (with the universal rules and the ``base`` rules already in force)
    gives both URLs one form and changes at least one of them: the pair is evidence about
    this rule."""
    if not (may_change(rule, first) or may_change(rule, second)):
        return False
    before = RuleSet(base, exempt=[rule] if rule.kind in (TRACKING, SESSION) else [])
    if before.form(first).url == before.form(second).url:
        return False  # the rules in force map the pair together already: nothing about this one
    rules = RuleSet([rule, *base])
    form_a, form_b = rules.form(first), rules.form(second)
    if form_a.url != form_b.url:
        return False
    return rule in form_a.rules or rule in form_b.rules


@dataclass(frozen=True, slots=True)
class LearnedRule:
    """A rule learned from a history of pairs: its supporting pairs, and the pairs of stored
    pages of its host it maps together (counterexamples)."""

    rule: UrlRule
    support: int
    counterexamples: int
    qualified: bool = False
    """Enough support, no counterexample, and its reverse not in force: it may be active."""


def learn_from_pairs(
    pairs: Sequence[tuple[str, str] | tuple[str, str, str | None]],
    kept_urls: Callable[[str], Sequence[str]],
    *,
    min_support: int,
    base: Sequence[UrlRule] = (),
) -> list[LearnedRule]:
    """Every rule the pairs (dropped URL, kept URL) propose, with its support, checked
    against the stored pages of its host (``kept_urls(host)``: two of them the rule maps
    together are a counterexample each). The pairs are read again under the rules that
    qualify (``min_support`` pairs, no counterexample) until no new one does, so
    ``/a?reply=2`` against ``/a/amp`` teaches the parameter once ``/amp`` qualifies. A pair
    may carry a third URL, the one of the two its pages' canonical hints name (the rules
    then map toward it); a rule whose reverse qualified first never qualifies (no cycle)."""
    found: dict[UrlRule, LearnedRule] = {}
    qualified = list(base)
    for _ in range(_MAX_ROUNDS):
        normalize = RuleSet(qualified)
        witnesses: dict[UrlRule, set[str]] = {}
        for pair in pairs:
            first, second = pair[0], pair[1]
            toward = pair[2] if len(pair) > 2 else None
            mapped = (normalize.form(first).url, normalize.form(second).url)
            hints = (toward, normalize.form(toward).url if toward is not None else None)
            for (a, b), hint in zip(((first, second), mapped), hints, strict=True):
                for rule in candidate_rules(a, b, hint):
                    seen = witness(rule, a, b)
                    if seen is not None:
                        witnesses.setdefault(rule, set()).add(seen)
        new = [rule for rule in witnesses if rule not in found]
        for rule in new:
            found[rule] = LearnedRule(
                rule, len(witnesses[rule]), _collisions(rule, kept_urls(rule.host))
            )
        more: list[UrlRule] = []
        for r in new:
            ready = found[r].support >= min_support and not found[r].counterexamples
            if ready and r.reverse not in qualified and r.reverse not in more:
                more.append(r)
        more += _generalize(found, [*qualified, *more], kept_urls, min_support, witnesses)
        if not more:
            break
        qualified.extend(more)
    passed = set(qualified) - set(base)
    result = [replace(learned, qualified=learned.rule in passed) for learned in found.values()]
    return sorted(result, key=lambda learned: (-learned.support, learned.rule.describe()))


def _generalize(
    found: dict[UrlRule, LearnedRule],
    qualified: Sequence[UrlRule],
    kept_urls: Callable[[str], Sequence[str]],
    min_support: int,
    witnesses: Mapping[UrlRule, Collection[str]],
) -> list[UrlRule]:
    """The rules :func:`generalized_rules` proposes from ``qualified`` and the candidates of
    ``found`` (into ``found``, support the sibling scopes), checked against the stored pages:
    those with no collision qualify."""
    doubted = [learned.rule for learned in found.values() if learned.counterexamples]
    candidates = {
        learned.rule: learned.support for learned in found.values() if not learned.counterexamples
    }
    more: list[UrlRule] = []
    while True:
        proposed = generalized_rules(
            [*qualified, *more],
            doubted,
            candidates=candidates,
            witnesses_of=lambda rules: {rule: witnesses.get(rule, ()) for rule in rules},
            min_support=min_support,
        )
        fresh = {rule: scopes for rule, scopes in proposed.items() if rule not in more}
        if not fresh:
            return more
        for rule, scopes in fresh.items():
            before = found.get(rule)
            support = max(len(scopes), before.support if before else 0)
            found[rule] = LearnedRule(rule, support, _collisions(rule, kept_urls(rule.host)))
            if found[rule].counterexamples:
                doubted.append(rule)
            else:
                more.append(rule)


def _collisions(rule: UrlRule, kept: Sequence[str]) -> int:
    """Stored pages ``rule`` maps onto another stored page's form."""
    known = set(kept)
    images: dict[str, str] = {}
    found = 0
    for url in kept:
        image = apply_rule(rule, url)
        if image == url:
            continue
        if image in known or image in images:
            found += 1
        images.setdefault(image, url)
    return found
