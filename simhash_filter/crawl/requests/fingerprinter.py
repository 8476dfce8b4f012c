"""``RuleFingerprinter``: Scrapy's request fingerprint, of the request's canonical form.

The add-on sets it as ``REQUEST_FINGERPRINTER_CLASS`` (unless the project set its own), so
everything in Scrapy that asks for a request's fingerprint (the scheduler's dupefilter,
``JOBDIR``'s ``requests.seen``, the HTTP cache, scrapy-redis through
:class:`~simhash_filter.crawl.requests.redis_dupefilter.RedisDupeFilter`) sees a URL variant as the
page it is a variant of, and skips it natively. A request no rule changes, or one
fingerprinted by its own URL (:class:`~simhash_filter.crawl.requests.rule_book.RuleBook`), gets
exactly Scrapy's default fingerprint, so turning the filter off or on keeps a ``JOBDIR``. The
target of a redirect from a URL of its own canonical form gets a fingerprint of its own:
``/a?utm_source=x`` marked ``/a`` seen, and its redirect to ``/a`` must still be fetched; so
does a URL a page declared its canonical when a variant mapped onto it came first (the keep
policy must see the canonical itself). A URL
keeps the fingerprint it was first given (a URL fetched before a rule mapped it is not
fetched again under its canonical form). Requests other than a GET without a body get
Scrapy's own fingerprint: the rules are about pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.request import RequestFingerprinter

from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.requests.rule_book import (
    CANONICAL,
    REDIRECT,
    RuleBook,
    canonical_fingerprint,
)

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["RuleFingerprinter"]


class RuleFingerprinter:
    """A request fingerprinter that wraps Scrapy's default one (module doc)."""

    def __init__(self, book: RuleBook | None, default: RequestFingerprinter) -> None:
        self.book = book
        self.default = default

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        on = config.enabled and config.request_filter
        return cls(RuleBook.for_crawler(crawler) if on else None, RequestFingerprinter())

    def fingerprint(self, request: Request) -> bytes:
        """The default fingerprint of the request's canonical form (of its own URL when no
        rule maps it, or when it must be fetched by its own URL)."""
        book = self.book
        if book is None or request.method != "GET" or request.body:
            return self.default.fingerprint(request)  # rules are about pages: GET, no body
        decided = book.form_of(request)
        if decided.why_own == "verbatim":
            return self.default.fingerprint(request)
        if decided.mapped:
            url = decided.form.url
        elif decided.why_own == REDIRECT:  # a canonical URL has no fragment: none collides
            url = decided.form.own + "#" + REDIRECT
        elif decided.why_own == CANONICAL and not decided.form.changed:
            url = decided.form.own + "#" + CANONICAL  # a variant mapped onto it took its own
        else:  # w3lib's form, made already: Scrapy's own fingerprint
            url = decided.form.own
        return book.fingerprint(decided, lambda: canonical_fingerprint(request, url))
