"""What the store knows beyond the cluster's hints when the keep policy (core/keep.py) runs:
which declared canonicals it can show to be wrong, and the URL rules' forms of two URLs.

- A hint is *disproved* when the URL it names is stored as another page: a kept page that
  is not the cluster's, or a logged copy of another kept page. The content check called that
  page different, so the hint names no member of the cluster (a template naming the home
  page, a translation naming the original).
- The URL rules a keep decision uses are the universal ones (minus those a host retired or
  banned) and the host's learned rules that are not retired or banned: candidates too, as
  the content check already called the two pages copies. Where a rule and its reverse are
  both stored, the stronger one (state, then support) counts; on a tie neither does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import Connection, inspect, select

from simhash_filter.core.keep import UrlForm
from simhash_filter.urls.rules import LEARNED_KINDS, RuleState, UrlRule
from simhash_filter.urls.ruleset import RuleSet, url_host

from .schema import duplicates_table, pages_table, url_rules_table

__all__ = ["disproved_hints", "keep_ruleset", "rule_forms"]

_RANK = {RuleState.PINNED: 3, RuleState.ACTIVE: 2, RuleState.CANDIDATE: 1}
"""Learned rules a keep decision uses, strongest first (retired and banned: none)."""
_EXEMPTING = (RuleState.RETIRED.value, RuleState.BANNED.value)


def disproved_hints(conn: Connection, page_id: int, hints: Collection[str]) -> set[str]:
    """The ``hints`` (canonical URLs) stored as a page other than the kept page ``page_id``
    and its logged copies (see the module doc)."""
    if not hints:
        return set()
    p, d = pages_table.c, duplicates_table.c
    urls = sorted(hints)
    members: set[str] = set()
    elsewhere: set[str] = set()
    kept = select(p.url, p.id).where(p.url.in_(urls), p.dropped_at.is_(None))
    logged = select(d.url, d.duplicate_of).where(d.url.in_(urls))
    for url, owner in [*conn.execute(kept), *conn.execute(logged)]:
        (members if owner == page_id else elsewhere).add(url)
    return elsewhere - members


def keep_ruleset(rows: Sequence[tuple[str, str, str, str, int]]) -> RuleSet:
    """The rules of a keep decision from stored ``(host, kind, pattern, state, support)``
    rows (see the module doc)."""
    learned: dict[UrlRule, tuple[int, int]] = {}
    exempt = []
    for host, kind, pattern, state, count in rows:
        rule = UrlRule(host, kind, pattern)
        if kind not in LEARNED_KINDS:
            if state in _EXEMPTING:
                exempt.append(rule)
        elif (rank := _RANK.get(RuleState(state))) is not None:
            learned[rule] = (rank, count)
    rules = []
    for rule, strength in learned.items():
        reverse = learned.get(rule.reverse) if rule.reverse is not None else None
        if reverse is None or strength > reverse:
            rules.append(rule)
    return RuleSet(rules, exempt=exempt)


def rule_forms(conn: Connection, kept: str, new: str) -> tuple[UrlForm, UrlForm]:
    """The forms of the kept and the new URL under the rules of the kept URL's host."""
    r = url_rules_table.c
    rows: list[tuple[str, str, str, str, int]] = []
    if inspect(conn).has_table(url_rules_table.name):  # a database made before schema 5
        query = select(r.host, r.kind, r.pattern, r.state, r.support)
        found = conn.execute(query.where(r.host == url_host(kept)).order_by(r.id))
        rows = [(h, k, p, s, int(n)) for h, k, p, s, n in found]
    ruleset = keep_ruleset(rows)
    kept_form, new_form = ruleset.form(kept), ruleset.form(new)
    return UrlForm(kept_form.url, len(kept_form.rules)), UrlForm(new_form.url, len(new_form.rules))
