"""A test extension: which of :data:`WATCHED` the crawl process has loaded, as a stat
(``test/loaded/<module>``: 1 or 0) set at each item scraped, so the crawl's last item says
what its pages' checks loaded. Enable it with ``EXTENSIONS``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

WATCHED = ("numpy", "trafilatura")


class LoadedModules:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def item_scraped(self, item: Any) -> None:
        for name in WATCHED:
            self.stats.set_value(f"test/loaded/{name}", int(name in sys.modules))
