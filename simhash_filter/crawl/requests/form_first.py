"""``FormFirstMiddleware``: download a variant's canonical form in its place.

The scheduler lets through the first request of each canonical form (its fingerprint is the
form's). When a rule mapped that request (``/news/a/?replytocom=3`` → ``/news/a/``),
downloading the variant keeps the variant, and the form's own URL, linked later, is either
skipped (its fingerprint was taken) or fetched again to supersede the variant. This downloader
middleware downloads the form's URL instead: the page kept is the form, and its later links
are skipped natively.

The variant is then a skipped request like any other (a prediction of its rules: counted,
recorded under its rules, fetched again if one of them retires). When the form answers
anything but 200 (a redirect, an error status) or cannot be downloaded, the variant's own URL
is fetched after all, fingerprinted by itself (``verbatim_url``): nothing is reached only
through a form the site does not serve. Sampled requests, declared canonicals, redirect targets
and ``dont_filter`` requests are downloaded as they are.

Not on a shared frontier (scrapy-redis): which forms were fetched, and which fingerprint a URL
was given first, is this process's memory, so a form fetched in a variant's place by one
worker is fetched again by another that reaches its link (or had fetched it already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from simhash_filter.crawl.pages.canonical_first import shared_frontier
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.requests.rule_book import RuleBook, canonical_fingerprint

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

__all__ = ["FORM_OF_META_KEY", "PRIORITY", "FormFirstMiddleware", "SkippedLate"]

PRIORITY = 650
"""Above RedirectMiddleware (600) and RetryMiddleware (550): the form's raw answer (a 3xx,
a 5xx) is seen before either acts on it, and the variant is fetched in its place."""
FORM_OF_META_KEY = "simhash_filter_form_of"
"""Meta key of a form's request sent in a variant's place: the variant's URL."""
FALLBACK_STAT = STATS_PREFIX + "requests/form_failed"


class SkippedLate(IgnoreRequest):
    """A variant decided before its rule was active, skipped at the download: its form was
    given to another request (counted and recorded as a skip, like the dupefilter's)."""


class FormFirstMiddleware:
    """Downloader middleware: a mapped variant's download fetches its form (module doc)."""

    def __init__(self, book: RuleBook, stats: StatsCollector) -> None:
        self.book = book
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not (config.enabled and config.request_filter and config.form_first):
            raise NotConfigured("SIMHASH_FILTER_FORM_FIRST is off")
        if shared_frontier(crawler):
            raise NotConfigured("form first needs a frontier of its own process (not scrapy-redis)")
        assert crawler.stats is not None
        return cls(RuleBook.for_crawler(crawler), crawler.stats)

    def process_request(self, request: Request) -> Request | None:
        """The form's request in place of a mapped variant's (None: download it as it is).

        Decided again under the rules of now: a variant the scheduler let through before its
        rule was active is skipped here when its form was given to another request (as the
        dupefilter would have), else its form is fetched in its place."""
        if request.dont_filter or FORM_OF_META_KEY in request.meta:
            return None
        first = self.book.form_of(request)
        if first.repeat or (first.why_own is not None and first.form.changed):
            return None  # sampled, a declared canonical, a redirect's target: as it is
        now = first if first.mapped else self.book.redecide(request)
        if not now.mapped:
            return None
        form = now.form.url
        if self.book.form_seen(form, canonical_fingerprint(request, form), first.mapped):
            self.book.variant_replaced(request, now)
            raise SkippedLate(f"Skipped {request}: its canonical form {form} was seen")
        if not first.mapped:  # fingerprinted by its own URL: the form's URL takes that one
            self.book.adopt_form(form, now.form.own)
        self.book.note_form_fetched(form)
        meta = {**request.meta, FORM_OF_META_KEY: request.url}
        return request.replace(url=form, dont_filter=True, meta=meta)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        """A form that answered 200 stands for its variant; anything else: the variant."""
        variant = request.meta.get(FORM_OF_META_KEY)
        if not isinstance(variant, str):
            return response
        if response.status != 200:
            return self._fallback(request, variant)
        self.book.variant_replaced(_variant(request, variant), None)
        return response

    def process_exception(self, request: Request, exception: BaseException) -> Request | None:
        """The form could not be downloaded (or was refused): the variant is fetched."""
        variant = request.meta.get(FORM_OF_META_KEY)
        if not isinstance(variant, str) or isinstance(exception, SkippedLate):
            return None
        return self._fallback(request, variant)

    def _fallback(self, request: Request, variant: str) -> Request:
        self.stats.inc_value(FALLBACK_STAT)
        fallback = _variant(request, variant)
        fallback.meta["verbatim_url"] = True  # its own fingerprint: never "seen" by its form
        return fallback.replace(dont_filter=True)


def _variant(form_request: Request, url: str) -> Request:
    """The variant's request again, from the form's request sent in its place."""
    meta = {k: v for k, v in form_request.meta.items() if k != FORM_OF_META_KEY}
    for key in ("redirect_times", "redirect_ttl", "retry_times"):
        meta.pop(key, None)
    return form_request.replace(url=url, dont_filter=False, meta=meta)
