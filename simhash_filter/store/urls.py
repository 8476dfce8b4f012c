"""URL identity: the one place where a URL becomes the key a page is stored under."""

from __future__ import annotations

from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

DEFAULT_DATABASE_URL = "sqlite:///dedup.db"
"""The database of a crawl and of the command line when none is named."""


def canonical_url(url: str) -> str:
    """``url`` canonicalized by w3lib (sorted query, normalized escapes, no fragment)."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"url must be a non-empty string, got {url!r}")
    return str(canonicalize_url(url.strip()))


def url_domain(url: str) -> str:
    """The lower-cased host name of a canonical URL ("" when it has none)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""
