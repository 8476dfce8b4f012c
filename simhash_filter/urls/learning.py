"""Learning site rules from pairs of URLs whose pages the content check called copies.

:func:`candidate_rules` turns one pair (a dropped URL, the kept URL it copies; or a page and
its confirmed canonical) into the rules that would map one onto the other: one per differing
parameter when only the query differs, a prefix rule when the paths differ at the start and
share their tail segments, a suffix rule when one path extends the other, a case rule when
only case differs. Pairs that differ in host or scheme, or in both path and query, teach
nothing (conservative: one difference at a time). Every rule points from the larger URL to
the smaller one, whichever of the two was kept, so rules never cycle.

A candidate becomes a skipping rule only with enough supporting pairs and no
counterexample; :func:`maps_together` is the test both use.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from .rules import ARROW, CASE, PARAM, PREFIX, SUFFIX, UrlRule, split_query
from .ruleset import RuleSet
from .universal import SESSION, TRACKING

__all__ = ["apply_rule", "candidate_rules", "maps_together"]

_UNIVERSAL = RuleSet()  # universal rules only: pairs are compared without tracking/sessions


def _key(path: str) -> tuple[int, str]:
    return (len(path), path)


def candidate_rules(first: str, second: str) -> list[UrlRule]:
    """The rules that map one of two same-content URLs onto the other (module doc)."""
    a, b = urlsplit(_UNIVERSAL.form(first).url), urlsplit(_UNIVERSAL.form(second).url)
    host = (a.hostname or "").lower()
    if not host or host != (b.hostname or "").lower() or a.scheme != b.scheme:
        return []
    path_a, path_b = a.path or "/", b.path or "/"
    if path_a == path_b:
        return _param_rules(host, path_a, a.query, b.query) if a.query != b.query else []
    if a.query != b.query:
        return []
    if path_a.lower() == path_b.lower():
        return [UrlRule(host, CASE, "/")]
    longer, shorter = (path_a, path_b) if _key(path_a) > _key(path_b) else (path_b, path_a)
    rule = _path_rule(host, longer, shorter)
    return [] if rule is None else [rule]


def _param_rules(host: str, path: str, query_a: str, query_b: str) -> list[UrlRule]:
    """A rule per parameter one URL has and the other lacks, when every parameter they both
    have has the same value (a different value is another page, or another question)."""
    pairs_a, pairs_b = dict(split_query(query_a)), dict(split_query(query_b))
    if any(pairs_a[name] != pairs_b[name] for name in pairs_a.keys() & pairs_b.keys()):
        return []
    scope = path[: path.rfind("/") + 1] or "/"
    return [
        UrlRule(host, PARAM, f"{scope}?{name}") for name in sorted(pairs_a.keys() ^ pairs_b.keys())
    ]


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


def maps_together(rule: UrlRule, first: str, second: str, base: Sequence[UrlRule] = ()) -> bool:
    """True when ``rule`` (with the universal rules and the ``base`` rules already in force)
    gives both URLs one form and changes at least one of them: the pair is evidence about
    this rule."""
    rules = RuleSet([rule, *base])
    form_a, form_b = rules.form(first), rules.form(second)
    if form_a.url != form_b.url:
        return False
    return rule in form_a.rules or rule in form_b.rules
