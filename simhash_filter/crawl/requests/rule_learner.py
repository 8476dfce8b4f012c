"""``RuleLearner``: site rules learned from the crawl's own verdicts, kept honest by them.

Every recorded page (:class:`~simhash_filter.crawl.pages.outcomes.FilterResult`) is evidence:

- a page **dropped** as a copy of a kept page is a pair with the same content: it proposes
  candidate rules (:func:`~simhash_filter.urls.learning.candidate_rules`) and supports every
  known rule of its host that maps the two together;
- a page **kept** as new whose URL a rule maps to a form that another stored page has (the
  form itself, or a page the rule maps there too) is a **counterexample**: the rule would
  have skipped a page nobody else holds. So is a page dropped as a copy of a page the rule
  does not map it to, while another stored page has the form it does map it to.

A candidate with ``RULE_MIN_SUPPORT`` supporting pairs is checked against the host's stored
pages (two stored pages it maps together are a counterexample) and then becomes active (a
parameter's rules in sibling scopes, active or with enough witnesses together, propose the
rule of their parent scope, :func:`~simhash_filter.urls.learning.generalized_rules`,
checked the same way); one
counterexample retires an active rule at once, and the requests it skipped are handed back
to be fetched. The evidence goes to the store
(:class:`~simhash_filter.store.url_rules.UrlRuleStore`), where crawlers sharing a database
add it up; the learner reloads the rules from it now and then, so a rule another crawler
learned, or a user pinned or banned, is used here too.
Everything here runs in one worker thread (the request filter's), never in the reactor.

What a page costs does not grow with the crawl (issue 45): the evidence of ``batch``
observations (or ``batch_seconds``' worth) is added up in memory and written in one
transaction with the skips, on SQLite in the store's writer queue (never a second writer
holding the lock against the page checks); the rules a page may say something about are
found by its parameters and folders (:class:`~.rule_index.RuleIndex`), the candidates of a
host bounded; the images of kept pages remembered are bounded (least recently used
forgotten); and an active rule with :data:`SETTLED_SUPPORT` supporting pairs takes no more
(its counterexamples and sampled checks still count).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.outcomes import Outcome
from simhash_filter.crawl.requests.rule_book import RuleBook
from simhash_filter.crawl.requests.rule_index import MAX_CANDIDATES, RuleIndex
from simhash_filter.store.url_rules import RuleDelta, SkippedRequest, StoredRule, UrlRuleStore
from simhash_filter.urls.learning import (
    apply_rule,
    candidate_rules,
    generalized_rules,
    maps_together,
    may_change,
    witness,
)
from simhash_filter.urls.rules import LEARNED_KINDS, PARAM, RuleState, UrlRule
from simhash_filter.urls.ruleset import RuleSet, url_host

__all__ = [
    "IDLE_WRITE_SECONDS",
    "MAX_IMAGES",
    "RELOAD_SECONDS",
    "SETTLED_SUPPORT",
    "RetiredRule",
    "RuleLearner",
]

logger = logging.getLogger(__name__)

RELOAD_SECONDS = 10.0
"""How often the learner reads the rules again (another crawler's, a user's pin or ban)."""
MAX_IMAGES = 50_000
"""(rule, image) → kept page remembered, for counterexamples between two kept pages (least
recently used forgotten first; the store's pages still answer for the image itself)."""
SETTLED_SUPPORT = 50
"""Supporting pairs past which an active rule records no more (its support is settled)."""
IDLE_WRITE_SECONDS = 0.05
"""When no observation waits, evidence is written at most this often (a busy crawl's
observations queue up and go together, in batches)."""
_HISTORY = 20_000  # stored pages of a host read when a candidate is about to become active
_CANONICALS = 200_000  # declared canonicals read from the store when the crawl opens
_EVIDENCE_STATES = (RuleState.CANDIDATE, RuleState.ACTIVE, RuleState.PINNED)
_DECIDED_STATES = (RuleState.ACTIVE, RuleState.PINNED, RuleState.RETIRED, RuleState.BANNED)
_MAX_GENERALIZE = 8  # steps up the pattern tree at one time (a path's depth, in practice)


class RuleLearner:
    """Evidence in, rule states out (module doc). Not thread-safe: one thread calls it."""

    def __init__(
        self,
        config: Config,
        book: RuleBook,
        store: UrlRuleStore,
        *,
        batch: int = 1,
        batch_seconds: float = 0.0,
        idle: Callable[[], bool] = lambda: False,
        max_candidates: int = MAX_CANDIDATES,
    ) -> None:
        """``batch``: observations whose evidence is written together (1: each at once),
        or what came in ``batch_seconds``, whichever is first; sooner when ``idle()`` says
        no observation waits (and :data:`IDLE_WRITE_SECONDS` passed since the last write):
        a small or slow crawl learns as it goes, a busy one writes in batches."""
        self.config = config
        self.book = book
        self.store = store
        self._universal = RuleSet(universal=config.universal_rules)
        self._rules: dict[UrlRule, StoredRule] = {}
        self._index = RuleIndex(max_candidates)
        self._images: OrderedDict[tuple[UrlRule, str], str] = OrderedDict()
        self._pending_skips: list[SkippedRequest] = []
        self._evidence: dict[UrlRule, Evidence] = {}  # not written yet
        self._observed = 0  # observations in _evidence
        self._batch, self._batch_seconds = max(1, batch), batch_seconds
        self._idle = idle
        self._written_at = time.monotonic()
        self._loaded_at = 0.0
        self.activated = 0
        self.retired = 0
        self.writes = 0  # evidence transactions

    # -- the rules

    def load(self) -> None:
        """Read every rule from the store and apply the skipping ones; the first time, also
        the canonical URLs stored pages declared (no rule skips them, :class:`RuleBook`)."""
        first = not self._loaded_at
        if first:
            for url, named_by in self.store.declared_canonicals(_CANONICALS):
                self.book.note_canonical(url, named_by)
        # again later: the decided rules only (candidates come back with their evidence)
        for stored in self.store.rules(states=None if first else _DECIDED_STATES):
            self._keep(stored)
        self._loaded_at = time.monotonic()
        self._publish()

    def _keep(self, stored: StoredRule) -> None:
        self._rules[stored.rule] = stored
        for evicted in self._index.add(stored.rule, stored.state is RuleState.CANDIDATE):
            self._rules.pop(evicted, None)

    def _publish(self) -> None:
        skipping = [
            rule
            for rule, stored in self._rules.items()
            if stored.state.skips and rule.kind in LEARNED_KINDS
        ]
        exempt = [
            rule
            for rule, stored in self._rules.items()
            if rule.kind not in LEARNED_KINDS
            and stored.state in (RuleState.RETIRED, RuleState.BANNED)
        ]
        self.book.set_rules(RuleSet(skipping, universal=self.config.universal_rules, exempt=exempt))

    def reload_if_due(self) -> None:
        """Read the rules again when :data:`RELOAD_SECONDS` have passed."""
        if time.monotonic() - self._loaded_at >= RELOAD_SECONDS:
            self.load()

    # -- skips

    def skipped(self, skips: Sequence[SkippedRequest]) -> None:
        """Requests the scheduler skipped under these rules (written with the next evidence,
        or by :meth:`flush`)."""
        self._pending_skips.extend(skips)
        if len(self._pending_skips) >= 1_000:
            self.flush()

    def flush(self) -> list[RetiredRule]:
        """Write the evidence and the skips not written yet, in one transaction; the rules
        it retired."""
        evidence, self._evidence = self._evidence, {}
        skips, self._pending_skips = self._pending_skips, []
        self._observed, self._written_at = 0, time.monotonic()
        changes = [
            RuleDelta(
                rule,
                counterexamples=found.counterexamples,
                sampled_checks=found.sampled,
                witnesses=tuple(sorted(found.witnesses)),
            )
            for rule, found in evidence.items()
            if found.witnesses or found.counterexamples or found.sampled
        ]
        if not changes and not skips:
            return []
        self.writes += 1
        return self._record(self.store.record(changes, skips))

    @property
    def pending(self) -> int:
        """Observations whose evidence is not written yet."""
        return self._observed

    def _add(self, deltas: dict[UrlRule, Evidence]) -> list[RetiredRule]:
        """One observation's evidence, added to what is pending; written when the batch is
        full, its time is up, or it disproves a rule in force (retired at once)."""
        urgent = False
        for rule, found in deltas.items():
            pending = self._evidence.setdefault(rule, Evidence())
            pending.witnesses.update(found.witnesses)
            pending.counterexamples += found.counterexamples
            pending.sampled += found.sampled
            if found.counterexamples:
                known = self._rules.get(rule)
                urgent = urgent or known is None or known.state.skips
        self._observed += 1
        since = time.monotonic() - self._written_at
        if (
            urgent
            or self._observed >= self._batch
            or since >= self._batch_seconds
            or (since >= IDLE_WRITE_SECONDS and self._idle())
        ):
            return self.flush()
        return []

    # -- evidence

    def observe(
        self,
        outcome: Outcome,
        page: str,
        duplicate_of: str | None,
        declared: str | None = None,
        listing: bool = False,
    ) -> list[RetiredRule]:
        """Learn from one page's verdict: ``page`` its URL and ``duplicate_of`` the kept page's,
        ``declared`` the canonical it declared, all in canonical form (``PageKey``); returns
        the rules it retired, each with the URLs they had skipped (to fetch after all). A
        ``listing`` (an archive, a home page) dropped as a copy supports no rule: two
        archives show the same entries by coincidence (one author's posts, one month's), and
        a skipped archive page is often the only way to the next one (its pagination), where
        the coincidence ends and no sampled fetch can reach; it still disproves rules."""
        deltas: dict[UrlRule, Evidence] = {}
        if outcome is Outcome.DROPPED and duplicate_of:
            if not listing:
                toward = declared if declared in (page, duplicate_of) else None
                self._pair_support(page, duplicate_of, deltas, toward)
            self._counter_evidence(page, duplicate_of, deltas)
        elif outcome is Outcome.KEPT:
            self._kept_evidence(page, deltas)
        if outcome in (Outcome.KEPT, Outcome.DROPPED):
            for rule in self.book.ruleset.form(page).rules:
                _of(deltas, rule).sampled += 1  # fetched though a rule maps it: checked
        retired = self._add(deltas)
        self.reload_if_due()
        return retired

    def observe_pair(self, first: str, second: str, listing: bool = False) -> list[RetiredRule]:
        """Learn from two URLs (in canonical form) known to show the same content, ``second``
        the canonical (a confirmed canonical hint, or a page and the canonical that superseded
        it); a pair of listings teaches nothing (:meth:`observe`)."""
        if listing:
            return []
        deltas: dict[UrlRule, Evidence] = {}
        self._pair_support(first, second, deltas, second)
        return self._add(deltas)

    def _rules_of(self, page: str, other: str | None = None) -> set[UrlRule]:
        """The rules that may say something about ``page`` (and ``other``): the host's known
        rules in an evidence state, and the universal rules that apply to either."""
        host = url_host(page)
        found = self._index.applying(host, page)
        if other is not None:
            found |= self._index.applying(host, other)
        rules = {rule for rule in found if self._rules[rule].state in _EVIDENCE_STATES}
        rules.update(self._universal.form(page).rules)
        if other is not None:
            rules.update(self._universal.form(other).rules)
        return rules

    def _pair_support(
        self, page: str, other: str, deltas: dict[UrlRule, Evidence], toward: str | None = None
    ) -> None:
        """Support for the rules that map the pair together: new candidates from the pair as
        it is and as the skipping rules map it (``/a?reply=2`` and ``/a/amp`` teach the
        parameter once ``/amp`` is known), and the known rules that map it together."""
        ruleset = self.book.ruleset
        base = [rule for rule in ruleset.rules if rule.host == url_host(page)]
        mapped = (ruleset.form(page).url, ruleset.form(other).url)
        proposed: dict[UrlRule, str | None] = {}
        hints = (toward, ruleset.form(toward).url if toward is not None else None)
        for (a, b), hint in zip(((page, other), mapped), hints, strict=True):
            for rule in candidate_rules(a, b, hint):
                if proposed.get(rule) is None and not self._reverse_skips(rule):
                    proposed[rule] = witness(rule, a, b)
        for rule in self._rules_of(page, other) - proposed.keys():
            if maps_together(rule, page, other, base):
                proposed[rule] = witness(rule, page, other) or witness(rule, *mapped)
        for rule, seen in proposed.items():
            known = self._rules.get(rule)
            if seen is None or (known is not None and not self._takes_support(known)):
                continue
            _of(deltas, rule).witnesses.add(seen)

    @staticmethod
    def _takes_support(known: StoredRule) -> bool:
        """A candidate, or a rule in force whose support is not settled yet."""
        if known.state is RuleState.CANDIDATE:
            return True
        return known.state in _EVIDENCE_STATES and known.support < SETTLED_SUPPORT

    def _reverse_skips(self, rule: UrlRule) -> bool:
        """True when the rule mapping the other way is in force (no cycle is ever made)."""
        reverse = self._rules.get(rule.reverse) if rule.reverse is not None else None
        return reverse is not None and reverse.state.skips

    def _counter_evidence(self, page: str, other: str, deltas: dict[UrlRule, Evidence]) -> None:
        """Counterexamples from ``page``, dropped as a copy of ``other``: a rule that maps it
        onto a third stored page says the copy is that page's."""
        replaced: list[str | None] = []  # what superseded `other`, asked once when needed
        for rule in self._rules_of(page):
            found = deltas.get(rule)
            if (found is not None and found.witnesses) or not may_change(rule, page):
                continue
            image = apply_rule(rule, page)
            if (
                image != page
                and image != apply_rule(rule, other)
                and self._claims(rule, image, page)
            ):
                if not replaced:
                    replaced.append(None if self.store.is_kept(other) else self._replaced(other))
                now = replaced[0]
                if now is not None and apply_rule(rule, now) == image:
                    continue  # `other` was superseded by the page the rule maps onto: a copy
                # a copy of `other`, but the rule says it is `image`'s page
                _of(deltas, rule).counterexamples += 1

    def _replaced(self, url: str) -> str | None:
        """The page that superseded the page kept at ``url`` (the keep policy), or None."""
        return self.store.replaced_by(url)

    def _superseded_by(self, page: str, rule: UrlRule, image: str) -> bool:
        """True when ``page``, kept, was replaced since by a page ``rule`` maps onto ``image``
        (the store runs ahead of this thread: the canonical superseded it meanwhile)."""
        if self.store.is_kept(page):
            return False
        now = self._replaced(page)
        return now is not None and apply_rule(rule, now) == image

    def _kept_evidence(self, page: str, deltas: dict[UrlRule, Evidence]) -> None:
        for rule in self._rules_of(page):
            if not may_change(rule, page):
                continue
            image = apply_rule(rule, page)
            if image == page:
                continue
            if self._claims(rule, image, page):
                if self._superseded_by(page, rule, image):
                    continue  # kept, then replaced by its canonical `image` (a copy) already
                _of(deltas, rule).counterexamples += 1
            else:
                self._remember(rule, image, page)

    def _remember(self, rule: UrlRule, image: str, page: str) -> None:
        """``page``, kept, is what ``rule`` maps onto ``image`` (:data:`MAX_IMAGES` kept)."""
        key = (rule, image)
        self._images[key] = page
        self._images.move_to_end(key)
        if len(self._images) > MAX_IMAGES:
            self._images.popitem(last=False)

    def _claims(self, rule: UrlRule, image: str, page: str) -> bool:
        """Whether another stored page holds the form ``rule`` maps ``page`` to."""
        holder = self._images.get((rule, image))
        if holder is not None and holder != page:
            return True
        return self.store.is_kept(image)

    # -- states

    def _record(self, written: Sequence[StoredRule]) -> list[RetiredRule]:
        """The rules as the store has them after a write: activated when ready, announced,
        widened up the pattern tree; the rules in force published when they changed."""
        retired: list[RetiredRule] = []
        changed = False
        widen: set[tuple[str, str]] = set()  # (host, parameter) with new support or in force
        for stored in written:
            before = self._rules.get(stored.rule)
            if stored.state is RuleState.CANDIDATE and self._ready(stored):
                stored = self._activate(stored)
            self._keep(stored)
            if before is None or before.state is not stored.state:
                changed = changed or _published(before) != _published(stored)
                retired.extend(self._announce(before, stored))
            grew = before is None or before.support != stored.support
            if stored.rule.kind == PARAM and (stored.state.skips or grew):
                widen.add((stored.rule.host, stored.rule.parameter))
        for host, parameter in sorted(widen):
            self._generalize(host, parameter)
        if changed:
            self._publish()
        return retired

    def _generalize(self, host: str, parameter: str) -> None:
        """Activate the rules of ``parameter`` one step up the pattern tree from the host's
        skipping ones and the support of its candidates (:func:`generalized_rules`;
        witnesses: the sibling scopes), each checked against the stored pages first; again
        from those, up to the host's root."""
        for _ in range(_MAX_GENERALIZE):
            rules = self._index.of_parameter(host, parameter)
            skipping = [rule for rule in rules if self._rules[rule].state.skips]
            doubted = [rule for rule in rules if self._doubted(self._rules[rule])]
            candidates = {
                rule: self._rules[rule].support
                for rule in rules
                if self._rules[rule].state is RuleState.CANDIDATE
                and not self._rules[rule].counterexamples
            }
            proposed = generalized_rules(
                skipping,
                doubted,
                candidates=candidates,
                witnesses_of=self.store.witnesses,
                min_support=self.config.rule_min_support,
            )
            fresh = [
                (rule, scopes)
                for rule, scopes in proposed.items()
                if rule not in self._rules or self._rules[rule].state is RuleState.CANDIDATE
            ]
            if not fresh:
                return
            for rule, scopes in fresh:
                before = self._rules.get(rule)
                stored = self.store.record([RuleDelta(rule, witnesses=scopes)])[0]
                if stored.state is RuleState.CANDIDATE and not stored.counterexamples:
                    stored = self._activate(stored)
                self._keep(stored)
                self._announce(before, stored)  # a candidate still: doubted from now on
                if _published(before) != _published(stored):
                    self._publish()

    @staticmethod
    def _doubted(stored: StoredRule) -> bool:
        """True when a rule shows its parameter selects content (or a user said so)."""
        return bool(stored.counterexamples) or stored.state in (
            RuleState.RETIRED,
            RuleState.BANNED,
        )

    def _ready(self, stored: StoredRule) -> bool:
        return stored.support >= self.config.rule_min_support and stored.counterexamples == 0

    def _activate(self, stored: StoredRule) -> StoredRule:
        """A candidate with enough support: active, unless two stored pages of its host are
        mapped together by it (a counterexample in the history)."""
        rule = stored.rule
        if self._reverse_skips(rule):
            return stored  # its reverse is in force: a candidate while it is
        kept = self.store.kept_urls(rule.host, _HISTORY)
        known = set(kept)
        images: dict[str, str] = {}
        for url in kept:
            if not may_change(rule, url):
                continue
            image = apply_rule(rule, url)
            if image == url:
                continue
            holder = images.get(image) or self._images.get((rule, image))
            if image in known or (holder is not None and holder != url):
                logger.debug("simhash_filter: rule %s maps %s onto a stored page", rule, url)
                return self.store.record([RuleDelta(rule, counterexamples=1)])[0]
            images[image] = url
        return self.store.activate(rule)

    def _announce(self, before: StoredRule | None, stored: StoredRule) -> list[RetiredRule]:
        rule = stored.rule
        if stored.state is RuleState.ACTIVE and rule.kind in LEARNED_KINDS:
            self.activated += 1
            logger.info(
                "simhash_filter: URL rule active after %d supporting pairs: %s",
                stored.support,
                rule.describe(),
            )
        was_skipping = before.state.skips if before else rule.kind not in LEARNED_KINDS
        if stored.state is RuleState.RETIRED and was_skipping:
            self.retired += 1
            urls = self.store.take_skipped(rule)
            logger.info(
                "simhash_filter: URL rule retired by a counterexample, %d skipped requests "
                "to fetch: %s",
                len(urls),
                rule.describe(),
            )
            return [RetiredRule(rule, urls)]
        return []


@dataclass(slots=True)
class Evidence:
    """What one verdict says about one rule: witnesses of support, counterexamples, and
    whether it was a checked prediction."""

    witnesses: set[str] = field(default_factory=set)
    counterexamples: int = 0
    sampled: int = 0


@dataclass(frozen=True, slots=True)
class RetiredRule:
    """A rule that a counterexample retired, and the URLs it had skipped."""

    rule: UrlRule
    urls: list[str]


def _of(deltas: dict[UrlRule, Evidence], rule: UrlRule) -> Evidence:
    """The evidence about ``rule`` in ``deltas``, made when there is none yet."""
    found = deltas.get(rule)
    if found is None:
        found = deltas[rule] = Evidence()
    return found


def _published(stored: StoredRule | None) -> bool:
    """Whether a rule in this state is in the rule set the crawl applies (skipping, or a
    universal rule exempted)."""
    if stored is None:
        return False
    if stored.rule.kind in LEARNED_KINDS:
        return stored.state.skips
    return stored.state in (RuleState.RETIRED, RuleState.BANNED)
