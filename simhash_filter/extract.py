"""Main-text extraction: an HTML page (bytes or str) → its article text, or None.

A thin wrapper over trafilatura. Bytes go in undecoded so trafilatura's own encoding
detection runs (``<meta charset>``, then a statistical guess: GBK pages included); a str
is taken as already decoded (e.g. Scrapy's ``response.text``, which honours the HTTP
``Content-Type`` charset). Input is capped at ``max_bytes`` before parsing; a page that
cannot be parsed gives None (only an invalid argument raises).

:func:`visible_text` gives the whole text a reader sees on the page (menus, sidebars and
footers included): the match rule compares it to tell a copy of an article from two
different pages whose extraction returned the same small block.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import trafilatura
from lxml import etree
from trafilatura.utils import load_html

from .fingerprint import DEFAULT_MAX_CHARS

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_TEXT_CHARS",
    "ExtractedPage",
    "cap_text",
    "extract_page",
    "extract_text",
    "visible_text",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
"""Bytes handed to trafilatura at most (2 MiB): parsing time grows with the page, and
the main text of a real page sits well within its first two megabytes."""

MAX_TEXT_CHARS = DEFAULT_MAX_CHARS
"""Characters of page text handed to tokenization at most: the Fingerprinter's own cap
(``Fingerprinter(max_chars=...)``, named in the spec), applied here too so extraction never
returns more than is fingerprinted (its cost per character: `bench/bench_fingerprint.py`)."""


def cap_text(text: str) -> str:
    """``text`` cut to :data:`MAX_TEXT_CHARS` characters (the part that is fingerprinted)."""
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]


_SNIFF = 4096
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13}  # C0 controls but tab, LF, FF, CR


def _looks_binary(body: bytes | str) -> bool:
    """True for content no HTML page has: NUL bytes or many control characters at the start
    (an image or archive served as ``text/html``). Keeps trafilatura from logging ERRORs."""
    head = body[:_SNIFF]
    codes = head if isinstance(head, bytes) else head.encode("utf-8", "surrogatepass")
    if b"\x00" in codes:
        return True
    controls = sum(1 for byte in codes if byte in _CONTROL)
    replacement = head.count("\ufffd") if isinstance(head, str) else 0
    return (controls + replacement) * 10 > len(head)


def extract_text(
    body: bytes | str,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str | None:
    """The main text of an HTML page, or None when there is none (or the input is not HTML).

    Boilerplate (navigation, sidebars, footers) and reader comments are left out, so the
    same article in two site templates, or with a new comment below it, gives the same text;
    trafilatura runs with ``favor_precision``: a page that is all boilerplate (a gallery, a
    link list) gives None rather than its menu, which would collide with every other such page.
    ``max_bytes`` caps the input (characters for a str); the rest of the page is ignored.
    The text returned is at most :data:`MAX_TEXT_CHARS` characters.
    A page trafilatura cannot parse is logged at DEBUG and gives None; only a
    ``max_bytes`` below 1 raises (ValueError).
    """
    return extract_page(body, url=url, max_bytes=max_bytes, visible=False).text


_INVISIBLE = ("script", "style", "noscript", "template", "head", "svg", "iframe", "object")


def visible_text(body: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str | None:
    """All the text of a page that a reader can see (boilerplate included), white space
    collapsed, or None when the page has none or cannot be parsed.

    Scripts, styles, ``<head>`` and similar are left out; comments and processing
    instructions too. ``max_bytes`` caps the input as in :func:`extract_text`.
    """
    return extract_page(body, max_bytes=max_bytes, main=False).visible


class ExtractedPage(NamedTuple):
    """What :func:`extract_page` read from one page."""

    text: str | None
    """The main text (:func:`extract_text`), or None."""
    visible: str | None
    """All the visible text (:func:`visible_text`), or None."""


def extract_page(
    body: bytes | str,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    main: bool = True,
    visible: bool = True,
) -> ExtractedPage:
    """:func:`extract_text` and :func:`visible_text` of one page, parsing it once (the
    parse is most of what the visible text costs). ``main``/``visible`` False skip a part
    (it is then None)."""
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
    nothing = ExtractedPage(None, None)
    if not body:
        return nothing
    if len(body) > max_bytes:
        body = body[:max_bytes]
    if _looks_binary(body):
        logger.debug("Not extracting text from binary content at %s", url or "a page")
        return nothing
    if not visible:  # trafilatura parses the page itself (no copy of a tree to make)
        return ExtractedPage(_main_text(body, url) if main else None, None)
    try:
        tree = load_html(body)  # trafilatura's decoding and parser
    except Exception:  # lxml raises a zoo of types on garbage
        logger.debug("Could not parse %s", url or "a page", exc_info=True)
        return nothing
    if tree is None:
        return nothing
    text = _main_text(tree, url) if main else None  # before the tree is stripped
    return ExtractedPage(text, _visible_text(tree))


def _main_text(source: Any, url: str | None) -> str | None:
    """trafilatura's main text of a page (bytes, str, or a parsed tree: it works on a copy)."""
    try:
        text = trafilatura.extract(
            source,
            url=url,
            favor_precision=True,
            include_comments=False,
            include_tables=True,
            deduplicate=False,
            output_format="txt",
        )
    except Exception:  # trafilatura and lxml raise a zoo of types on garbage
        logger.debug("Could not extract text from %s", url or "a page", exc_info=True)
        return None
    if not isinstance(text, str):
        return None
    text = cap_text(text.strip())
    return text or None


def _visible_text(tree: Any) -> str | None:
    """The visible text of a parsed page; strips the invisible elements from ``tree``."""
    try:
        etree.strip_elements(
            tree, *_INVISIBLE, etree.Comment, etree.ProcessingInstruction, with_tail=False
        )
        text = " ".join(" ".join(tree.itertext()).split())
    except Exception:  # lxml raises several types on odd trees
        logger.debug("Could not read the visible text of a page", exc_info=True)
        return None
    return text or None
