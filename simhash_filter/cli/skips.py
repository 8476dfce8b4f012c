"""URLs the crawl skipped before download, as ``lookup``, ``show`` and ``diff`` explain them.

A request a URL rule mapped to a form already seen is never downloaded, so no page row or
drop holds it; the store records it under each rule that mapped it (``skipped_requests``).
This module finds that record, the form the rules map the URL to and the kept page behind
that form, and says it in one line or one document. A URL given without a scheme
(``example.com/a``) is looked up as ``https://`` and ``http://``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from simhash_filter.cli.output import Fields, Section, iso_time
from simhash_filter.store import FingerprintStore, reports
from simhash_filter.store.url_rules import StoredRule, UrlRuleStore
from simhash_filter.urls.key import canonical_url
from simhash_filter.urls.rules import LEARNED_KINDS, RuleState
from simhash_filter.urls.ruleset import RuleSet, canonical_host

__all__ = ["Skip", "candidates", "find_skip", "rule_text", "skip_document", "skip_reason"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def candidates(url: str) -> list[str]:
    """``url`` as given, or (no ``scheme://``) its ``https://`` and ``http://`` forms."""
    if _SCHEME.match(url.strip()):
        return [url]
    bare = url.strip().removeprefix("//")
    return [f"https://{bare}", f"http://{bare}"]


def rule_text(stored: StoredRule) -> str:
    """A rule in a sentence: ``tracking parameter fbclid (rule 3)``."""
    rule = stored.rule
    what = {
        "tracking": "universal tracking parameter",
        "session": "universal session parameter",
        "param": "learned parameter rule",
        "prefix": "learned path-prefix rule",
        "suffix": "learned path-suffix rule",
        "case": "learned lower-case rule",
    }.get(rule.kind, rule.kind)
    return f"{what} {rule.pattern!r} of {rule.host} (rule {stored.id}, {stored.state.value})"


def skip_reason(rules: list[StoredRule]) -> str:
    """``tracking``, ``session`` or ``rule``: the stat ``requests/skipped/<reason>``."""
    kinds = {stored.rule.kind for stored in rules}
    if kinds & set(LEARNED_KINDS):
        return "rule"
    return "session" if "session" in kinds else "tracking"


@dataclass(frozen=True, slots=True)
class Skip:
    """A URL skipped before download: the rules that mapped it, when, the form they map it
    to, and the kept page behind the form (the form itself, or the page it was dropped as
    a copy of; None when the database has neither)."""

    url: str
    rules: list[StoredRule]
    skipped_at: datetime
    form: str
    kept: str | None

    @property
    def reason(self) -> str:
        return skip_reason(self.rules)

    def sentence(self) -> str:
        """One line: ``URL was skipped before download (…) as a variant of FORM …``."""
        by = "; ".join(rule_text(stored) for stored in self.rules)
        behind = (
            "kept"
            if self.kept == self.form
            else f"a copy of the kept page {self.kept}"
            if self.kept
            else "not in the database"
        )
        return (
            f"{self.url} was skipped before download, not fetched ({self.reason}: {by}): "
            f"it maps to {self.form} ({behind})"
        )


def form_under(store: FingerprintStore, url: str, rules: list[StoredRule]) -> str:
    """The form ``rules`` (as recorded) map ``url`` to, as the crawl computed it: the
    universal parameters unless the host retired or banned them, then the learned rules."""
    url_rules = UrlRuleStore(store)
    host = canonical_host(canonical_url(url))
    exempt = [
        stored.rule
        for stored in url_rules.rules(
            states=[RuleState.RETIRED, RuleState.BANNED], host=host or None
        )
        if stored.rule.kind not in LEARNED_KINDS
    ]
    learned = [stored.rule for stored in rules if stored.rule.kind in LEARNED_KINDS]
    universal = any(stored.rule.kind not in LEARNED_KINDS for stored in rules)
    return RuleSet(learned, universal=universal, exempt=exempt).form(url).url


def kept_behind(store: FingerprintStore, form: str) -> str | None:
    """The kept page a form stands for: the form itself when kept, else the page its
    newest drop duplicates (None when it is neither)."""
    page = store.lookup(form)
    if page is not None and page.dropped_at is None:
        return page.url
    drops = reports.drops_of_url(store, form, limit=1)
    return drops[0].duplicate_of_url if drops else None


def find_skip(store: FingerprintStore, url: str) -> Skip | None:
    """How ``url`` was skipped before download, or None when no skip of it is recorded."""
    found = UrlRuleStore(store).skips_of(url)
    if not found:
        return None
    rules = [stored for stored, _ in found]
    form = form_under(store, url, rules)
    return Skip(
        canonical_url(url), rules, max(when for _, when in found), form, kept_behind(store, form)
    )


def skip_document(query: str, skip: Skip) -> tuple[dict[str, Any], list[Section]]:
    """``lookup`` of a skipped URL."""
    document: dict[str, Any] = {
        "query": query,
        "status": "skipped",
        "url": skip.url,
        "reason": skip.reason,
        "skipped_at": iso_time(skip.skipped_at),
        "rules": [
            {"id": s.id, "kind": s.rule.kind, "pattern": s.rule.pattern, "state": s.state.value}
            for s in skip.rules
        ],
        "maps_to": skip.form,
        "kept_url": skip.kept,
    }
    fields: list[tuple[str, object]] = [
        ("status", "skipped before download (never fetched)"),
        ("url", skip.url),
        ("reason", skip.reason),
        *(("rule", rule_text(stored)) for stored in skip.rules),
        ("skipped at", document["skipped_at"]),
        ("maps to", skip.form),
        ("kept page", skip.kept or "none (the form is neither kept nor dropped)"),
    ]
    return document, [Fields(fields)]


def mapped_now(store: FingerprintStore, url: str) -> str | None:
    """The form the database's rules map ``url`` to now (universal parameters and the
    host's active or pinned rules), or None when they leave it as it is: what a crawl
    would skip it as, for a URL no crawl has met."""
    try:
        own = canonical_url(url)
    except ValueError:
        return None
    host = canonical_host(own)
    stored = UrlRuleStore(store).rules(host=host or None) if host else []
    learned = [s.rule for s in stored if s.state.skips and s.rule.kind in LEARNED_KINDS]
    exempt = [
        s.rule
        for s in stored
        if s.rule.kind not in LEARNED_KINDS and s.state in (RuleState.RETIRED, RuleState.BANNED)
    ]
    form = RuleSet(learned, exempt=exempt).form(url)
    return form.url if form.changed else None
