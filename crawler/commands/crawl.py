"""``scrapy crawl`` whose exit status says when the worker did not finish its crawl.

Scrapy's ``crawl`` exits 0 whatever the ``finish_reason``; a worker the shared frontier
stopped (``frontier_unreachable``: Redis away past ``DISTRIBUTED_REDIS_OUTAGE``;
``frontier_lost``: Redis lost the queue) did not crawl the site, so it exits 1, and a
supervisor or a shell script sees the failure without reading the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawl

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

FAILED_REASONS = frozenset({"frontier_lost", "frontier_unreachable"})
"""The ``finish_reason`` values that make ``scrapy crawl`` exit 1 (crawler/frontier.py)."""


class Command(ScrapyCrawl):
    """Scrapy's ``crawl``; exit status 1 when the spider closed for a reason in
    :data:`FAILED_REASONS`."""

    def _create_crawler(self, spidercls: Any) -> Crawler:
        crawler = super()._create_crawler(spidercls)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        return crawler

    def _spider_closed(self, reason: str, **kwargs: Any) -> None:
        if reason in FAILED_REASONS:
            self.exitcode = 1
