"""The page work: a page's text or HTML → its signature (extraction + tokenization + simhash).

One pure function, :func:`work_page` (:func:`sign_page` when only the signature matters),
that the crawl's thread path, the page pool's workers and ``import`` all run: the workers
import this module (and so trafilatura and jieba) and nothing of Scrapy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from simhash_filter.core.canonical import PageHints
from simhash_filter.core.content_key import content_key, exact_signature
from simhash_filter.core.signature import PageSignature
from simhash_filter.core.stored_text import pack_text
from simhash_filter.core.template import HostTemplate
from simhash_filter.core.text import long_runs

if TYPE_CHECKING:
    from simhash_filter.core.fingerprint import Fingerprinter, PageSketch

__all__ = ["PageJob", "PageSignature", "PageWork", "has_text", "sign_page", "work_job", "work_page"]


def has_text(value: object) -> bool:
    """True for a str that is not blank (an item's text field worth fingerprinting)."""
    return isinstance(value, str) and bool(value.strip())


class PageJob(NamedTuple):
    """One page to sign, as it crosses to a worker (or runs on the thread path)."""

    url: str
    text: str | None
    html: bytes | str | None
    keep_text: bool = False  # STORE_TEXT: the signature carries the packed main text
    template: HostTemplate | None = None  # the host's template as known (core/template.py)
    give_text: bool = False  # ADD_TEXT: the main text comes back whole (PageWork.main_text)


MIN_COVER = 0.25
"""The share of a page's blocks its host's known template must hold for the page to be judged
as of that template; below it (a host whose template changed, a new section's layout) the page
is signed *unsure*, as a page of a host whose template is not known yet."""


def unsure(template: HostTemplate | None, blocks: tuple[int, ...]) -> bool:
    """Whether a page of these blocks is judged before its host's template is known: a host
    template was asked for (the crawl learns templates) and it is not known yet, or holds
    under :data:`MIN_COVER` of the page's blocks."""
    if template is None:
        return False
    if not template.known:
        return True
    if not blocks:  # not sampled (or a page of no block): judged by the known template
        return False
    return sum(block in template.blocks for block in blocks) < MIN_COVER * len(blocks)


class PageWork(NamedTuple):
    """What the page work made of one page: its signature (or None), and the caps the page
    met on the way (``ExtractedPage.capped``, then ``marks``/``han`` of
    :func:`~simhash_filter.core.text.long_runs`), for the crawl to count."""

    signature: PageSignature | None
    capped: tuple[str, ...] = ()
    hints: PageHints | None = None
    """The canonical hints of the page's HTML (``ExtractedPage.hints``), or None."""
    main_text: str | None = None
    """The main text that was fingerprinted, when asked for (``give_text``; ``ADD_TEXT``), or
    signed while its host was young (to be signed again: crawl/pages/signed_again.py)."""


def sign_page(
    fingerprinter: Fingerprinter,
    url: str,
    text: object,
    html: object,
    *,
    max_bytes: int,
    keep_text: bool = False,
) -> PageSignature | None:
    """The page's signature, or None when it has no content (an empty or binary body, no
    text): a page with too little text to fingerprint is signed by its bytes
    (:attr:`PageSignature.exact`), so that only its exact copies match it.

    The main text is ``text`` when it is a non-blank str, else the main text extracted from
    ``html`` (str or bytes); anything else counts as no text. With HTML, the page's whole
    visible text goes into the sketch too (it tells an extraction failure from a copy).
    ``keep_text``: the main text comes along packed for the store (``STORE_TEXT``), so
    the compression runs where the page work does (in a page worker too)."""
    return work_page(
        fingerprinter, url, text, html, max_bytes=max_bytes, keep_text=keep_text
    ).signature


def work_page(
    fingerprinter: Fingerprinter,
    url: str,
    text: object,
    html: object,
    *,
    max_bytes: int,
    keep_text: bool = False,
    template: HostTemplate | None = None,
    give_text: bool = False,
) -> PageWork:
    """:func:`sign_page`, with the caps the page met. A page with too little text to
    fingerprint is signed by its bytes (:func:`~simhash_filter.core.content_key.exact_signature`
    of the HTML, else of the text): its exact copies are still caught. ``template``: the
    host's template, left out of the extracted main text (a page of nothing else is signed
    by its bytes, ``template_only``); a page judged before it is known is signed *unsure*
    (:func:`unsure`). The signature carries the page's block hashes to learn from.
    ``give_text``: the main text of a fingerprinted page comes back in
    :attr:`PageWork.main_text` (that of a page signed while its host was young always does)."""
    main_text = text if isinstance(text, str) and text.strip() else None
    page_text = None
    listing = doubt = only = False
    capped: tuple[str, ...] = ()
    hints = share = untemplated = None
    blocks: tuple[int, ...] = ()
    if isinstance(html, bytes | str) and html:  # one parse for both texts
        from .extract import extract_page  # here: the crawl process with workers never needs it

        page = extract_page(
            html, url=url, max_bytes=max_bytes, main=main_text is None, template=template
        )
        extracted = main_text is None
        main_text = main_text or page.text
        page_text = page.visible
        capped, hints, blocks = page.capped, page.hints, page.blocks
        listing = page.listing and extracted  # the mark is of the extracted text
        share, only = (page.template_share, page.template_only) if extracted else (None, False)
        doubt = extracted and unsure(template, blocks)
        untemplated = page.untemplated if extracted else None
    signature = None
    # signed twice (left out and whole): the visible text's sketch made once for both
    visible: str | PageSketch | None = page_text
    if page_text is not None and untemplated:
        visible = fingerprinter.page_sketch(page_text)
    if main_text:
        capped += tuple(
            cap for cap in long_runs(main_text[: fingerprinter.max_chars]) if cap not in capped
        )
        # the Fingerprinter fingerprints at most its max_chars (the tokenization cap)
        signature = fingerprinter.sign(main_text, page_text=visible, listing=listing, unsure=doubt)
    if signature is None and "too_deep" in capped:  # its text is lost: it passes as such
        return PageWork(None, capped, hints)
    if signature is None:  # too little text; with a template left out, nothing but it
        only = only or bool(share)
        signature = _exact_signature(text, html, page_text, fingerprinter)
    elif keep_text and main_text:
        signature = replace(signature, stored_text=pack_text(main_text))
    if signature is not None and (blocks or share is not None):
        whole = (
            untemplated
            and not signature.exact  # nothing but template (or too little): no copy by text
            and fingerprinter.sign(untemplated, page_text=visible, listing=listing, unsure=True)
        )
        signature = replace(
            signature,
            blocks=blocks,
            template_share=share,
            template_only=only,
            unstripped=whole or None,
        )
    # a page signed while its host was young: its text is remembered to sign it again once
    # the template is known (crawl/pages/signed_again.py)
    young = doubt and share is None and signature is not None and not signature.exact
    return PageWork(signature, capped, hints, main_text if give_text or young else None)


def _exact_signature(
    text: object, html: object, page_text: str | None, fingerprinter: Fingerprinter
) -> PageSignature | None:
    """The exact-content signature of a page with too little text to fingerprint: of its HTML
    when a reader sees some text on it, else of its text field when not blank; None for a page
    with no content at all (an empty or binary body), which must not collide with every other
    such page."""
    if page_text and isinstance(html, bytes | str):
        return exact_signature(content_key(html), fingerprinter.sketch_slots)
    if isinstance(text, str) and has_text(text):
        return exact_signature(content_key(text), fingerprinter.sketch_slots)
    return None


def work_job(fingerprinter: Fingerprinter, job: PageJob, *, max_bytes: int) -> PageWork:
    """:func:`work_page` on a :class:`PageJob` (what a page worker
    receives, and what ``import`` runs in-process with ``--jobs 1``)."""
    return work_page(
        fingerprinter,
        job.url,
        job.text,
        job.html,
        max_bytes=max_bytes,
        keep_text=job.keep_text,
        template=job.template,
        give_text=job.give_text,
    )
