"""The page work: a page's text or HTML → its signature (extraction + tokenization + simhash).

One pure function, :func:`sign_page`, that the thread path and the worker pool both run:
the pool's workers import this module (and so trafilatura and jieba) and nothing of Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .extract import extract_text

if TYPE_CHECKING:
    from .fingerprint import Fingerprinter

__all__ = ["PageSignature", "has_text", "sign_page"]


class PageSignature(NamedTuple):
    """What the page work computes for one page: what the store needs to decide."""

    fingerprint: int
    text_length: int


def has_text(value: object) -> bool:
    """True for a str that is not blank (an item's text field worth fingerprinting)."""
    return isinstance(value, str) and bool(value.strip())


def sign_page(
    fingerprinter: Fingerprinter,
    url: str,
    text: object,
    html: object,
    *,
    max_bytes: int,
) -> PageSignature | None:
    """The page's signature, or None when it has too little text to fingerprint.

    The text is ``text`` when it is a non-blank str, else the main text extracted from
    ``html`` (str or bytes); anything else counts as no text."""
    page_text = text if isinstance(text, str) and text.strip() else None
    if page_text is None and isinstance(html, bytes | str) and html:
        page_text = extract_text(html, url=url, max_bytes=max_bytes)
    if not page_text:
        return None
    # the Fingerprinter fingerprints at most its max_chars (the tokenization cap)
    fingerprint = fingerprinter.fingerprint(page_text)
    if fingerprint is None:
        return None
    return PageSignature(fingerprint, len(page_text))
