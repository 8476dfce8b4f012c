"""Pages kept while their host was young, signed again once its template is known (issue 42).

A page kept before its host's template was known is stored signed *unsure*, by a main text
that holds the template's blocks. A copy of it met later, signed without them, is found by
its whole signature (store/unstripped.py); a view of it in another chrome (an AMP, print or
mirror page) is near neither signature, and was kept: the feed held the content twice. So the
stored page is signed again without the template (``FingerprintStore.sign_again``), as soon
as the crawl can:

- :func:`after_copy`: a copy was dropped as its copy by the whole signature: the stored page
  takes the copy's own signature (the copy's text is its text);
- :class:`YoungPages`: the crawl remembers the main text of the pages it kept while their
  host was young (bounded: :data:`MAX_HOST_PAGES` a host, :data:`MAX_CHARS` in all, the
  least recently added host forgotten first); once the host's template is known, each is
  signed again by its text without the template's blocks, in the page work, with its stored
  visible-text slots (``signed_again_sketch``). A text left too short is not signed again:
  its page work would run the other extraction pass, which needs the page.

Evidence, not state: a failure is logged and counted, and the page stays as it was signed.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from scrapy.utils.asyncio import run_in_thread

from simhash_filter.core.signature import PageSignature, marks_unsure, signed_again_sketch
from simhash_filter.core.template import strip_template
from simhash_filter.crawl.pages.templates import TEMPLATE_STATS, HostTemplates, Judged
from simhash_filter.page.work import PageWork
from simhash_filter.store.records import Verdict, VerdictKind
from simhash_filter.store.unstripped import SignedAgain

__all__ = ["MAX_CHARS", "MAX_HOST_PAGES", "MIN_LEFT", "YoungPage", "YoungPages", "after_copy"]

logger = logging.getLogger(__name__)

MAX_HOST_PAGES = 64
"""Pages of one host remembered while it is young, at most."""
MAX_CHARS = 4_000_000
"""Characters of main text remembered in all, at most (the oldest host's go first)."""
MIN_LEFT = 500
"""Characters a young page's text must keep without the template to be signed again: the
page work runs the other extraction pass below this (page/extract.py ``FALLBACK_BELOW``)."""
SIGNED_AGAIN = TEMPLATE_STATS + "signed_again"

Work = Callable[[str, str], Awaitable[PageWork]]
"""The page work of a URL's text (``PageFilter.work``)."""


async def store_signed_again(store: object, again: SignedAgain, stats: Any) -> bool:
    """``store.sign_again(again)`` in a thread, counted; False when it did not (or failed)."""
    sign = getattr(store, "sign_again", None)
    if sign is None:
        return False
    try:
        done = bool(await run_in_thread(sign, again))
    except Exception:
        logger.warning("Could not sign %s again", again.url, exc_info=True)
        stats.inc_value(SIGNED_AGAIN + "_errors")
        return False
    if done:
        stats.inc_value(SIGNED_AGAIN)
    return done


async def after_copy(store: object, judged: Judged, verdict: Verdict, stats: Any) -> None:
    """After the check of a page judged as signed before its host's template was known
    (``Judged.again``): dropped as a copy of the page stored then, that page takes its
    signature."""
    again, kept = judged.again, verdict.duplicate_of
    if again is None or kept is None or verdict.kind is not VerdictKind.DUPLICATE:
        return
    if kept.url == again.url:
        await store_signed_again(store, again, stats)


class YoungPage(NamedTuple):
    """A page kept while its host was young, as the crawl remembers it."""

    url: str  # its canonical URL (the store's key)
    fingerprint: int
    sketch: bytes
    text: str  # the main text it was signed by


class YoungPages:
    """The main texts of the pages kept while their host was young (module doc;
    thread-safe)."""

    def __init__(self, max_chars: int = MAX_CHARS, max_host_pages: int = MAX_HOST_PAGES) -> None:
        self.max_chars = max_chars
        self.max_host_pages = max_host_pages
        self._lock = threading.Lock()
        self._hosts: OrderedDict[str, list[YoungPage]] = OrderedDict()
        self._chars = 0

    @property
    def chars(self) -> int:
        return self._chars

    def remember(
        self, host: str, signature: PageSignature, verdict: Verdict, text: str | None
    ) -> bool:
        """Remember a page checked while its host was young (signed unsure, no template
        applied) and kept as new; True when remembered."""
        if not text or verdict.kind is not VerdictKind.NEW or not signature.sketch:
            return False
        if signature.template_share is not None or not marks_unsure(signature.sketch):
            return False
        page = YoungPage(verdict.url, signature.fingerprint, signature.sketch, text)
        with self._lock:
            pages = self._hosts.setdefault(host, [])
            if len(pages) >= self.max_host_pages or len(text) > self.max_chars:
                return False
            pages.append(page)
            self._hosts.move_to_end(host)
            self._chars += len(text)
            while self._chars > self.max_chars:
                _, forgotten = self._hosts.popitem(last=False)
                self._chars -= sum(len(p.text) for p in forgotten)
        return True

    def take(self, host: str) -> list[YoungPage]:
        """The host's remembered pages, forgotten here (each is signed again once)."""
        with self._lock:
            pages = self._hosts.pop(host, [])
            self._chars -= sum(len(p.text) for p in pages)
        return pages

    def waiting(self, host: str) -> bool:
        """Whether pages of ``host`` wait to be signed again."""
        return host in self._hosts

    async def sign_again(
        self, host: str, templates: HostTemplates, store: object, work: Work, stats: Any
    ) -> int:
        """Once the host's template is known (``templates``), sign its remembered pages
        again without it; the pages signed again. A host without any remembered costs a
        dict lookup (every page checked asks)."""
        if not self.waiting(host):
            return 0
        template = templates.known_blocks(host)
        if template is None:
            return 0
        signed = 0
        for page in self.take(host):
            again = await _signed_again(page, template, work)
            if again is not None and await store_signed_again(store, again, stats):
                signed += 1
        return signed


async def _signed_again(
    page: YoungPage, template: frozenset[int], work: Work
) -> SignedAgain | None:
    """The young page signed by its text without ``template``, or None (nothing of the
    template in it, too little left, or the page work failed)."""
    stripped = strip_template(page.text, template)
    left = stripped.text.strip()
    if not stripped.template_chars or len(left) < MIN_LEFT:
        return None
    try:
        signature = (await work(page.url, left)).signature
        if signature is None or signature.exact or not signature.sketch:
            return None
        sketch = signed_again_sketch(signature.sketch, page.sketch, len(left) / len(page.text))
    except Exception:
        logger.debug("Could not sign %s again", page.url, exc_info=True)
        return None
    return SignedAgain(
        page.url, page.fingerprint, signature.fingerprint, signature.text_length, sketch
    )
