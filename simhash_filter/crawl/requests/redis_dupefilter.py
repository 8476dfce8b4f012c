"""``RedisDupeFilter``: scrapy-redis's shared dupefilter, asking the crawler's fingerprinter.

scrapy-redis (0.9) computes its own fingerprint (w3lib's canonical URL, method, body) rather
than the crawler's ``REQUEST_FINGERPRINTER_CLASS``, so a URL variant would reach its Redis set
under its own URL. This subclass asks the crawler's fingerprinter instead, so every crawler
sharing the Redis set skips the variants the URL rules map together. The add-on puts it in
place of ``scrapy_redis.dupefilter.RFPDupeFilter`` when the project names that one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_redis.dupefilter import RFPDupeFilter

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

__all__ = ["SCRAPY_REDIS_DUPEFILTER", "RedisDupeFilter"]

SCRAPY_REDIS_DUPEFILTER = "scrapy_redis.dupefilter.RFPDupeFilter"


class RedisDupeFilter(RFPDupeFilter):  # type: ignore[misc]
    """scrapy-redis's ``RFPDupeFilter`` with the crawler's request fingerprints (hex)."""

    fingerprinter: Any = None

    @classmethod
    def from_spider(cls, spider: Spider) -> RedisDupeFilter:
        dupefilter: RedisDupeFilter = super().from_spider(spider)
        dupefilter.fingerprinter = spider.crawler.request_fingerprinter
        return dupefilter

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisDupeFilter:
        dupefilter: RedisDupeFilter = super().from_crawler(crawler)
        dupefilter.fingerprinter = crawler.request_fingerprinter
        return dupefilter

    def request_fingerprint(self, request: Request) -> str:
        if self.fingerprinter is None:
            return str(super().request_fingerprint(request))
        return str(self.fingerprinter.fingerprint(request).hex())
