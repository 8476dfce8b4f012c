"""What one crawler's components share: its settings, read once, and its shared objects.

| what | made by | read with |
| --- | --- | --- |
| the crawl's :class:`Config` | the first component's ``from_crawler`` | :func:`crawler_config` |
| the page filter, the rule book | the first component that asks | :func:`crawler_shared` |

Scrapy keeps a crawler's shared objects on the crawler (``crawler.stats``,
``crawler.request_fingerprinter``); a plug-in cannot declare attributes of ``Crawler``, so
they are declared here, keyed weakly by the crawler as ``scrapy.utils.request`` keys its
fingerprint cache: they live and die with the crawler, two crawlers never share one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

from simhash_filter.crawl.start_failure import crawl_config

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from simhash_filter.crawl.config import Config

__all__ = ["crawler_config", "crawler_shared"]

Shared = TypeVar("Shared")

_CONFIGS: WeakKeyDictionary[Crawler, Config] = WeakKeyDictionary()
_SHARED: WeakKeyDictionary[Crawler, dict[type[Any], Any]] = WeakKeyDictionary()


def crawler_config(crawler: Crawler) -> Config:
    """The crawl's settings, read and validated once a crawler (a bad one stops the crawl
    with one line: :func:`~simhash_filter.crawl.start_failure.crawl_config`)."""
    config = _CONFIGS.get(crawler)
    if config is None:
        config = _CONFIGS[crawler] = crawl_config(crawler.settings)
    return config


def crawler_shared(crawler: Crawler, kind: type[Shared], make: Callable[[], Shared]) -> Shared:
    """The crawler's one ``kind`` object, made by ``make`` for the first component that asks."""
    shared = _SHARED.setdefault(crawler, {})
    found = shared.get(kind)
    if found is None:
        found = shared[kind] = make()
    return found
