"""The canonical a crawled page declares: its HTML's hints (read by the page work) with the
one from outside its HTML (the HTTP ``Link`` header, or an item field the spider filled).

:func:`link_canonical` reads a Scrapy response's ``Link`` headers, for a spider that puts
the header's canonical into its items (``SIMHASH_FILTER_CANONICAL_FIELD``); the downloader
middleware reads them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from scrapy.utils.asyncio import run_in_thread

from simhash_filter.core.canonical import (
    PageHints,
    declared_canonical,
    link_header_canonical,
    one_hint,
    resolve_hint,
)
from simhash_filter.urls.key import hint_key

if TYPE_CHECKING:
    from scrapy.http import Response

    from simhash_filter.store.records import PageRecord
    from simhash_filter.urls.key import PageKey

__all__ = ["declared_url", "link_canonical", "named_canonical", "strong_hint"]


def link_canonical(response: Response) -> str | None:
    """The ``rel="canonical"`` target of the response's ``Link`` headers (resolved against
    its URL), or None."""
    return link_header_canonical(response.headers.getlist("Link"), response.url)


def declared_url(url: str, hints: PageHints | None, canonical: object = None) -> str | None:
    """The canonical URL the page at ``url`` declares (absolute; ``PageKey.declaring`` puts
    it in canonical form): ``<link rel="canonical">`` and ``canonical`` (the header or item
    field) when they agree, else ``og:url`` when the page has no strong hint
    (core/canonical.py)."""
    outside = resolve_hint(canonical, url) if isinstance(canonical, str) else None
    html = hints or PageHints()
    return declared_canonical(link=html.link, header=outside, og_url=html.og_url)


def strong_hint(url: str, hints: PageHints | None, canonical: object = None) -> str | None:
    """:func:`declared_url` from the strong hints alone (never ``og:url``), in canonical
    form: the hint the middleware follows to fetch a canonical first."""
    outside = resolve_hint(canonical, url) if isinstance(canonical, str) else None
    return hint_key(one_hint((hints.link if hints else None, outside)))


class _Lookup(Protocol):
    def lookup(self, url: str) -> PageRecord | None: ...


async def named_canonical(store: _Lookup | None, url: str, key: PageKey) -> str:
    """The canonical a passing page's item names (``CANONICAL_URL_FIELD``): the one it
    declares (``key.declared``), unless ``store`` keeps that URL as another page (a wrong
    hint, or a canonical whose text differs), else the page's own URL. One read, only for a
    page declaring another."""
    declared = key.declared
    if declared is None or not key.declares_other:
        return url if declared is None else declared
    try:
        assert store is not None
        other = await run_in_thread(store.lookup, declared)
    except Exception:  # not worth an error: the declared URL stands
        return declared
    return url if other is not None and other.dropped_at is None else declared
