"""The report's request side: what the crawl skipped before download, and the rules that did.

The rest of the report is about pages judged after their download; this section is the other
half of the filter (docs/requests.md): fetches saved by reason (tracking and session
parameters, learned site rules), the rules that skip now with their support, sampled checks
and a few of the URLs each skipped, and the rules retired or banned, with why. Every value
comes from the rule tables (``UrlRuleStore``); the HTML goes through :func:`esc` as the rest
of the report does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from simhash_filter.cli.report_html import esc
from simhash_filter.cli.skips import skip_reason
from simhash_filter.store import FingerprintStore
from simhash_filter.store.url_rules import StoredRule, UrlRuleStore
from simhash_filter.urls.rules import RuleState

__all__ = ["RequestSide", "render_request_side", "request_side"]

RULES_SHOWN = 50  # rules listed in each table, most fetches saved first
EXAMPLES = 3  # skipped URLs shown beside each skipping rule
REASONS = ("tracking", "session", "rule")


@dataclass(frozen=True, slots=True)
class RuleView:
    """A rule as the report lists it, with a few of the URLs it skipped."""

    rule: StoredRule
    examples: list[str] = field(default_factory=list)

    @property
    def why(self) -> str:
        """Why a rule no longer skips."""
        if self.rule.state is RuleState.BANNED:
            return "banned by a user (rules ban)"
        if self.rule.counterexamples:
            n = self.rule.counterexamples
            return (
                f"{n} counterexample{'s' if n > 1 else ''}: a page it maps onto another "
                "stored page's URL was a different page"
            )
        return "retired"


@dataclass(slots=True)
class RequestSide:
    """What the request side did, read from the rule tables."""

    has_rules: bool = False
    saved: Counter[str] = field(default_factory=Counter)  # fetches saved, by skip reason
    sampled: int = 0  # requests a rule maps, fetched anyway to check it
    skipping: list[RuleView] = field(default_factory=list)  # active or pinned
    skipping_total: int = 0
    stopped: list[RuleView] = field(default_factory=list)  # retired or banned
    stopped_total: int = 0
    candidates: int = 0


def request_side(store: FingerprintStore) -> RequestSide:
    """The request side of ``store``: at most :data:`RULES_SHOWN` rules a table."""
    url_rules = UrlRuleStore(store)
    side = RequestSide(has_rules=url_rules.has_tables())
    if not side.has_rules:
        return side
    rules = url_rules.rules()
    for stored in rules:
        side.saved[skip_reason([stored])] += stored.fetches_saved
        side.sampled += stored.sampled_checks
    by_saved = sorted(rules, key=lambda s: (-s.fetches_saved, s.rule.host, s.id))
    skipping = [s for s in by_saved if s.state.skips]
    stopped = [s for s in by_saved if s.state in (RuleState.RETIRED, RuleState.BANNED)]
    side.skipping = [
        RuleView(s, [url for url, _ in url_rules.skipped_samples(s.id, EXAMPLES)])
        for s in skipping[:RULES_SHOWN]
    ]
    side.stopped = [RuleView(s) for s in stopped[:RULES_SHOWN]]
    side.skipping_total, side.stopped_total = len(skipping), len(stopped)
    side.candidates = sum(1 for s in rules if s.state is RuleState.CANDIDATE)
    return side


def _n(value: int) -> str:
    return f"{value:,}"


def _rule_cells(view: RuleView) -> str:
    rule = view.rule
    return (
        f'<td class="url">{esc(rule.rule.host)}</td><td>{esc(rule.rule.kind)}</td>'
        f'<td class="url">{esc(rule.rule.pattern)}</td><td>{esc(rule.state.value)}</td>'
        f'<td class="n">{_n(rule.support)}</td><td class="n">{_n(rule.sampled_checks)}</td>'
        f'<td class="n">{_n(rule.fetches_saved)}</td>'
    )


def _more(shown: int, total: int, what: str) -> str:
    if total <= shown:
        return ""
    return (
        f'<p class="note">the {shown} {what} with the most fetches saved of {_n(total)} '
        "(simhash-filter rules: all)</p>"
    )


def render_request_side(side: RequestSide) -> str:
    """The section's HTML (its own heading first)."""
    head = '<h2 id="requests">Skipped before download</h2>'
    if not side.has_rules or not (side.skipping or side.stopped or side.candidates):
        return (
            f'{head}<p class="note" id="requests-none">No URL rules: no request was skipped '
            "before download (the add-on's request filter, SIMHASH_FILTER_REQUEST_FILTER, "
            "records its rules and what they skip here).</p>"
        )
    saved = sum(side.saved.values())
    by_reason = "".join(
        f'<div class="card"><dt>{esc(label)}</dt><dd id="saved-{reason}" '
        f'data-count="{side.saved[reason]}">{_n(side.saved[reason])}</dd></div>'
        for reason, label in zip(
            REASONS,
            ("tracking parameters", "session parameters", "learned site rules"),
            strict=True,
        )
    )
    skipping_rows = "".join(
        f'<tr>{_rule_cells(v)}<td class="url">{"<br>".join(esc(u) for u in v.examples)}</td></tr>'
        for v in side.skipping
    )
    stopped_rows = "".join(f"<tr>{_rule_cells(v)}<td>{esc(v.why)}</td></tr>" for v in side.stopped)
    columns = (
        '<th>host</th><th>kind</th><th>pattern</th><th>state</th><th class="n">support</th>'
        '<th class="n">sampled checks</th><th class="n">fetches saved</th>'
    )
    return f"""{head}
<p class="note">Requests whose URL the rules map to one the crawl already has (tracking and
session parameters, print, AMP and mirror views the site showed to be copies) are not
downloaded at all: <b id="fetches-saved" data-count="{saved}">{_n(saved)}</b> fetches saved,
counted under each rule that mapped the request; <span id="sampled" data-count="{side.sampled}">
{_n(side.sampled)}</span> requests a rule maps were fetched anyway to check it.
{_n(side.candidates)} candidate rules are still gathering support.</p>
<dl class="cards">{by_reason}</dl>
<h3>Rules skipping now ({_n(side.skipping_total)})</h3>
<table id="rules-active"><thead><tr>{columns}<th>skipped, for example</th></tr></thead>
<tbody>{skipping_rows}</tbody></table>
{_more(len(side.skipping), side.skipping_total, "rules")}
<h3>Rules retired or banned ({_n(side.stopped_total)})</h3>
<p class="note">A retired rule stopped mapping when a page it predicted a copy turned out
different; the requests it had skipped were fetched after all.</p>
<table id="rules-retired"><thead><tr>{columns}<th>why</th></tr></thead>
<tbody>{stopped_rows}</tbody></table>
{_more(len(side.stopped), side.stopped_total, "rules")}"""
