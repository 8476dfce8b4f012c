"""The request rules and the keep policy together: a URL a page declares its canonical is
never skipped by a rule (the keep policy must see it), and confirmed canonical pairs reach
the rule learner."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler

from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.request_filter import REQUEST_STATS, RequestFilter
from simhash_filter.crawl.requests.rule_book import CANONICAL, RuleBook
from simhash_filter.store.records import Match, Supersession, Verdict, VerdictKind
from simhash_filter.urls.key import PageKey
from simhash_filter.urls.rules import SUFFIX, UrlRule
from simhash_filter.urls.ruleset import RuleSet
from simhash_filter.urls.sampling import is_sampled
from tests.crawl.requests.test_request_filter import Crawl

H = "site.example"


def _unsampled(template: str) -> str:
    return next(template.format(k) for k in range(100) if not is_sampled(template.format(k), 20))


def _book(*rules: UrlRule) -> tuple[RuleBook, RuleFingerprinter]:
    book = RuleBook(Config())
    book.set_rules(RuleSet(rules))
    return book, RuleFingerprinter(book, RequestFingerprinter())


def test_a_declared_canonical_is_not_skipped_by_a_rule_pointing_away_from_it() -> None:
    """``/ -> `` maps the canonical ``/news/x/`` onto ``/news/x``: without its hint the
    canonical is skipped once ``/news/x`` was scheduled; with it, it is fetched."""
    canonical = _unsampled(f"http://{H}/news/x{{}}/")
    variant = canonical.rstrip("/")
    for hinted in (False, True):
        book, fingerprinter = _book(UrlRule(H, SUFFIX, "/ -> "))
        seen = {fingerprinter.fingerprint(Request(variant))}
        if hinted:
            assert book.note_canonical(canonical, named_by=variant)
        decided = book.form_of(request := Request(canonical))
        assert (decided.why_own == CANONICAL) is hinted
        assert (fingerprinter.fingerprint(request) in seen) is not hinted


def test_a_declared_canonical_a_variant_was_mapped_onto_gets_its_own_fingerprint() -> None:
    """``/index.html -> /`` maps the variant onto the canonical's own URL: the variant,
    scheduled first, took the canonical's fingerprint."""
    canonical = _unsampled(f"http://{H}/a{{}}/")
    variant = canonical + "index.html"
    for hinted in (False, True):
        book, fingerprinter = _book(UrlRule(H, SUFFIX, "/index.html -> /"))
        seen = {fingerprinter.fingerprint(Request(variant))}
        if hinted:
            book.note_canonical(canonical, named_by=variant)
        assert (fingerprinter.fingerprint(Request(canonical)) in seen) is not hinted
    # scheduled before any variant, the canonical keeps Scrapy's own fingerprint, and the
    # variants that follow are skipped as copies of it
    book, fingerprinter = _book(UrlRule(H, SUFFIX, "/index.html -> /"))
    book.note_canonical(canonical, named_by=variant)
    seen = {fingerprinter.fingerprint(Request(canonical))}
    assert fingerprinter.fingerprint(Request(variant)) in seen


def test_a_url_naming_itself_or_another_host_is_no_canonical_evidence() -> None:
    """A site echoing every URL (tracking parameters included) as its own canonical must not
    exempt them all."""
    book, _ = _book()
    echo = f"http://{H}/a?utm_source=x"
    assert not book.note_canonical(echo, named_by=echo)
    assert not book.note_canonical("http://other.example/a", named_by=f"http://{H}/a")
    assert not book.is_canonical(echo)
    assert book.note_canonical(f"http://{H}/a", named_by=echo)
    assert not book.note_canonical(f"http://{H}/a", named_by=echo)  # known already
    assert book.is_canonical(f"http://{H}/a")


class _Now:
    """An executor that runs a job at once (the learner's thread, made synchronous)."""

    def submit(self, job: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(job(*args))
        return future


class _Learner:
    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []
        self.observed: list[str] = []

    def observe(
        self,
        outcome: Outcome,
        url: str,
        duplicate_of: str | None,
        declared: str | None = None,
        listing: bool = False,
    ) -> list[object]:
        self.observed.append(url)
        return []

    def observe_pair(self, first: str, second: str, listing: bool = False) -> list[object]:
        self.pairs.append((first, second))
        return []

    def skipped(self, skips: object) -> None:
        pass


def _extension() -> tuple[RequestFilter, list[Request], _Learner]:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    crawler.stats.open_spider()  # type: ignore[union-attr]
    extension = RequestFilter.from_crawler(crawler)
    scheduled: list[Request] = []
    crawler.engine = type("Engine", (), {"crawl": staticmethod(scheduled.append)})()  # type: ignore[assignment]
    learner = _Learner()
    extension.learner = learner  # type: ignore[assignment]
    extension._thread = _Now()  # type: ignore[assignment]
    return extension, scheduled, learner


def _schedule(extension: RequestFilter, dupefilter: RuleFingerprinter, *requests: Request) -> None:
    """``requests`` scheduled as the scheduler does: one whose fingerprint was seen is dropped."""
    seen: set[bytes] = set()
    for request in requests:
        extension.request_scheduled(request)
        fingerprint = dupefilter.fingerprint(request)
        if fingerprint in seen:
            extension.request_dropped(request)
        seen.add(fingerprint)


def test_a_canonical_skipped_before_its_hint_was_known_is_fetched_after_all() -> None:
    extension, scheduled, _ = _extension()
    extension.book.set_rules(RuleSet([UrlRule(H, SUFFIX, "/ -> ")]))
    canonical = _unsampled(f"http://{H}/news/y{{}}/")
    variant = canonical.rstrip("/")
    dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())
    _schedule(extension, dupefilter, Request(variant), Request(canonical))  # as the scheduler does
    assert scheduled == []
    extension._on_result(FilterResult(Outcome.KEPT, variant, key=PageKey.of(variant, canonical)))
    assert [r.url for r in scheduled] == [canonical]
    assert scheduled[0].dont_filter
    stats = extension.stats.get_stats()
    assert stats[REQUEST_STATS + "refetched"] == 1


def test_the_form_of_a_kept_variant_is_fetched_when_no_hint_names_it() -> None:
    """A variant kept first (its hint names the home page, or nothing) took the form's
    fingerprint: the form, which the keep policy prefers, is fetched after all."""
    for declared in (None, f"http://{H}/"):
        extension, scheduled, _ = _extension()
        form = _unsampled(f"http://{H}/news/v{{}}/")
        variant = form + "?sid=0123456789abcdef0123"  # a universal session parameter
        dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())
        _schedule(extension, dupefilter, Request(variant), Request(form))
        assert scheduled == []
        extension._on_result(
            FilterResult(Outcome.DROPPED, variant, key=PageKey.of(variant, declared))
        )
        assert scheduled == []  # a copy of no known page: nothing to ask
        extension._on_result(FilterResult(Outcome.KEPT, variant, key=PageKey.of(variant, declared)))
        assert [r.url for r in scheduled] == [form]
        extension._on_result(FilterResult(Outcome.KEPT, form, key=PageKey.of(form, declared)))
        assert len(scheduled) == 1  # the form itself: nothing more to fetch


def test_a_copy_of_a_kept_variant_asks_for_the_form_rules_learned_since() -> None:
    """``/a/index.html`` was kept before ``/index.html -> /`` was known; a later copy of it
    has the rules ask for ``/a/``, which the scheduler skipped meanwhile."""
    extension, scheduled, _ = _extension()
    form = _unsampled(f"http://{H}/news/u{{}}/")
    variant = form + "index.html"
    extension._on_result(FilterResult(Outcome.KEPT, variant))
    assert scheduled == []  # no rule maps it yet
    extension.book.set_rules(RuleSet([UrlRule(H, SUFFIX, "/index.html -> /")]))
    dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())
    copy = variant + "?utm_source=x"  # mapped onto the form: it takes the form's fingerprint
    _schedule(extension, dupefilter, Request(copy), Request(form))
    assert scheduled == []
    dropped = Verdict(VerdictKind.DUPLICATE, copy, 1, duplicate_of=Match(variant, 1, 0, 1))
    extension._on_result(FilterResult(Outcome.DROPPED, copy, 1, dropped))
    assert [r.url for r in scheduled] == [form]


def test_an_idle_crawl_fetches_the_forms_rules_learned_late_give_kept_pages() -> None:
    """Every copy of ``/a/index.html`` came before ``/index.html -> /`` was known: when the
    crawl runs dry, the form ``/a/`` the scheduler skipped is fetched after all, once."""
    extension, scheduled, _ = _extension()
    form = _unsampled(f"http://{H}/news/t{{}}/")
    variant = form + "index.html"
    extension._on_result(FilterResult(Outcome.KEPT, variant))
    extension._on_result(FilterResult(Outcome.KEPT, f"http://{H}/other/"))  # no rule maps it
    extension.spider_idle()  # nothing learned yet: the crawl may close
    extension.book.set_rules(RuleSet([UrlRule(H, SUFFIX, "/index.html -> /")]))
    dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())
    _schedule(extension, dupefilter, Request(variant + "?utm_source=x"), Request(form))
    assert scheduled == []
    with pytest.raises(DontCloseSpider):
        extension.spider_idle()
    assert [r.url for r in scheduled] == [form]
    extension.spider_idle()  # the same rules: nothing more to do, the crawl may close
    assert len(scheduled) == 1


def test_confirmed_canonical_pairs_and_superseded_pairs_reach_the_learner() -> None:
    extension, _, learner = _extension()
    canonical, variant = f"http://{H}/news/z/", f"http://{H}/news/z?print=1"
    match = Match(canonical, 1, 0, 1)
    dropped = Verdict(VerdictKind.DUPLICATE, variant, 1, duplicate_of=match)
    confirmed = FilterResult(
        Outcome.DROPPED, variant, 1, dropped, key=PageKey.of(variant, canonical)
    )
    assert confirmed.canonical_confirmed
    extension._on_result(confirmed)
    assert learner.pairs == [(variant, canonical)]
    other = f"http://{H}/news/w/"  # declares another page: no confirmed pair
    extension._on_result(
        FilterResult(Outcome.DROPPED, variant, 1, dropped, key=PageKey.of(variant, other))
    )
    assert learner.pairs == [(variant, canonical)]
    replaced = Supersession(variant, canonical, 1, 2, 0)
    new = Verdict(VerdictKind.NEW, canonical, 1)
    extension._on_result(FilterResult(Outcome.KEPT, canonical, 1, new, superseded=replaced))
    assert learner.pairs[-1] == (variant, canonical)
    assert learner.observed == [variant, variant, canonical]


def test_the_learner_maps_toward_the_canonical_and_never_adds_the_reverse(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path)
    for k in range(3):  # /news/k dropped as a copy of /news/k/, which it declares canonical
        canonical = f"http://{H}/news/{k}/"
        crawl.keep(canonical)
        crawl.learner.observe(Outcome.DROPPED, f"http://{H}/news/{k}", canonical, canonical)
    assert crawl.active() == {UrlRule(H, SUFFIX, " -> /")}
    for k in range(3, 8):  # pairs without hints would propose the reverse: never made
        crawl.keep(f"http://{H}/news/{k}/")
        crawl.drop(f"http://{H}/news/{k}", f"http://{H}/news/{k}/")
    assert crawl.active() == {UrlRule(H, SUFFIX, " -> /")}
    assert all(stored.rule.pattern != "/ -> " for stored in crawl.learner.store.rules())
    assert crawl.learner.book.ruleset.form(f"http://{H}/news/9").url == f"http://{H}/news/9/"
