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
  Only the rules that may apply to one of the two URLs are read: the host's path and
  universal rules, and its parameter rules of a parameter (and value) the URLs have, scoped
  to a folder above their paths (a site with a variant under every article holds a
  candidate per article: reading them all made each decision grow with the crawl, issue 45).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, Select, bindparam, select, union_all

from simhash_filter.core.keep import UrlForm
from simhash_filter.urls.rules import (
    LEARNED_KINDS,
    PARAM,
    RULE_KINDS,
    RuleState,
    UrlRule,
    split_query,
)
from simhash_filter.urls.ruleset import RuleSet, canonical_host, canonical_path_query

from .engine import driver_has_table, has_table
from .reading import ReadableStore, reading
from .schema import url_rules_table
from .statements import Compiled, Execute, Statements

__all__ = ["RuleForms", "disproved_hints", "host_ruleset", "keep_ruleset"]

_RANK = {RuleState.PINNED: 3, RuleState.ACTIVE: 2, RuleState.CANDIDATE: 1}
"""Learned rules a keep decision uses, strongest first (retired and banned: none)."""
_EXEMPTING = (RuleState.RETIRED.value, RuleState.BANNED.value)
_HAS_RULES = "simhash_filter.has_url_rules"
"""``Connection.info`` key: the database has the ``url_rules`` table (a table once made
stays, so only a True is remembered, by the pooled connection)."""

_r = url_rules_table.c
_OTHER_KINDS = tuple(kind for kind in RULE_KINDS if kind != PARAM)
_RULE_COLUMNS = (_r.host, _r.kind, _r.pattern, _r.state, _r.support)


def _host_rules(host: str, urls: Sequence[str]) -> tuple[Select[Any], dict[str, Any]]:
    """The query for the stored rules of ``host`` that may apply to one of ``urls`` (the
    module doc), and its parameters: the other kinds' and the parameter rules of ``urls``'
    patterns, each found through the ``(host, kind, pattern)`` index. One ``WHERE`` with an
    ``OR`` of the two made SQLite read every rule of the host, a count that grows with the
    crawl (candidates of every folder; issue 45), on every keep decision. The statements
    are built once a pattern count (a parameter a pattern: compiled once, see
    :class:`RuleForms`)."""
    patterns = _param_patterns(urls)
    if patterns is None:
        return _EVERY_HOST_RULE, {"host": host}
    params: dict[str, Any] = {"host": host}
    params.update((f"kind{i}", kind) for i, kind in enumerate(_OTHER_KINDS))
    if patterns:
        params["param"] = PARAM
        params.update((f"pattern{i}", pattern) for i, pattern in enumerate(sorted(patterns)))
    return _host_rules_of_patterns(len(patterns)), params


@functools.lru_cache(maxsize=64)
def _host_rules_of_patterns(count: int) -> Select[Any]:
    """:func:`_host_rules`' query when the URLs' ``count`` parameter patterns are known."""
    host = bindparam("host", type_=_r.host.type)
    others = [bindparam(f"kind{i}", type_=_r.kind.type) for i in range(len(_OTHER_KINDS))]
    patterns = [bindparam(f"pattern{i}", type_=_r.pattern.type) for i in range(count)]
    of_patterns = select(*_RULE_COLUMNS, _r.id).where(
        _r.host == host, _r.kind == bindparam("param", type_=_r.kind.type)
    )
    of_others = [_r.host == host, _r.kind.in_(others)]
    if not patterns:
        return select(*_RULE_COLUMNS).where(*of_others).order_by(_r.id)
    found = union_all(
        select(*_RULE_COLUMNS, _r.id).where(*of_others),
        of_patterns.where(_r.pattern.in_(patterns)),
    ).subquery()
    return select(*(found.c[c.name] for c in _RULE_COLUMNS)).order_by(found.c.id)


_EVERY_HOST_RULE = (
    select(*_RULE_COLUMNS).where(_r.host == bindparam("host", type_=_r.host.type)).order_by(_r.id)
)


def _param_patterns(urls: Iterable[str]) -> set[str] | None:
    """The patterns of the parameter rules that may apply to ``urls`` (canonical URLs): each
    parameter, with and without its value, in each folder above the path; None when a query
    is escaped (a name is decoded before it is compared: every rule is read)."""
    patterns: set[str] = set()
    for url in urls:
        path, query = canonical_path_query(url)
        if "%" in query or "+" in query:
            return None
        folders = [path[: end + 1] for end in range(len(path)) if path[end] == "/"]
        for name, value in split_query(query):
            for folder in folders:
                patterns.update((f"{folder}?{name}", f"{folder}?{name}={value}"))
    return patterns


def disproved_hints(
    execute: Execute, statements: Statements, page_id: int, hints: Collection[str]
) -> set[str]:
    """The ``hints`` (canonical URLs) stored as a page other than the kept page ``page_id``
    and its logged copies (see the module doc); ``execute`` runs SQL in the caller's
    transaction or on a cursor of its own."""
    members: set[str] = set()
    elsewhere: set[str] = set()
    compiled = statements.stored_as
    for url in sorted(hints):  # (one or two)
        for stored, owner in execute(compiled.sql, compiled.bind([url, url])):
            (members if owner == page_id else elsewhere).add(stored)
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


def _stored_ruleset(
    conn: Connection, query: Select[Any], params: dict[str, Any] | None = None
) -> RuleSet:
    rows: list[tuple[str, str, str, str, int]] = []
    if _has_rules(conn):  # not on a database made before schema 5
        rows = [(h, k, p, s, int(n)) for h, k, p, s, n in conn.execute(query, params or {})]
    return keep_ruleset(rows)


def host_ruleset(store: ReadableStore, host: str) -> RuleSet:
    """Every rule a keep decision may use on ``host`` (see the module doc), read from
    ``store``: canonical first asks them where a page declares no canonical (crawl/pages)."""
    with reading(store) as conn:
        return _stored_ruleset(conn, _EVERY_HOST_RULE, {"host": host})


class RuleForms:
    """The forms of a keep decision's kept and new URL under the rules of the kept URL's
    host, read on an :data:`Execute` (a cursor, or a connection in its transaction): the
    rules' statement compiled once a pattern count (SQLAlchemy's per-call work on the
    expanding ``IN`` cost more than SQLite's, issue 45)."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._table_seen = False  # the url_rules table, once seen (a table made stays)

    def __call__(self, execute: Execute, kept: str, new: str) -> tuple[UrlForm, UrlForm]:
        ruleset = keep_ruleset(self._rows(execute, canonical_host(kept), (kept, new)))
        kept_form, new_form = ruleset.form(kept), ruleset.form(new)
        return (
            UrlForm(kept_form.url, len(kept_form.rules)),
            UrlForm(new_form.url, len(new_form.rules)),
        )

    def _rows(
        self, execute: Execute, host: str, urls: Sequence[str]
    ) -> list[tuple[str, str, str, str, int]]:
        if not self._table_seen:  # not on a database made before schema 5
            self._table_seen = driver_has_table(execute, self._dialect.name, url_rules_table.name)
            if not self._table_seen:
                return []
        query, params = _host_rules(host, urls)
        compiled = _compiled_rules(self._dialect, query, tuple(params))
        rows = execute(compiled.sql, compiled.bind(list(params.values())))
        return [(h, k, p, s, int(n)) for h, k, p, s, n in rows]


@functools.lru_cache(maxsize=64)
def _compiled_rules(dialect: Dialect, query: Select[Any], names: tuple[str, ...]) -> Compiled:
    """A rules query of :func:`_host_rules` compiled for ``dialect`` (one a pattern count)."""
    return Compiled(query, dialect, names)


def _has_rules(conn: Connection) -> bool:
    """Whether the database has the ``url_rules`` table (asked once a pooled connection)."""
    if conn.info.get(_HAS_RULES):
        return True
    found = has_table(conn, url_rules_table.name)
    if found:
        conn.info[_HAS_RULES] = True
    return found
