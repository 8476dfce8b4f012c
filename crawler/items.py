"""The item the ``site`` spider yields: one per HTML page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from simhash_filter import link_canonical

if TYPE_CHECKING:
    from scrapy.http import HtmlResponse


@dataclass
class PageItem:
    """A crawled page. ``html`` is the decoded page (the filter extracts its main text);
    ``fingerprint`` is filled in by the filter (``SIMHASH_FILTER_FINGERPRINT_FIELD``)."""

    url: str
    title: str | None
    html: str
    fetched_at: str  # ISO 8601, UTC
    fingerprint: str | None = None
    canonical: str | None = None
    """The canonical URL of the response's ``Link`` header (``SIMHASH_FILTER_CANONICAL_FIELD``:
    the filter reads ``<link rel="canonical">`` from ``html`` itself)."""
    canonical_url: str | None = None
    """Filled in by the filter (``SIMHASH_FILTER_CANONICAL_URL_FIELD``): the page's canonical
    URL, the one it declared unless the crawl kept that URL as another page, else its own."""


def page_item(response: HtmlResponse) -> PageItem:
    """The item of one HTML response (both spiders yield these)."""
    return PageItem(
        url=response.url,
        title=(response.css("title::text").get() or "").strip() or None,
        html=response.text,
        fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
        canonical=link_canonical(response),
    )
