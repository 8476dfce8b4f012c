"""``RuleBook``: the URL rules one crawler applies to its requests, and what each request is.

One per crawler (crawl/per_crawler.py, like the page filter), shared by the request
fingerprinter (which the scheduler's dupefilter asks), the request filter (which counts and
records what was skipped) and the rule learner (which swaps in a new
:class:`~simhash_filter.urls.ruleset.RuleSet` when rules change). :meth:`RuleBook.form_of` says
how a request is fingerprinted: by its canonical form, or by its own URL when it is the
target of a redirect (Heritrix's lesson: ``/a?utm_source=x`` redirecting to ``/a`` must not
find ``/a`` already seen), marked ``verbatim_url``, a URL a page named as its canonical (the
keep policy must see the canonical itself, so no rule may skip it), or in the
1-in-``RULE_SAMPLE`` sample that keeps the rules honest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.detours import DETOUR_META_KEY
from simhash_filter.crawl.per_crawler import crawler_config, crawler_shared
from simhash_filter.urls.ruleset import RuleSet, UrlForm, canonical_host, url_host
from simhash_filter.urls.sampling import is_sampled

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = [
    "CANONICAL",
    "MAX_CANONICALS",
    "MAX_FINGERPRINTS",
    "REDIRECT",
    "RequestForm",
    "RuleBook",
    "canonical_fingerprint",
]

REDIRECT = "redirect"
CANONICAL = "canonical"
MAX_CANONICALS = 100_000
"""Declared canonical URLs remembered per host (past that, a canonical may be skipped by a
rule again: the keep policy then keeps a variant, nothing is lost)."""
MAX_FINGERPRINTS = 50_000
"""URLs whose first fingerprint is remembered (~160 bytes each); past it the oldest quarter is
forgotten (such a URL, linked again, is fingerprinted anew, by its form if a rule maps it now:
at worst a page fetched twice, never one lost), so the crawl's memory does not grow with every
URL: at 200,000 they were 22 MiB of a 100k-page crawl's process, and still growing; at 50,000
they fill between its 30k and 50k pages."""


@dataclass(frozen=True, slots=True)
class RequestForm:
    """What the rules make of one request: its URL's form, and whether the request is
    fingerprinted by that form (``mapped``) or by its own URL (``why_own``: ``verbatim``,
    ``canonical`` (a page named it its canonical), ``sample``, or None when nothing changed
    it), or, the target of a redirect from a URL of
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
        self._prints: set[bytes] = set()  # every fingerprint given
        self._canonicals: dict[str, set[str]] = {}  # declared canonical URLs, by host
        self._mapped: set[int] = set()  # forms given to requests a rule mapped (their hash)
        self._fetched_forms: set[int] = set()  # forms downloaded under their own URL (hash)
        self.rules_changed: list[Callable[[RuleSet], None]] = []
        """Called (in the thread that set them) with the rules in force from now on."""
        self.form_taken: list[Callable[[Request, RequestForm | None], None]] = []
        """Called with a variant skipped at the download: its form downloaded in its place
        (form first), or seen already (with the form it was decided to then)."""

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> RuleBook:
        """The crawler's one rule book, made by the first component that asks
        (:mod:`~simhash_filter.crawl.per_crawler`)."""
        return crawler_shared(crawler, RuleBook, lambda: cls(crawler_config(crawler)))

    def set_rules(self, ruleset: RuleSet) -> None:
        """Use these rules from now on (one assignment: readers see the old or the new), and
        tell the :attr:`rules_changed` listeners."""
        self.ruleset = ruleset
        for listener in self.rules_changed:
            listener(ruleset)

    def form_of(self, request: Request) -> RequestForm:
        """The request's form under the current rules, decided once per request (the
        ``request_scheduled`` signal asks first), so the dupefilter's question and the drop
        that follows see one answer even when the learner swaps the rules in between."""
        cached = self._forms.get(request)
        if cached is not None:
            return cached
        decided = self._decide(request)
        self._forms[request] = decided
        return decided

    def redecide(self, request: Request) -> RequestForm:
        """The request's form under the rules of now (the downloader asks: a rule may have
        become active since the scheduler decided it); ``repeat`` as first decided."""
        first = self.form_of(request)
        now = self._decide(request)
        return RequestForm(now.form, now.why_own, first.repeat)

    def _decide(self, request: Request) -> RequestForm:
        ruleset = self.ruleset
        try:
            form = ruleset.form(request.url)
        except ValueError:  # a URL w3lib cannot canonicalize: Scrapy's own fingerprint decides
            return RequestForm(UrlForm(request.url, request.url), "verbatim")
        why_own = None
        sources = request.meta.get("redirect_urls") or ()
        if any(ruleset.form(source).url == form.url for source in sources):
            why_own = REDIRECT  # its own canonical form was "seen" by the request it ends
        elif DETOUR_META_KEY in request.meta or self.is_canonical(form.own):
            if form.changed or self._taken_by_variant(form.url):
                why_own = CANONICAL  # the keep policy must see it: a rule never skips it
        elif form.changed:
            if request.meta.get("verbatim_url"):
                why_own = "verbatim"
            elif is_sampled(form.own, self.config.rule_sample):
                why_own = "sample"
        return RequestForm(form, why_own, hash(form.own) in self._given)

    def note_canonical(self, url: str, named_by: str | None = None) -> bool:
        """Remember that a page (at ``named_by``) declared ``url`` (the store's canonical
        form) its canonical: from now on no rule maps a request for it. A URL naming itself,
        or a URL of another host, is no such evidence (a site echoing every URL, tracking
        parameters included, as its own canonical would exempt them all). True when new."""
        host = canonical_host(url)
        if not host or (named_by is not None and (named_by == url or url_host(named_by) != host)):
            return False
        known = self._canonicals.setdefault(host, set())
        if url in known or len(known) >= MAX_CANONICALS:
            return False
        known.add(url)  # one set.add: safe beside the reactor's reads (the GIL)
        return True

    def is_canonical(self, url: str) -> bool:
        """True when a page declared ``url`` (w3lib's canonical form) its canonical."""
        if not self._canonicals:
            return False
        known = self._canonicals.get(canonical_host(url))
        return known is not None and url in known

    def fingerprint(self, decided: RequestForm, make: Callable[[], bytes]) -> bytes:
        """The fingerprint a URL was first given (made by ``make`` the first time): a URL
        fetched under its own form before a rule mapped it keeps that fingerprint, so a later
        link to it is a duplicate, not a new canonical form to fetch again."""
        key = hash(decided.form.own)
        given = self._given.get(key)
        if given is None:
            given = self._given[key] = make()
            self._prints.add(given)
            if decided.mapped:
                self._mapped.add(hash(decided.form.url))
            if len(self._given) > MAX_FINGERPRINTS:
                self._forget(len(self._given) // 4)
        return given

    def _forget(self, count: int) -> None:
        """Forget the ``count`` URLs given a fingerprint first (:data:`MAX_FINGERPRINTS`)."""
        for key, given in list(itertools.islice(self._given.items(), count)):
            del self._given[key]
            self._prints.discard(given)

    def form_seen(self, url: str, fingerprint: bytes, mapped: bool) -> bool:
        """True when the form ``url`` (of that ``fingerprint``) will be downloaded for another
        request. For a request given the form's fingerprint (``mapped``, so the first to have
        it): the form's URL was fetched under another fingerprint. For one given its own: its
        form's URL was given a fingerprint, or a variant mapped onto it was given the form's."""
        key = hash(url)
        if mapped:
            return key in self._fetched_forms or self._given.get(key, fingerprint) != fingerprint
        return key in self._given or fingerprint in self._prints

    def adopt_form(self, form: str, variant: str) -> None:
        """The form ``form`` is downloaded in place of ``variant``, a request fingerprinted by
        its own URL (decided before its rule was active): the form's own URL, when linked,
        gets the variant's fingerprint, seen already (a URL keeps the first one it is given)."""
        given = self._given.get(hash(variant))
        if given is not None:
            self._given.setdefault(hash(form), given)

    def took_form(self, decided: RequestForm) -> bool:
        """True when a request a rule mapped took this unmapped request's fingerprint (its
        URL is the form a variant was mapped to) and the form itself was not downloaded in
        the variant's place: the scheduler drops it as seen."""
        return not decided.form.changed and self._taken_by_variant(decided.form.url)

    def _taken_by_variant(self, form: str) -> bool:
        """A request a rule mapped onto ``form`` was given its fingerprint, and the form was
        not downloaded in that variant's place (form first)."""
        key = hash(form)
        return key in self._mapped and key not in self._fetched_forms

    def note_form_fetched(self, url: str) -> None:
        """The form ``url`` is downloaded under its own URL in place of a variant mapped onto
        it (:mod:`~simhash_filter.crawl.requests.form_first`), or scheduled again by its own
        request once a page named it its canonical: a page naming it needs no fetch of it
        again, and a variant mapped onto it is skipped at its download."""
        self._fetched_forms.add(hash(url))  # one set.add: safe beside the reactor's reads

    def form_fetched(self, url: str) -> bool:
        """True when the form ``url`` was downloaded in place of a variant mapped onto it."""
        return hash(url) in self._fetched_forms

    def variant_replaced(self, variant: Request, decided: RequestForm | None) -> None:
        """Tell :attr:`form_taken` listeners that ``variant`` was skipped at the download."""
        for listener in self.form_taken:
            listener(variant, decided)
