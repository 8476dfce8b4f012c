"""``RuleIndex``: the rules the learner knows, found by the URL they may apply to.

The learner asks, for every page, which of its host's rules may say something about it. A
scan of the host's rules grows with the crawl: a site with a ``?ref=`` variant under every
article proposes candidates in every article's folder (issue 45: 11,000 on one host), so
each page paid for all of them. Here a parameter rule is found by its parameter's name and
its scope (the folders above the page's path), the other kinds by host (few: a path rule
needs pairs that differ in the path alone); and the candidates of a host are bounded
(:data:`MAX_CANDIDATES`, least recently given evidence evicted first). An evicted candidate
loses nothing stored: the store keeps its evidence, and the next pair that proposes it
brings it back with its counts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from urllib.parse import urlsplit

from simhash_filter.urls.rules import PARAM, UrlRule, split_query

__all__ = ["MAX_CANDIDATES", "RuleIndex"]

MAX_CANDIDATES = 2_000
"""Candidate rules of one host kept in memory (least recently given evidence evicted)."""


class RuleIndex:
    """Rules by host, parameter and scope; candidates bounded per host (module doc)."""

    def __init__(self, max_candidates: int = MAX_CANDIDATES) -> None:
        self.max_candidates = max_candidates
        self._candidates: dict[str, OrderedDict[UrlRule, None]] = {}
        self._decided: dict[str, set[UrlRule]] = {}
        self._params: dict[tuple[str, str], dict[str, set[UrlRule]]] = {}
        self._others: dict[str, set[UrlRule]] = {}  # path rules, odd scopes: by host

    def __len__(self) -> int:
        return sum(len(c) for c in self._candidates.values()) + sum(
            len(d) for d in self._decided.values()
        )

    def candidates(self, host: str) -> int:
        """Candidate rules of ``host`` in memory."""
        return len(self._candidates.get(host, ()))

    def add(self, rule: UrlRule, candidate: bool) -> list[UrlRule]:
        """Index ``rule`` (a candidate: the host's most recent one); the candidates evicted
        to make room."""
        host = rule.host
        self._unlink(rule)
        if candidate:
            lru = self._candidates.setdefault(host, OrderedDict())
            lru[rule] = None
        else:
            self._decided.setdefault(host, set()).add(rule)
        self._link(rule)
        evicted: list[UrlRule] = []
        lru_now = self._candidates.get(host)
        while lru_now is not None and len(lru_now) > self.max_candidates:
            old, _ = lru_now.popitem(last=False)
            self._unplace(old)
            evicted.append(old)
        return evicted

    def clear(self) -> None:
        """Forget every rule."""
        self.__init__(self.max_candidates)  # type: ignore[misc]

    def _unlink(self, rule: UrlRule) -> None:
        lru = self._candidates.get(rule.host)
        if lru is not None and rule in lru:
            del lru[rule]
        self._decided.get(rule.host, set()).discard(rule)
        self._unplace(rule)

    def _link(self, rule: UrlRule) -> None:
        if rule.kind == PARAM and rule.scope.endswith("/"):
            scopes = self._params.setdefault((rule.host, rule.parameter), {})
            scopes.setdefault(rule.scope, set()).add(rule)
        else:
            self._others.setdefault(rule.host, set()).add(rule)

    def _unplace(self, rule: UrlRule) -> None:
        if rule.kind == PARAM and rule.scope.endswith("/"):
            scopes = self._params.get((rule.host, rule.parameter), {})
            here = scopes.get(rule.scope)
            if here is not None:
                here.discard(rule)
                if not here:
                    del scopes[rule.scope]
        else:
            self._others.get(rule.host, set()).discard(rule)

    def host_rules(self, host: str) -> Iterator[UrlRule]:
        """Every rule of ``host`` in memory."""
        yield from self._decided.get(host, ())
        yield from self._candidates.get(host, ())

    def of_parameter(self, host: str, parameter: str) -> list[UrlRule]:
        """The parameter rules of ``parameter`` on ``host`` (folder scopes)."""
        scopes = self._params.get((host, parameter), {})
        return [rule for rules in scopes.values() for rule in rules] + [
            rule
            for rule in self._others.get(host, ())
            if rule.kind == PARAM and rule.parameter == parameter
        ]

    def applying(self, host: str, url: str) -> set[UrlRule]:
        """The rules of ``host`` that may change ``url``: its path rules, and the parameter
        rules of a parameter ``url`` has in a folder above its path (every parameter rule
        when the query is escaped: a name is decoded before it is compared)."""
        found = set(self._others.get(host, ()))
        parts = urlsplit(url)
        if not parts.query:
            return found
        if "%" in parts.query or "+" in parts.query:
            names = {name for (h, name) in self._params if h == host}
        else:
            names = {name for name, _ in split_query(parts.query)}
        folders = _folders(parts.path or "/")
        for name in names:
            scopes = self._params.get((host, name))
            if not scopes:
                continue
            for folder in folders:
                found.update(scopes.get(folder, ()))
        return found


def _folders(path: str) -> list[str]:
    """``/a/b/c.html`` → ``/``, ``/a/``, ``/a/b/``: the scopes a rule must have to apply."""
    folders = ["/"]
    end = path.find("/", 1)
    while end >= 0:
        folders.append(path[: end + 1])
        end = path.find("/", end + 1)
    return folders
