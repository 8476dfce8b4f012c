"""A test extension: the crawl closes the moment a variant is held for its canonical (the
canonical's request scheduled), as a ``CLOSESPIDER_*`` limit or a shutdown may at any time;
``finish_reason`` "closed_while_held". Enable it with ``EXTENSIONS``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.utils.defer import deferred_from_coro

from simhash_filter.crawl.pages.detours import DETOUR_META_KEY

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

REASON = "closed_while_held"


class CloseWhenHeld:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.closing: object = None
        crawler.signals.connect(self.request_scheduled, signal=signals.request_scheduled)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def request_scheduled(self, request: Request) -> None:
        if DETOUR_META_KEY in request.meta and self.closing is None and self.crawler.engine:
            self.closing = deferred_from_coro(self.crawler.engine.close_spider_async(reason=REASON))
