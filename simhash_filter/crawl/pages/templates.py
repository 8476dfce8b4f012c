"""The hosts' templates as a crawl learns and uses them (core/template.py, store/templates.py).

Before a page's work, :meth:`HostTemplates.template` gives its host's template as the store
knows it (cached; read again while the host is young, after every :data:`REFRESH_PAGES`
pages this process learned from, and every :data:`REFRESH_SECONDS`, so that the pages
other crawlers of one database learned from count). After a page is admitted as new, its
block hashes wait in :meth:`HostTemplates.learn` and go to the store in one transaction
(:meth:`HostTemplates.flush`, one at a time in a worker thread; the rest at close), with the
template shares of the pages checked against a known template (``lookup`` shows them).
Learning is evidence, not state: a flush that fails is logged and the crawl goes on with what
the store knew.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Any, NamedTuple

from scrapy.utils.asyncio import run_in_thread

from simhash_filter.core.signature import PageSignature, marks_unsure
from simhash_filter.core.template import HostTemplate
from simhash_filter.crawl.pages.outcomes import STATS_PREFIX
from simhash_filter.store.records import Verdict, VerdictKind
from simhash_filter.store.templates import PageShare, TemplateStore
from simhash_filter.store.unstripped import SignedAgain, copy_signed_unsure

__all__ = ["REFRESH_PAGES", "REFRESH_SECONDS", "TEMPLATE_STATS", "HostTemplates", "Judged"]

logger = logging.getLogger(__name__)

REFRESH_PAGES = 20
"""Pages of a known host this process learns from before its template is read again."""
SAMPLE_EVERY = 4
"""A known host's pages whose blocks are hashed and learned from: 1 in this many (each costs
~1 ms of page work, ~5 % of it); every page while the host is young, and while its pages do
not fit its template (:data:`MISFIT_PAGES`)."""
MISFIT_PAGES = 20
"""Pages of a known host in a row that do not fit its template (a new layout, a template
changed) whose blocks are all hashed, so the new layout is learned from each of its pages
(it needs ``TEMPLATE_MIN_PAGES`` of them). A host whose pages keep not fitting (many layouts
under one host) is then sampled as a fitting one is, 1 in :data:`SAMPLE_EVERY`;
:data:`FITS_AGAIN` sampled pages in a row that fit start the count again (a page now and then
that fits does not: a host of many layouts has some)."""
FITS_AGAIN = 3
"""Sampled pages in a row that fit a known host's template, after which its pages that do not
are counted again from 0 (:data:`MISFIT_PAGES`)."""
DOUBT_REFRESH = 5
"""Pages learned from, after one that did not fit the known template, before the host's
template is read again."""
SHARES_FLUSH = 50
"""Pages' template shares queued before they are written by themselves; fewer go with the next
pages' blocks learned (one transaction), or at close."""
REFRESH_SECONDS = 30.0
"""Seconds a host's template is used before it is read again (other crawlers learn too)."""
TEMPLATE_STATS = STATS_PREFIX + "template/"
"""Prefix of the template stats: ``stripped`` (pages whose extraction held blocks of their
host's template, signed without them) and ``only`` (pages of nothing else: signed by their
bytes), ``unstripped`` (pages checked as signed before their host's template was known: a
copy of them was stored then), ``signed_again`` (pages stored then, signed again as such a
copy of them was)."""


class Judged(NamedTuple):
    """The signature a page is checked by (:meth:`HostTemplates.judged`)."""

    signature: PageSignature
    again: SignedAgain | None = None  # the stored page it finds, signed as the page is


class _Fit:
    """How a known host's sampled pages fitted its template lately (kept across reads)."""

    __slots__ = ("fits", "misfits")

    def __init__(self) -> None:
        self.misfits = 0  # pages that did not fit, since FITS_AGAIN in a row did
        self.fits = 0  # pages in a row that fitted

    def page(self, fitted: bool) -> None:
        if fitted:
            self.fits += 1
            if self.fits >= FITS_AGAIN:
                self.misfits = 0
        else:
            self.fits = 0
            self.misfits += 1


class _Cached:
    __slots__ = ("doubt", "fit", "learned", "read_at", "served", "template")

    def __init__(self, template: HostTemplate, read_at: float, fit: _Fit | None = None) -> None:
        self.template = template
        self.read_at = read_at
        self.learned = 0  # pages of the host learned from since the read
        self.doubt = not template.known  # a page was signed unsure: read again soon
        self.served = 0  # pages given the template (1 in SAMPLE_EVERY is sampled)
        self.fit = fit or _Fit()

    def sampled(self) -> bool:
        """Whether the next page's blocks are hashed (:data:`SAMPLE_EVERY`,
        :data:`MISFIT_PAGES`)."""
        if not self.template.known or 0 < self.fit.misfits <= MISFIT_PAGES:
            return True
        return self.served % SAMPLE_EVERY == 1


class HostTemplates:
    """The crawl's view of its hosts' templates (thread-safe)."""

    def __init__(self, min_pages: int, *, clock: Any = time.monotonic) -> None:
        self.min_pages = min_pages
        self._clock = clock
        self._store: TemplateStore | None = None
        self._lock = threading.Lock()
        self._cache: dict[str, _Cached] = {}
        self._pending: list[tuple[str, tuple[int, ...]]] = []
        self._shares: list[PageShare] = []
        self._flushing = False
        self._thread: threading.Thread | None = None

    def attach(self, store: object) -> None:
        """Use ``store`` (a ``FingerprintStore``; anything without an engine: no templates)."""
        self._store = TemplateStore(store) if hasattr(store, "engine") else None  # type: ignore[arg-type]

    @property
    def enabled(self) -> bool:
        return self.min_pages > 0 and self._store is not None

    def cached(self, host: str) -> HostTemplate | None:
        """The host's template when the cache holds it fresh, else None (:meth:`template`),
        asking for the page's blocks (:attr:`HostTemplate.blocks_wanted`) as sampled."""
        with self._lock:
            entry = self._cache.get(host)
            if entry is None or self._stale(entry):
                return None
            entry.served += 1
            return entry.template._replace(blocks_wanted=entry.sampled())

    def known_blocks(self, host: str) -> frozenset[int] | None:
        """The blocks of the host's template as last read, when it is known; else None."""
        with self._lock:
            entry = self._cache.get(host)
        if entry is None or not entry.template.known or not entry.template.blocks:
            return None
        return entry.template.blocks

    def _stale(self, entry: _Cached) -> bool:
        if self._clock() - entry.read_at > REFRESH_SECONDS:
            return True
        if not entry.template.known:
            return entry.learned >= 1
        return entry.learned >= (DOUBT_REFRESH if entry.doubt else REFRESH_PAGES)

    def template(self, host: str) -> HostTemplate | None:
        """Blocking: the host's template (read from the store when the cache's is stale), or
        None when templates are off."""
        store = self._store
        if store is None or self.min_pages <= 0:
            return None
        fresh = self.cached(host)
        if fresh is not None:
            return fresh
        template = store.template(host, self.min_pages)
        with self._lock:
            old = self._cache.get(host)
            entry = _Cached(template, self._clock(), old.fit if old is not None else None)
            self._cache[host] = entry
            entry.served = 1
        return template._replace(blocks_wanted=entry.sampled())

    async def for_page(self, host: str, *, extracted: object) -> HostTemplate | None:
        """The template of a page's ``host`` (its ``PageKey.domain``) when its main text is
        ``extracted`` from HTML (None: templates off, or the store could not tell: the page
        is judged without)."""
        if not extracted or not self.enabled:
            return None
        try:
            return self.cached(host) or await run_in_thread(self.template, host)
        except Exception:  # the page is signed as without templates
            logger.debug("Could not read the template of %s", host, exc_info=True)
            return None

    async def judged(self, store: object, signature: PageSignature, stats: Any) -> Judged:
        """The signature a page is checked by: its own, or, when a page stored before its
        host's template was known is its copy, the page as signed then (``unstripped``), so
        that the store finds that copy (store/unstripped.py); with it, that page signed
        again as this one is, once this one is dropped as its copy (signed_again.py)."""
        whole = signature.unstripped
        if whole is None or not hasattr(store, "engine"):
            return Judged(signature)
        try:
            match = await run_in_thread(copy_signed_unsure, store, whole)  # type: ignore[arg-type]
        except Exception:  # judged by its own signature then
            logger.debug("Could not look for a copy signed unsure", exc_info=True)
            return Judged(signature)
        if match is None:
            return Judged(signature)
        stats.inc_value(TEMPLATE_STATS + "unstripped")
        judged = replace(
            whole,
            stored_text=signature.stored_text,
            blocks=signature.blocks,
            template_share=signature.template_share,
        )
        if not signature.sketch:
            return Judged(judged)
        own = (signature.fingerprint, signature.text_length, signature.sketch)
        return Judged(judged, SignedAgain(match.url, match.fingerprint, *own))

    def admitted(self, host: str, signature: PageSignature, verdict: Verdict, stats: Any) -> None:
        """A page of ``host`` checked: admitted as new, it teaches the host's template; its
        template share recorded (under the verdict's canonical URL) and counted."""
        if signature.template_share is not None and self.enabled:
            share = PageShare(verdict.url, signature.template_share, signature.template_only)
            with self._lock:
                self._shares.append(share)
                due = len(self._shares) >= SHARES_FLUSH
            if due:
                self._start_flush()
        if verdict.kind is VerdictKind.NEW and signature.blocks and self.enabled:
            misfit = marks_unsure(signature.sketch)  # the template it was judged by did not fit
            with self._lock:
                if (entry := self._cache.get(host)) is not None:
                    entry.doubt = entry.doubt or misfit
                    if entry.template.known:
                        entry.fit.page(not misfit)
            self.learn(host, signature.blocks)
        if signature.template_only:
            stats.inc_value(TEMPLATE_STATS + "only")
        elif signature.template_share:
            stats.inc_value(TEMPLATE_STATS + "stripped")

    def learn(self, host: str, blocks: tuple[int, ...]) -> None:
        """Queue one admitted page's blocks; a flush thread writes them (one at a time)."""
        if not blocks or not self.enabled:
            return
        with self._lock:
            self._pending.append((host, blocks))
        self._start_flush()

    def _start_flush(self) -> None:
        """A flush thread, unless one runs (it takes what is queued meanwhile)."""
        with self._lock:
            if self._flushing:
                return
            self._flushing = True
            self._thread = threading.Thread(
                target=self.flush, name="simhash_filter template flush", daemon=True
            )
        self._thread.start()

    def drain(self) -> None:
        """Blocking: wait for the flush thread and write what is left."""
        thread = self._thread
        if thread is not None:
            thread.join()
        with self._lock:
            self._flushing = True
        self.flush()

    def close(self) -> None:
        """Blocking: :meth:`drain`, and let the store go."""
        self.drain()
        self._store = None

    def flush(self) -> int:
        """Blocking: write the queued pages' blocks (and those queued meanwhile); the pages
        written. The caches of their hosts count them (read again when due)."""
        written = 0
        while True:
            with self._lock:
                pending, self._pending = self._pending, []
                shares, self._shares = self._shares, []
                if not pending and not shares:
                    self._flushing = False
                    return written
            store = self._store
            if store is None:
                continue
            try:
                store.learn(pending, shares)
            except Exception:  # evidence lost, never a page: logged, the crawl goes on
                logger.warning(
                    "Could not record %d pages' template blocks and %d template shares",
                    len(pending),
                    len(shares),
                    exc_info=True,
                )
                continue
            written += len(pending)
            with self._lock:
                for host, _ in pending:
                    entry = self._cache.get(host)
                    if entry is not None:
                        entry.learned += 1
