"""Form first (simhash_filter/crawl/requests/form_first.py): a mapped variant's download fetches its
form's URL instead; the variant's own URL when the form answers anything but 200 or fails;
a variant decided before its rule was active is skipped at the download when its form was
seen; the skipped variant is recorded like a dupefilter skip, so a retiring rule refetches it."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.request import RequestFingerprinter, fingerprint
from scrapy.utils.test import get_crawler

from simhash_filter import Addon
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.form_first import (
    FORM_OF_META_KEY,
    FormFirstMiddleware,
    SkippedLate,
)
from simhash_filter.crawl.requests.request_filter import REQUEST_STATS, RequestFilter
from simhash_filter.crawl.requests.rule_book import RuleBook
from simhash_filter.urls.key import PageKey
from simhash_filter.urls.rules import PARAM, PREFIX, UrlRule
from simhash_filter.urls.ruleset import RuleSet
from simhash_filter.urls.sampling import is_sampled
from tests.crawl.requests.test_canonical_requests import _extension

H = "site.example"
REPLY = UrlRule(H, PARAM, "/news/?replytocom")


def _unsampled(template: str) -> str:
    return next(template.format(k) for k in range(100) if not is_sampled(template.format(k), 20))


def _sampled(template: str) -> str:
    return next(template.format(k) for k in range(1000) if is_sampled(template.format(k), 20))


class _Scheduler:
    """The scheduler's dupefilter over the rule fingerprinter, and the request filter."""

    def __init__(self) -> None:
        self.extension, self.scheduled, self.learner = _extension()
        self.book: RuleBook = self.extension.book
        self.fingerprinter = RuleFingerprinter(self.book, RequestFingerprinter())
        self.seen: set[bytes] = set()
        stats = self.extension.stats
        self.middleware = FormFirstMiddleware(self.book, stats)

    def schedule(self, url: str) -> Request | None:
        request = Request(url)
        self.extension.request_scheduled(request)
        fp = self.fingerprinter.fingerprint(request)
        if fp in self.seen:
            self.extension.request_dropped(request)
            return None
        self.seen.add(fp)
        return request

    def stat(self, name: str) -> int:
        return int(self.extension.stats.get_value(REQUEST_STATS + name, 0))


def _response(request: Request, status: int = 200) -> HtmlResponse:
    return HtmlResponse(request.url, status=status, body=b"<html></html>", request=request)


def test_a_mapped_variant_fetches_its_form_and_the_form_link_is_skipped() -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    form = _unsampled(f"http://{H}/news/a{{}}/")
    variant = crawl.schedule(form + "?replytocom=3")
    assert variant is not None
    sent = crawl.middleware.process_request(variant)
    assert isinstance(sent, Request)
    assert sent.url == form
    assert sent.dont_filter
    assert sent.meta[FORM_OF_META_KEY] == variant.url
    assert crawl.middleware.process_request(sent) is None  # downloaded as it is
    response = _response(sent)
    assert crawl.middleware.process_response(sent, response) is response
    assert crawl.stat("form_first") == 1
    assert crawl.stat("skipped/rule") == 1  # the variant: a skip of its rule
    assert crawl.extension._held_by_rule[REPLY] == {variant.url}  # refetched if REPLY retires
    assert crawl.schedule(form) is None  # the form's own link: seen
    assert crawl.scheduled == []


@pytest.mark.parametrize("status", [301, 404, 500])
def test_a_form_answering_other_than_200_fetches_the_variant(status: int) -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([UrlRule(H, PREFIX, "/print/ -> /")]))
    path = _unsampled("/news/b{}/")
    variant = crawl.schedule(f"http://{H}/print{path}")
    assert variant is not None
    sent = crawl.middleware.process_request(variant)
    assert isinstance(sent, Request)
    assert sent.url == f"http://{H}{path}"
    again = crawl.middleware.process_response(sent, _response(sent, status))
    assert isinstance(again, Request)
    assert again.url == variant.url
    assert again.dont_filter
    assert FORM_OF_META_KEY not in again.meta
    assert crawl.middleware.process_request(again) is None  # downloaded as it is
    # fingerprinted by its own URL: Scrapy's default fingerprint
    assert crawl.fingerprinter.fingerprint(again) == fingerprint(Request(variant.url))
    assert crawl.stat("form_failed") == 1
    assert crawl.stat("form_first") == 0
    assert crawl.stat("skipped/rule") == 0


def test_a_form_that_cannot_be_downloaded_fetches_the_variant() -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    variant = crawl.schedule(_unsampled(f"http://{H}/news/c{{}}/") + "?replytocom=1")
    assert variant is not None
    sent = crawl.middleware.process_request(variant)
    assert isinstance(sent, Request)
    again = crawl.middleware.process_exception(sent, ConnectionRefusedError())
    assert isinstance(again, Request)
    assert again.url == variant.url
    assert crawl.middleware.process_exception(variant, ConnectionRefusedError()) is None


def test_sampled_unmapped_and_dont_filter_requests_are_downloaded_as_they_are() -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    sampled = crawl.schedule(_sampled(f"http://{H}/news/d{{}}/?replytocom=1"))
    plain = crawl.schedule(f"http://{H}/news/e/")
    assert sampled is not None
    assert plain is not None
    assert crawl.middleware.process_request(sampled) is None
    assert crawl.middleware.process_request(plain) is None
    forced = Request(_unsampled(f"http://{H}/news/f{{}}/") + "?replytocom=1", dont_filter=True)
    assert crawl.middleware.process_request(forced) is None


def test_a_variant_decided_before_its_rule_is_skipped_at_the_download() -> None:
    """Scheduled (and fingerprinted by its own URL) before the rule was active; by its
    download the rule is active: fetched as its form when the form is new, skipped when
    the form was seen, and the form's own link is then a duplicate."""
    crawl = _Scheduler()
    form = _unsampled(f"http://{H}/news/g{{}}/")
    first = crawl.schedule(form + "?replytocom=1")
    second = crawl.schedule(form + "?replytocom=2")
    assert first is not None
    assert second is not None
    crawl.book.set_rules(RuleSet([REPLY]))
    sent = crawl.middleware.process_request(first)
    assert isinstance(sent, Request)
    assert sent.url == form
    with pytest.raises(SkippedLate):
        crawl.middleware.process_request(second)
    assert crawl.stat("skipped_late") == 1
    assert crawl.stat("skipped/rule") == 1
    assert crawl.schedule(form) is None  # the form's link: the fingerprint it was fetched under
    crawl.middleware.process_response(sent, _response(sent))
    assert crawl.stat("form_first") == 1


def test_a_variant_whose_form_was_scheduled_is_skipped_at_the_download() -> None:
    crawl = _Scheduler()
    form = _unsampled(f"http://{H}/news/h{{}}/")
    variant = crawl.schedule(form + "?replytocom=1")
    assert crawl.schedule(form) is not None
    assert variant is not None
    crawl.book.set_rules(RuleSet([REPLY]))
    with pytest.raises(SkippedLate):
        crawl.middleware.process_request(variant)


def test_a_rule_retired_before_the_form_answered_refetches_the_variant() -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    variant = crawl.schedule(_unsampled(f"http://{H}/news/i{{}}/") + "?replytocom=1")
    assert variant is not None
    sent = crawl.middleware.process_request(variant)
    assert isinstance(sent, Request)
    crawl.book.set_rules(RuleSet([]))  # retired meanwhile
    crawl.middleware.process_response(sent, _response(sent))
    assert [r.url for r in crawl.scheduled] == [variant.url]
    assert crawl.stat("refetched") == 1


def test_a_declared_canonical_fetched_as_a_form_is_not_fetched_again() -> None:
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    form = _unsampled(f"http://{H}/news/j{{}}/")
    variant = crawl.schedule(form + "?replytocom=1")
    assert variant is not None
    sent = crawl.middleware.process_request(variant)
    assert isinstance(sent, Request)
    crawl.book.note_canonical(form, named_by=form + "?print=1")
    assert crawl.schedule(form) is None
    assert crawl.scheduled == []


def test_the_request_filter_counts_active_rules_as_they_change() -> None:
    extension: RequestFilter = _extension()[0]
    extension.book.set_rules(RuleSet([REPLY, UrlRule(H, PREFIX, "/print/ -> /")]))
    assert extension.stats.get_value("simhash_filter/rules/active") == 2
    extension.book.set_rules(RuleSet([REPLY]))
    assert extension.stats.get_value("simhash_filter/rules/active") == 1


def test_a_shared_frontier_has_no_form_first() -> None:
    """scrapy-redis: another worker may reach (or have fetched) the form whose fetch in a
    variant's place only this process remembers, so it would be fetched twice; the variant
    is downloaded as it is."""
    settings = {"ADDONS": {Addon: 100}, "SIMHASH_FILTER_DATABASE_URL": "sqlite://"}
    assert FormFirstMiddleware.from_crawler(get_crawler(settings_dict=settings))
    shared = get_crawler(
        settings_dict={**settings, "SCHEDULER": "crawler.frontier.FrontierScheduler"}
    )
    with pytest.raises(NotConfigured, match="scrapy-redis"):
        FormFirstMiddleware.from_crawler(shared)


def test_a_canonical_fetched_after_its_hint_is_not_fetched_again_by_its_variant() -> None:
    """The form's own link was dropped (a variant mapped onto it took its fingerprint, and is
    still queued); a page then names the form its canonical, so the form is scheduled again;
    the variant's download must not fetch the form a second time (two responses of one URL,
    two items)."""
    crawl = _Scheduler()
    crawl.book.set_rules(RuleSet([REPLY]))
    form = _unsampled(f"http://{H}/news/k{{}}/")
    variant = crawl.schedule(form + "?replytocom=1")
    assert variant is not None
    assert crawl.schedule(form) is None  # its fingerprint was the variant's
    naming = f"http://{H}/news/other/"
    crawl.extension._on_result(FilterResult(Outcome.KEPT, naming, key=PageKey.of(naming, form)))
    assert [r.url for r in crawl.scheduled] == [form]  # the canonical, fetched after all
    with pytest.raises(SkippedLate):
        crawl.middleware.process_request(variant)
    assert crawl.stat("skipped_late") == 1
