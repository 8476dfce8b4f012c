"""``RequestFilter``: what the URL rules skip, counted, recorded, and given back when wrong.

The skipping itself is Scrapy's: the scheduler's dupefilter asks the
:class:`~simhash_filter.crawl.requests.fingerprinter.RuleFingerprinter` for a request's fingerprint,
which is its canonical form's, and drops a variant whose form was seen. This extension
listens to the scheduler (``request_scheduled``, ``request_dropped``): a dropped request that
a rule mapped is a **skip** (``simhash_filter/requests/skipped/<reason>``: ``tracking``,
``session`` or ``rule``; the first logged at INFO with a hint, like Scrapy's dupefilter, the
others at DEBUG under ``SIMHASH_FILTER_DEBUG``), recorded under its rules in the store. It
feeds the page filter's verdicts to the
:class:`~simhash_filter.crawl.requests.rule_learner.RuleLearner`
(in a thread of its own) and, when a counterexample retires a rule, schedules the requests
that rule skipped again (``dont_filter``; ``simhash_filter/requests/refetched``).

The learner's thread never holds the crawl up (issue 45): at most :data:`MAX_BACKLOG`
observations wait for it; past that an observation is dropped and counted
(``simhash_filter/rules/observations_dropped``: less evidence, never a wrong skip), so the
close waits for a bounded backlog, whose evidence is written in one transaction.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.asyncio import run_in_thread

from simhash_filter.crawl.pages.error_log import RepeatedErrors
from simhash_filter.crawl.pages.filter import PageFilter, _result
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX, FilterResult, Outcome
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.requests.held import HeldRequests
from simhash_filter.crawl.requests.rule_book import CANONICAL, RequestForm, RuleBook
from simhash_filter.crawl.requests.rule_learner import RetiredRule, RuleLearner
from simhash_filter.store import FingerprintStore
from simhash_filter.store.url_rules import SkippedRequest, UrlRuleStore
from simhash_filter.urls.rules import LEARNED_KINDS, UrlRule
from simhash_filter.urls.ruleset import RuleSet

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["REQUEST_STATS", "RULE_STATS", "RequestFilter"]

logger = logging.getLogger(__name__)

REQUEST_STATS = STATS_PREFIX + "requests/"
"""``skipped/<reason>``, ``sampled`` (fetched to check a rule), ``canonical`` (a rule maps it,
fetched anyway: a page declared it its canonical), ``refetched`` (skipped, then fetched after
all because the rule retired or a page named it its canonical)."""
RULE_STATS = STATS_PREFIX + "rules/"
"""``activated``, ``retired`` (during this crawl), ``active`` (learned rules at the end),
``backlog`` (observations waiting for the learner now) and ``backlog_max``,
``observations_dropped`` (the backlog was full), ``writes`` (the learner's transactions)."""
MAX_BACKLOG = 1_000
"""Observations waiting for the learner's thread at most (it takes ~1 ms each)."""
BATCH = 256
"""Observations whose evidence the learner writes in one transaction (or a second's)."""
BATCH_SECONDS = 1.0
_UNMAPPED = 20_000  # kept URLs no rule mapped yet, remembered for spider_idle


class RequestFilter:
    """The request side of simhash-filter (module doc); enabled by the add-on."""

    def __init__(self, crawler: Crawler, book: RuleBook, page_filter: PageFilter) -> None:
        self.crawler = crawler
        self.book = book
        self.page_filter = page_filter
        self.config = book.config
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.learner: RuleLearner | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._held = HeldRequests()
        self._held_by_rule: dict[UrlRule, set[str]] = defaultdict(set)
        self._unmapped: dict[str, None] = {}  # kept URLs no rule mapped yet (spider_idle)
        self._swept: RuleSet | None = None  # the rules the last spider_idle applied
        self._logged_first_skip = False
        self._submitted = 0  # observations handed to the learner (the reactor counts)
        self._finished = 0  # ... and done (the learner's thread counts)
        self._backlog_max = 0
        self.rule_errors = RepeatedErrors(logger, counted="URL-rule learning errors")
        """The URL rules' errors (``simhash_filter/errors/rule_learning``), apart from the
        pages': learning failed, every page was still checked."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not config.enabled:
            raise NotConfigured("SIMHASH_FILTER_ENABLED is False")
        if not config.request_filter:
            raise NotConfigured("SIMHASH_FILTER_REQUEST_FILTER is False")
        book = RuleBook.for_crawler(crawler)
        extension = cls(crawler, book, PageFilter.for_crawler(crawler))
        book.form_taken.append(extension.form_taken)
        book.rules_changed.append(extension.count_active)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(extension.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(
            extension.request_reached_downloader, signal=signals.request_reached_downloader
        )
        return extension

    # -- lifecycle

    async def spider_opened(self) -> None:
        await run_in_thread(self.page_filter.open)
        store = self.page_filter.store
        if not isinstance(store, FingerprintStore):
            return  # a store that keeps no rules (a test double): universal rules only
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="simhash-filter-rules")
        self.learner = RuleLearner(
            self.config,
            self.book,
            UrlRuleStore(store),
            batch=BATCH,
            batch_seconds=BATCH_SECONDS,
            idle=lambda: self.backlog <= 1,  # only the observation being learned from
        )
        await self._run(self.learner.load)
        self.page_filter.listeners.append(self._on_result)

    async def spider_closed(self) -> None:
        learner, thread = self.learner, self._thread
        if self._on_result in self.page_filter.listeners:
            self.page_filter.listeners.remove(self._on_result)
        if learner is not None and thread is not None:
            try:
                await self._run(learner.flush)
            except Exception as exc:
                self._learning_failed(exc, "Could not record URL rule evidence")
            thread.shutdown(wait=True)
            self.stats.set_value(RULE_STATS + "writes", learner.writes)
        self.learner = self._thread = None
        self.rule_errors.flush()
        await run_in_thread(self.page_filter.close)

    def count_active(self, ruleset: RuleSet) -> None:
        """``rules/active``: the learned rules in force, kept current as rules change (so the
        stats read at ``spider_closed``, by any extension, already hold it)."""
        active = sum(1 for rule in ruleset.rules if rule.kind in LEARNED_KINDS)
        self.stats.set_value(RULE_STATS + "active", active)  # one dict store: any thread

    async def _run(self, job: Any, *args: Any) -> Any:
        assert self._thread is not None
        return await _result(self._thread.submit(job, *args))

    # -- the scheduler's signals (reactor thread)

    def request_scheduled(self, request: Request, spider: object = None) -> None:
        """Sent before the dupefilter's question: the request's form is decided now, with
        whether its URL was given a fingerprint before (then a drop is Scrapy's own)."""
        self.book.form_of(request)  # decided before the dupefilter asks (then cached)

    def request_reached_downloader(self, request: Request, spider: object = None) -> None:
        why_own = self.book.form_of(request).why_own
        if why_own == "sample":
            self.stats.inc_value(REQUEST_STATS + "sampled")
        elif why_own == CANONICAL:
            self.stats.inc_value(REQUEST_STATS + "canonical")

    def request_dropped(self, request: Request, spider: object = None) -> None:
        decided = self.book.form_of(request)
        own = decided.form.own
        if not decided.repeat and self.book.took_form(decided):
            self._held.hold(own, request)  # a variant mapped onto it came first: its canonical?
        if not decided.mapped or decided.repeat:
            return  # a plain duplicate: Scrapy's dupefilter would have dropped it too
        if self.book.ruleset.form(request.url).url != decided.form.url:
            self._reschedule(request)  # its rule retired since it was decided
            return
        self._skip(request, decided)

    def form_taken(self, variant: Request, decided: RequestForm | None) -> None:
        """A variant skipped at the download (:mod:`.form_first`): its form downloaded in
        its place, or (``decided`` given) seen already. Fetched after all if its rule retired
        since."""
        if decided is None:
            decided = self.book.redecide(variant)
            if decided.mapped:
                self.stats.inc_value(REQUEST_STATS + "form_first")
        else:
            self.stats.inc_value(REQUEST_STATS + "skipped_late")
        if not decided.mapped:
            self._reschedule(variant)
            return
        self._skip(variant, decided)

    def _skip(self, request: Request, decided: RequestForm) -> None:
        """Count, log and record a request its rules skipped; hold it to fetch it again."""
        own, reason = decided.form.own, decided.form.reason
        self.stats.inc_value(REQUEST_STATS + "skipped/" + reason)
        self._log_skip(request, decided.form.url, reason)
        if self._held.hold(own, request):
            for rule in decided.form.rules:
                self._held_by_rule[rule].add(own)
        if self.learner is not None and self._thread is not None:
            skips = [SkippedRequest(rule, own) for rule in decided.form.rules]
            self._submit(self.learner.skipped, skips)

    def _log_skip(self, request: Request, form: str, reason: str) -> None:
        if self.config.debug:
            logger.debug("Skipped %s: its canonical form %s was seen (%s)", request, form, reason)
        elif not self._logged_first_skip:
            logger.info(
                "Skipped %s: its canonical form %s was seen (%s) - no more skipped requests "
                "will be shown (see SIMHASH_FILTER_DEBUG to show all of them; "
                "SIMHASH_FILTER_REQUEST_FILTER = False turns URL rules off)",
                request,
                form,
                reason,
            )
        self._logged_first_skip = True

    # -- learning (the page filter's results, reactor thread → the learner's thread)

    def _on_result(self, result: FilterResult) -> None:
        self._note_canonical(result)
        if self.learner is None or result.key is None:
            return
        match = result.verdict.duplicate_of if result.verdict is not None else None
        duplicate_of = match.url if match else None
        page = result.key.url
        self._observe(
            self.learner.observe, result.outcome, page, duplicate_of, result.declared,
            result.listing,
        )  # fmt: skip
        if result.canonical_confirmed and result.declared is not None:
            self._observe(self.learner.observe_pair, page, result.declared, result.listing)
        if result.superseded is not None:  # the variant kept first, its canonical now
            old, new = result.superseded.old_url, result.superseded.new_url
            self._observe(self.learner.observe_pair, old, new, result.listing)

    def _observe(self, job: Any, *args: Any) -> None:
        """Hand one observation to the learner's thread, unless :data:`MAX_BACKLOG` wait
        already (then it is dropped and counted)."""
        backlog = self.backlog
        self.stats.set_value(RULE_STATS + "backlog", backlog)
        if backlog >= MAX_BACKLOG:
            self.stats.inc_value(RULE_STATS + "observations_dropped")
            return
        if backlog + 1 > self._backlog_max:
            self._backlog_max = backlog + 1
            self.stats.set_value(RULE_STATS + "backlog_max", self._backlog_max)
        self._submitted += 1
        if not self._submit(job, *args, observation=True):
            self._submitted -= 1

    @property
    def backlog(self) -> int:
        """Observations handed to the learner's thread and not done yet."""
        return self._submitted - self._finished

    def _note_canonical(self, result: FilterResult) -> None:
        """A URL a checked page names its canonical is never skipped from now on; one a rule
        skipped already (before the hint was known) is scheduled again, so the keep policy
        sees the canonical itself rather than keeping the variant. So is the form the rules
        map a kept page's URL to (asked when it is kept and whenever a copy of it is dropped,
        as rules are learned meanwhile): with no hint (or a wrong one) naming it, the form is
        the copy the keep policy prefers (core/keep.py), fetched once to replace the variant."""
        if result.outcome is Outcome.ERROR or result.key is None:
            return
        named_by = result.key.url
        if result.declared is not None:
            self._fetch_canonical(result.declared, named_by)
        match = result.verdict.duplicate_of if result.verdict is not None else None
        kept = named_by if result.outcome is Outcome.KEPT else match.url if match else None
        if kept is not None:  # a copy asks again: rules learned since may map the kept page
            form = self.book.ruleset.form(kept)
            if form.changed:
                self._unmapped.pop(kept, None)
                self._fetch_canonical(form.url, kept)
            elif result.outcome is Outcome.KEPT and len(self._unmapped) < _UNMAPPED:
                self._unmapped[kept] = None

    def spider_idle(self) -> None:
        """Rules learned late may map pages kept early, whose copies all came before: their
        forms are fetched now (once per set of rules), and the crawl goes on for them."""
        ruleset = self.book.ruleset
        if ruleset is self._swept or not self._unmapped:
            return
        self._swept = ruleset
        scheduled = 0
        for url in list(self._unmapped):
            form = ruleset.form(url)
            if form.changed:
                del self._unmapped[url]
                scheduled += self._fetch_canonical(form.url, url)
        if scheduled:
            raise DontCloseSpider

    def _fetch_canonical(self, declared: str, named_by: str) -> bool:
        """Never skip ``declared`` from now on, and schedule it again when it was skipped
        (True then)."""
        if not self.book.note_canonical(declared, named_by):
            return False
        held = self._held.pop(declared)
        if held is None or self.book.form_fetched(declared):
            return False  # not skipped, or downloaded in a variant's place
        for urls in self._held_by_rule.values():
            urls.discard(declared)
        if not self._reschedule(held):
            return False
        # a variant mapped onto it, still queued, is skipped at its download (form first):
        # else it fetches this URL a second time, and both responses reach the spider
        self.book.note_form_fetched(declared)
        return True

    def _submit(self, job: Any, *args: Any, observation: bool = False) -> bool:
        """Run ``job`` in the learner's thread (False: the thread is shut down)."""
        assert self._thread is not None
        try:
            future: Future[Any] = self._thread.submit(job, *args)
        except RuntimeError:  # shut down: the crawl is closing
            return False
        future.add_done_callback(self._observed if observation else self._done)
        return True

    def _observed(self, future: Future[Any]) -> None:
        self._finished += 1  # one writer (this thread): read whole by the reactor
        self._done(future)

    def _done(self, future: Future[Any]) -> None:
        """In the learner's thread: hand retired rules to the reactor, log failures."""
        from twisted.internet import reactor

        error = future.exception()
        if error is not None:  # logged in the reactor: RepeatedErrors is not thread-safe
            reactor.callFromThread(self._learning_failed, error)
            return
        retired = future.result()
        if retired:
            reactor.callFromThread(self._refetch, retired)

    def _learning_failed(
        self, error: BaseException, message: str = "Could not learn URL rules"
    ) -> None:
        """Count and log an error of the URL rules (never a page's: pages are checked)."""
        self.stats.inc_value(STATS_PREFIX + "errors/rule_learning")
        self.rule_errors.error(f"simhash_filter: {message}", error)

    def _reschedule(self, request: Request) -> bool:
        engine = self.crawler.engine
        if engine is None:
            return False
        try:
            engine.crawl(request.replace(dont_filter=True))
        except Exception:  # the engine is closing: the next crawl fetches it (its rule retired)
            logger.warning("simhash_filter: could not schedule %s again", request, exc_info=True)
            return False
        self.stats.inc_value(REQUEST_STATS + "refetched")
        return True

    def _refetch(self, retired: list[RetiredRule]) -> None:
        """Schedule again (``dont_filter``) what retired rules skipped."""
        for item in retired:
            self.stats.inc_value(RULE_STATS + "retired")
            urls = set(item.urls) | self._held_by_rule.pop(item.rule, set())
            for url in sorted(urls):
                held = self._held.pop(url)
                self._reschedule(held if held is not None else Request(url))

    @property
    def activated(self) -> int:
        """Rules this crawl made active."""
        return 0 if self.learner is None else self.learner.activated
