"""``VariantsLastMiddleware``: requests that look like a page's variant are dequeued after the
others (``SIMHASH_FILTER_VARIANTS_LAST``, off by default: measured, not yet a default).

A spider middleware that takes one priority step off every request whose URL has a view
marker among its path segments (``/print/``, ``/amp/``, ``/mirror/``, ``/mobile/``) or a
parameter the universal URL rules drop (tracking, session), so a page's likely canonical is
fetched, kept and emitted before its variants are dequeued: the copy the crawl keeps is then
the canonical even where the variant declares none (a mirror). Nothing is skipped: only the
order changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.exceptions import NotConfigured

from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.urls.ruleset import RuleSet
from simhash_filter.urls.views import MARKERS, has_view_marker

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["MARKERS", "PRIORITY", "VariantsLastMiddleware", "looks_like_a_variant"]

PRIORITY = 950
"""In ``SPIDER_MIDDLEWARES``: after DepthMiddleware (900) has set the depth's priority."""
_UNIVERSAL = RuleSet()


def looks_like_a_variant(url: str) -> bool:
    """True when ``url`` has a view marker among its path segments, or a parameter the
    universal rules drop."""
    if has_view_marker(url):
        return True
    split = urlsplit(url)
    if not (split.query or ";" in split.path):
        return False
    form = _UNIVERSAL.form(url)
    return form.url != form.own


class VariantsLastMiddleware:
    """Spider middleware: one priority step off the requests of likely variants."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = crawler_config(crawler)
        if not (config.enabled and config.variants_last):
            raise NotConfigured("SIMHASH_FILTER_VARIANTS_LAST is off")
        return cls()

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        for element in result:
            yield self._ordered(element)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        async for element in result:
            yield self._ordered(element)

    @staticmethod
    def _ordered(element: Any) -> Any:
        if isinstance(element, Request) and looks_like_a_variant(element.url):
            return element.replace(priority=element.priority - 1)
        return element
