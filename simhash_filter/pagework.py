"""The page work: a page's text or HTML → its signature (extraction + tokenization + simhash).

One pure function, :func:`sign_page`, that the thread path and the worker pool both run:
the pool's workers import this module (and so trafilatura and jieba) and nothing of Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .extract import extract_page
from .signature import PageSignature

if TYPE_CHECKING:
    from .fingerprint import Fingerprinter

__all__ = ["PageSignature", "has_text", "sign_page"]


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

    The main text is ``text`` when it is a non-blank str, else the main text extracted from
    ``html`` (str or bytes); anything else counts as no text. With HTML, the page's whole
    visible text goes into the sketch too (it tells an extraction failure from a copy)."""
    main_text = text if isinstance(text, str) and text.strip() else None
    page_text = None
    if isinstance(html, bytes | str) and html:  # one parse for both texts
        page = extract_page(html, url=url, max_bytes=max_bytes, main=main_text is None)
        main_text = main_text or page.text
        page_text = page.visible
    if not main_text:
        return None
    # the Fingerprinter fingerprints at most its max_chars (the tokenization cap)
    return fingerprinter.sign(main_text, page_text=page_text)
