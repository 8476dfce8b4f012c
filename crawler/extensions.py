"""``StatsFile``: write the crawl's final stats to a JSON file (``-s STATS_FILE=stats.json``).

Used by the demo and the end-to-end tests to read ``simhash_filter/*`` counts without
parsing the log. Disabled unless ``STATS_FILE`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class StatsFile:
    """Dumps ``crawler.stats`` as JSON when the spider closes."""

    def __init__(self, path: Path, stats: StatsCollector) -> None:
        self.path = path
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = crawler.settings.get("STATS_FILE")
        if not path:
            raise NotConfigured
        assert crawler.stats is not None
        extension = cls(Path(path), crawler.stats)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, reason: str) -> None:
        stats: dict[str, Any] = dict(self.stats.get_stats())
        stats["finish_reason"] = reason
        self.path.write_text(json.dumps(stats, default=str, indent=2, sort_keys=True) + "\n")
