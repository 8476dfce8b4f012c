"""The canonical a crawled page declares: its HTML's hints (read by the page work) with the
one from outside its HTML (the HTTP ``Link`` header, or an item field the spider filled).

:func:`link_canonical` reads a Scrapy response's ``Link`` headers, for a spider that puts
the header's canonical into its items (``SIMHASH_FILTER_CANONICAL_FIELD``); the downloader
middleware reads them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simhash_filter.core.canonical import (
    PageHints,
    declared_canonical,
    link_header_canonical,
    one_hint,
    resolve_hint,
)
from simhash_filter.store.hints import hint_key

if TYPE_CHECKING:
    from scrapy.http import Response

__all__ = ["declared_hint", "link_canonical", "strong_hint"]


def link_canonical(response: Response) -> str | None:
    """The ``rel="canonical"`` target of the response's ``Link`` headers (resolved against
    its URL), or None."""
    return link_header_canonical(response.headers.getlist("Link"), response.url)


def declared_hint(url: str, hints: PageHints | None, canonical: object = None) -> str | None:
    """The canonical URL the page at ``url`` declares, in the store's canonical form:
    ``<link rel="canonical">`` and ``canonical`` (the header or item field) when they
    agree, else ``og:url`` when the page has no strong hint (core/canonical.py)."""
    outside = resolve_hint(canonical, url) if isinstance(canonical, str) else None
    html = hints or PageHints()
    return hint_key(declared_canonical(link=html.link, header=outside, og_url=html.og_url))


def strong_hint(url: str, hints: PageHints | None, canonical: object = None) -> str | None:
    """:func:`declared_hint` from the strong hints alone (never ``og:url``): the hint the
    middleware follows to fetch a canonical first."""
    outside = resolve_hint(canonical, url) if isinstance(canonical, str) else None
    return hint_key(one_hint((hints.link if hints else None, outside)))
