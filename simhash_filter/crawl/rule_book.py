"""``RuleBook``: the URL rules one crawler applies to its requests, and what each request is.

One per crawler (kept on the crawler, like the page filter), shared by the request
fingerprinter (which the scheduler's dupefilter asks), the request filter (which counts and
records what was skipped) and the rule learner (which swaps in a new
:class:`~simhash_filter.urls.ruleset.RuleSet` when rules change). :meth:`RuleBook.decide` says
how a request is fingerprinted: by its canonical form, or by its own URL when it is the
target of a redirect (Heritrix's lesson: ``/a?utm_source=x`` redirecting to ``/a`` must not
find ``/a`` already seen), marked ``verbatim_url``, or in the 1-in-``RULE_SAMPLE`` sample
that keeps the rules honest.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simhash_filter.urls.ruleset import RuleSet, UrlForm
from simhash_filter.urls.sampling import is_sampled

from .config import Config

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["CRAWLER_ATTRIBUTE", "REDIRECT", "RequestForm", "RuleBook", "canonical_fingerprint"]

CRAWLER_ATTRIBUTE = "_simhash_filter_rule_book"
REDIRECT = "redirect"


@dataclass(frozen=True, slots=True)
class RequestForm:
    """What the rules make of one request: its URL's form, and whether the request is
    fingerprinted by that form (``mapped``) or by its own URL (``why_own``: ``verbatim``,
    ``sample``, or None when nothing changed it), or, the target of a redirect from a URL of
    the same form (``redirect``), by a fingerprint no other request has: the form it
    shares with the redirecting request was marked seen by that very request."""

    form: UrlForm
    why_own: str | None = None
    repeat: bool = False
    """Its URL was given a fingerprint before (a request Scrapy's dupefilter drops anyway)."""

    @property
    def mapped(self) -> bool:
        """True when the request is fingerprinted by a form a rule made."""
        return self.form.changed and self.why_own is None


def canonical_fingerprint(request: Request, url: str) -> bytes:
    """Scrapy's default request fingerprint (``scrapy.utils.request.fingerprint``), of the
    request as if its URL were ``url`` (already canonical): the SHA-1 of the JSON of method,
    URL, body and no headers, keys sorted, written here without ``json.dumps``'s dict walk.
    A test pins it to Scrapy's own."""
    method = request.method if isinstance(request.method, str) else str(request.method)
    body = (request.body or b"").hex()
    data = (
        f'{{"body": "{body}", "headers": {{}}, "method": {json.dumps(method)}, '
        f'"url": {json.dumps(url)}}}'
    )
    return hashlib.sha1(data.encode()).digest()


class RuleBook:
    """The crawler's current rules (module doc)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.ruleset = RuleSet(universal=config.universal_rules)
        self._forms: weakref.WeakKeyDictionary[Request, RequestForm] = weakref.WeakKeyDictionary()
        self._given: dict[int, bytes] = {}  # a URL's first fingerprint, by the hash of its form

    @classmethod
    def for_crawler(cls, crawler: Crawler, config: Config | None = None) -> RuleBook:
        """The crawler's one rule book, made by the first component that asks."""
        book: RuleBook | None = getattr(crawler, CRAWLER_ATTRIBUTE, None)
        if book is None:
            book = cls(config or Config.from_settings(crawler.settings))
            setattr(crawler, CRAWLER_ATTRIBUTE, book)
        return book

    def set_rules(self, ruleset: RuleSet) -> None:
        """Use these rules from now on (one assignment: readers see the old or the new)."""
        self.ruleset = ruleset

    def decide(self, request: Request) -> RequestForm:
        """The request's form under the current rules, decided once per request (the
        ``request_scheduled`` signal asks first), so the dupefilter's question and the drop
        that follows see one answer even when the learner swaps the rules in between."""
        cached = self._forms.get(request)
        if cached is not None:
            return cached
        ruleset = self.ruleset
        try:
            form = ruleset.form(request.url)
        except ValueError:  # a URL w3lib cannot canonicalize: Scrapy's own fingerprint decides
            form = UrlForm(request.url, request.url)
            self._forms[request] = RequestForm(form, "verbatim")
            return self._forms[request]
        why_own = None
        sources = request.meta.get("redirect_urls") or ()
        if any(ruleset.form(source).url == form.url for source in sources):
            why_own = REDIRECT  # its own canonical form was "seen" by the request it ends
        elif form.changed:
            if request.meta.get("verbatim_url"):
                why_own = "verbatim"
            elif is_sampled(form.own, self.config.rule_sample):
                why_own = "sample"
        decided = RequestForm(form, why_own, hash(form.own) in self._given)
        self._forms[request] = decided
        return decided

    def fingerprint(self, decided: RequestForm, make: Callable[[], bytes]) -> bytes:
        """The fingerprint a URL was first given (made by ``make`` the first time): a URL
        fetched under its own form before a rule mapped it keeps that fingerprint, so a later
        link to it is a duplicate, not a new canonical form to fetch again."""
        key = hash(decided.form.own)
        given = self._given.get(key)
        if given is None:
            given = self._given[key] = make()
        return given
