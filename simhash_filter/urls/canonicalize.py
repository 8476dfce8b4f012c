"""w3lib's ``canonicalize_url``, with a fast path for plain URLs.

The request side canonicalizes every request's URL (as Scrapy's own fingerprint does), and
w3lib's general parse, quote and re-encode was half its CPU. Most crawled URLs are plain:
``http(s)``, a lower-case ASCII host (a port of 1 to 65535 too), a path and query of
letters, digits and ``-._~``, no dot segments, no percent-escapes. For those the canonical
URL is the URL with its fragment cut, ``/`` for an empty path, and its query pairs sorted
(``name=`` for a bare name): string work only. Anything else goes to w3lib. A differential
test pins the two together.
"""

from __future__ import annotations

import re

from w3lib.url import canonicalize_url

__all__ = ["canonicalize"]

_PLAIN = re.compile(
    r"(https?://(?:[a-z0-9-]{1,63}\.)*[a-z0-9-]{1,63}\.?"  # scheme, host
    r"(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]"
    r"|6553[0-5]))?)"  # a port w3lib keeps as it is: 1 to 65535, no leading zero
    r"(/[A-Za-z0-9_~/.-]*)?"  # path
    r"(?:\?([A-Za-z0-9_~.=&-]*))?"  # query
    r"(?:#.*)?",  # fragment (cut)
    re.DOTALL,
)


def canonicalize(url: str) -> str:
    """``w3lib.url.canonicalize_url(url)``, computed without w3lib when ``url`` is plain."""
    match = _PLAIN.fullmatch(url)
    if match is None:
        return canonicalize_url(url)
    origin, path, query = match.groups()
    if not path:
        path = "/"
    elif "/." in path:  # maybe a dot segment, which w3lib resolves
        return canonicalize_url(url)
    if not query:
        return origin + path
    pairs = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if not name or "=" in value:  # an empty pair or name, or "=" escaped in a value
            return canonicalize_url(url)
        pairs.append((name, value))
    pairs.sort()
    return origin + path + "?" + "&".join([f"{name}={value}" for name, value in pairs])
