"""An HTML page's bytes → its text, decoded as a browser would (and as Scrapy's ``response.text``).

Strict UTF-8 first (valid UTF-8 in a page with any non-ASCII byte is almost never anything
else); then w3lib's browser order: a byte-order mark, the ``<meta>`` declaration — with the
WHATWG supersets, so a page declaring ``gb2312`` that uses GBK or GB18030 characters decodes
as ``gb18030`` — then a statistical guess (trafilatura's: cchardet, charset_normalizer).
Undecodable bytes become U+FFFD, never an error.

trafilatura's own ``decode_file`` tries the declared ``gb2312`` strictly and, when one
character falls outside it, decodes the whole page as UTF-8 with replacement: 10 of the 69
public Chinese pages came out as runs of U+FFFD (bench/history/cost.md).
"""

from __future__ import annotations

from trafilatura.utils import detect_encoding, handle_compressed_file
from w3lib.encoding import html_to_unicode

__all__ = ["decode_html"]


def _guess(body: bytes) -> str | None:
    """The statistical guess of ``body``'s encoding (trafilatura's detectors), or None."""
    guesses = detect_encoding(body)
    return guesses[0] if guesses else None


def decode_html(body: bytes | str) -> str:
    """The text of an HTML page (a str is returned as it is; gzip bytes are unpacked)."""
    if isinstance(body, str):
        return body
    body = handle_compressed_file(body)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return html_to_unicode(None, body, auto_detect_fun=_guess)[1]
