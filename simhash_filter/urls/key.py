"""A page URL's keys, made once a page: its canonical form (the storage key), its domain and
the key of the canonical URL it declares.

:class:`PageKey` is what the crawl computes when a page arrives and carries in the page's
records (``PageRow``, ``FilterResult``), so the store, the hand-off, the request filter and
the rule learner read one key instead of each canonicalizing the URL again.
:func:`canonical_url`, :func:`url_domain` and :func:`hint_key` are the one definition of
each, for a URL that has no record (a command-line argument, a stored row).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from simhash_filter.urls.canonicalize import canonicalize

__all__ = ["PageKey", "canonical_url", "hint_key", "url_domain"]


def canonical_url(url: str) -> str:
    """``url`` canonicalized by w3lib (sorted query, normalized escapes, no fragment);
    ValueError for anything but a non-empty string."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"url must be a non-empty string, got {url!r}")
    return str(canonicalize(url.strip()))


def url_domain(url: str) -> str:
    """The lower-cased host name of a canonical URL ("" when it has none)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def hint_key(declared: str | None) -> str | None:
    """A declared canonical URL in canonical form (None: none, or not a URL)."""
    try:
        return canonical_url(declared) if declared is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class PageKey:
    """A page's URL keys: ``url`` its canonical form, ``domain`` that URL's host, ``declared``
    the canonical URL the page declares, in canonical form (None: none)."""

    url: str
    domain: str
    declared: str | None = None

    @classmethod
    def of(cls, url: str, declared: str | None = None) -> PageKey:
        """The keys of the page at ``url`` declaring ``declared`` (ValueError: not a URL)."""
        canonical = canonical_url(url)
        return cls(canonical, url_domain(canonical), hint_key(declared))

    def declaring(self, declared: str | None) -> PageKey:
        """These keys with the page's declared canonical URL (put in canonical form here)."""
        return PageKey(self.url, self.domain, hint_key(declared))

    @property
    def declares_other(self) -> bool:
        """True when the page declares a canonical URL other than its own."""
        return self.declared is not None and self.declared != self.url
