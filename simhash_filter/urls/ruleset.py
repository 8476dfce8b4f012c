"""The rules a crawl applies, indexed so that one request costs a few dictionary lookups.

:meth:`RuleSet.form` is the request side's hot path: the URL canonicalized by w3lib (what
Scrapy's own fingerprint uses), universal parameters out (unless a host has retired or banned
one), then the host's skipping rules. Rules are indexed by host and, within a host, by what
they match (a prefix rule by its prefix, a suffix rule by its suffix, a param rule by its
name), so the cost grows with the URL's depth and parameters, not with the number of rules.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .canonicalize import canonicalize
from .rules import CASE, PARAM, PREFIX, SUFFIX, UrlRule, split_query
from .universal import SESSION, TRACKING, classify_parameter

__all__ = [
    "REASON_RULE",
    "RuleSet",
    "UrlForm",
    "canonical_host",
    "canonical_path_query",
    "url_host",
]

REASON_RULE = "rule"
"""The skip reason of a learned rule (universal ones give ``tracking`` or ``session``)."""
_PATH_SESSION = re.compile(r";jsessionid=[^/;?]*", re.IGNORECASE)
JSESSIONID = "jsessionid"
_MAX_PASSES = 4
"""Path rules are applied again while they change the path (``/amp/print/x``): at least
this many passes, and one more a path segment (``/x/amp/amp/amp``), so a form is a fixed point."""


def _split_canonical(url: str) -> tuple[str, str, str, str]:
    """(``scheme://netloc``, host, path, query) of a URL w3lib canonicalized (no fragment):
    string slicing, a third of ``urlsplit``'s cost on the hot path."""
    start = url.find("://")
    if start < 0:
        parts = urlsplit(url)
        return url, (parts.hostname or "").lower(), parts.path, parts.query
    slash = url.find("/", start + 3)
    question = url.find("?", start + 3)
    if slash < 0 or (0 <= question < slash):
        slash = question if question >= 0 else len(url)
    origin = url[:slash]
    rest = url[slash:]
    path, _, query = rest.partition("?")
    netloc = origin[start + 3 :].rpartition("@")[2]
    host = netloc[1 : netloc.find("]")] if netloc.startswith("[") else netloc.partition(":")[0]
    return origin, host.lower(), path or "/", query


def canonical_host(url: str) -> str:
    """The lower-case host name of a URL w3lib canonicalized: :func:`url_host` by string
    slicing, on the hot path (a test pins the two together)."""
    return _split_canonical(url)[1]


def canonical_path_query(url: str) -> tuple[str, str]:
    """The path (``/`` when empty) and query of a URL w3lib canonicalized, by string
    slicing: ``urlsplit``'s on the keep decision's path (a test pins the two together)."""
    _origin, _host, path, query = _split_canonical(url)
    return path, query


def url_host(url: str) -> str:
    """The lower-case host name of a URL ("" when it has none or cannot be parsed)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


@dataclass(frozen=True, slots=True)
class UrlForm:
    """A URL's canonical form: ``url`` (rules applied), ``own`` (w3lib's alone) and the rules
    that made the difference, in the order they applied."""

    url: str
    own: str
    rules: tuple[UrlRule, ...] = ()

    @property
    def changed(self) -> bool:
        """True when a rule mapped the URL to another one."""
        return self.url != self.own

    @property
    def reason(self) -> str:
        """``rule`` when a learned rule changed it, else ``session`` or ``tracking``."""
        kinds = {rule.kind for rule in self.rules}
        if kinds - {TRACKING, SESSION}:
            return REASON_RULE
        return SESSION if SESSION in kinds else TRACKING


@dataclass(slots=True)
class _HostRules:
    case: list[UrlRule] = field(default_factory=list)
    prefixes: dict[str, UrlRule] = field(default_factory=dict)
    suffixes: dict[str, UrlRule] = field(default_factory=dict)
    params: dict[str, list[UrlRule]] = field(default_factory=lambda: defaultdict(list))
    slash: UrlRule | None = None  # `` -> /``: the trailing slash added

    def add(self, rule: UrlRule) -> None:
        if rule.kind == SUFFIX and not rule.sides[0]:
            self.slash = rule
        elif rule.kind == CASE:
            self.case.append(rule)
        elif rule.kind == PREFIX:
            self.prefixes.setdefault(rule.sides[0], rule)
        elif rule.kind == SUFFIX:
            self.suffixes.setdefault(rule.sides[0], rule)
        elif rule.kind == PARAM:
            self.params[rule.parameter].append(rule)

    def path_rule(self, path: str) -> UrlRule | None:
        """The first prefix rule (longest prefix first), then suffix rule, matching ``path``."""
        if self.prefixes:
            end = path.rfind("/")
            while end >= 0:
                rule = self.prefixes.get(path[: end + 1])
                if rule is not None:
                    return rule
                end = path.rfind("/", 0, end)
        if self.suffixes:
            start = path.find("/", 1)
            while start >= 0:
                rule = self.suffixes.get(path[start:])
                if rule is not None:
                    return rule
                start = path.find("/", start + 1)
        if self.slash is not None and self.slash.apply_path(path) != path:
            return self.slash
        return None

    def param_rule(self, name: str, value: str, path: str) -> UrlRule | None:
        for rule in self.params.get(name, ()):
            if path.startswith(rule.scope) and rule.value in (None, value):
                return rule
        return None


def _map_case(rules: _HostRules, path: str, applied: list[UrlRule]) -> str:
    for rule in rules.case:
        mapped = rule.apply_path(path)
        if mapped != path:
            path = mapped
            applied.append(rule)
    return path


class RuleSet:
    """Skipping rules (active or pinned learned rules) plus the universal ones, minus the
    universal rules a host has retired or banned (``exempt``: ``UrlRule(host, kind, name)``).
    Immutable once made: the crawl swaps in a new one when its rules change."""

    def __init__(
        self,
        rules: Iterable[UrlRule] = (),
        *,
        universal: bool = True,
        exempt: Iterable[UrlRule] = (),
    ) -> None:
        self.universal = universal
        self._hosts: dict[str, _HostRules] = {}
        self.rules: tuple[UrlRule, ...] = tuple(rules)
        for rule in self.rules:
            self._hosts.setdefault(rule.host, _HostRules()).add(rule)
        self._exempt: dict[str, set[str]] = defaultdict(set)
        for rule in exempt:
            self._exempt[rule.host].add(rule.pattern)

    def __len__(self) -> int:
        return len(self.rules)

    def form(self, url: str) -> UrlForm:
        """``url``'s canonical form (w3lib's canonical URL when nothing applies)."""
        own = canonicalize(url)
        if own == url:  # the request's own string, not a copy: one a pending request
            own = url
        origin, host, path, query = _split_canonical(own)
        rules = self._hosts.get(host)
        if rules is None and (not self.universal or not (query or ";" in path)):
            return UrlForm(own, own)
        applied: list[UrlRule] = []
        if ";" in path and self.universal:
            path = self._strip_path_session(host, path, applied)
        if rules is not None:
            path = self._map_path(rules, path, applied)
        kept = self._map_query(host, rules, path, split_query(query), applied)
        if not applied:
            return UrlForm(own, own)
        mapped = origin + path
        if kept:
            mapped += "?" + "&".join(f"{name}={value}" for name, value in kept)  # w3lib: "b="
        if any(rule.kind == CASE for rule in applied):
            mapped = canonicalize(mapped)  # lower-casing touched percent-escapes
        return UrlForm(mapped, own, tuple(applied))

    def _strip_path_session(self, host: str, path: str, applied: list[UrlRule]) -> str:
        """``/a;jsessionid=XYZ`` → ``/a`` (a Java servlet's session as a path parameter)."""
        match = _PATH_SESSION.search(path)
        if match is None or JSESSIONID in self._exempt.get(host, ()):
            return path
        applied.append(UrlRule(host, SESSION, JSESSIONID))
        return path[: match.start()] + path[match.end() :]

    @staticmethod
    def _map_path(rules: _HostRules, path: str, applied: list[UrlRule]) -> str:
        """Case rules, then path rules while they change the path, case rules again on what
        a path rule made (``/print/news/ -> /News/`` beside case), so a form is a fixed point."""
        path = _map_case(rules, path, applied)
        for _ in range(_MAX_PASSES + path.count("/")):
            found = rules.path_rule(path)
            if found is None:
                break
            mapped = found.apply_path(path)
            if mapped == path:
                break
            applied.append(found)
            path = _map_case(rules, mapped, applied)
        return path

    def _map_query(
        self,
        host: str,
        rules: _HostRules | None,
        path: str,
        pairs: list[tuple[str, str]],
        applied: list[UrlRule],
    ) -> list[tuple[str, str]]:
        kept = []
        exempt = self._exempt.get(host, ())
        for name, value in pairs:
            if self.universal:
                universal = classify_parameter(name, value)
                if universal is not None and universal.name not in exempt:
                    applied.append(UrlRule(host, universal.kind, universal.name))
                    continue
            if rules is not None:
                rule = rules.param_rule(name, value, path)
                if rule is not None:
                    applied.append(rule)
                    continue
            kept.append((name, value))
        return kept
