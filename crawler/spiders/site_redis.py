"""``site_redis``: the ``site`` spider, fed with start URLs from a Redis list.

    scrapy crawl site_redis -s REDIS_URL=redis://redis-host:6379/0 \\
        -s SIMHASH_FILTER_DATABASE_URL=postgresql+psycopg://user:pw@db-host/dedup
    python -m crawler.distributed seed https://example.com/   # on any machine

Start as many workers as you like; they wait for seeds (``<prefix>:start_urls``, a list of
URLs or ``{"url": ...}`` JSON objects), share one request queue and one seen-set in Redis
(keys ``<prefix>:requests`` and ``<prefix>:dupefilter``, ``-s REDIS_KEY_PREFIX=...``,
default ``site_redis``) and one near-duplicate index. A worker with nothing to do closes
after ``DISTRIBUTED_IDLE_TIMEOUT`` seconds (0: waits for more seeds forever).

Links are followed within ``-a allowed_domains=example.com,example.org`` (subdomains
included), or, without it, within the host of each seed (the host of the page a link is on).
Needs scrapy-redis (``pip install simhash-filter[distributed]``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from crawler.distributed import WaitForPeers, apply_key_prefix
from crawler.items import page_item
from crawler.spiders.site import _split_urls

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

try:
    from scrapy_redis.spiders import RedisMixin

    from crawler.frontier import REDIS_DOWN
except ImportError:  # the distributed extra is not installed: `scrapy crawl site` still works
    REDIS_DOWN = ()  # type: ignore[assignment]

    class RedisMixin:  # type: ignore[no-redef]
        def setup_redis(self, crawler: Any) -> None:
            raise RuntimeError(
                "the site_redis spider needs scrapy-redis: pip install simhash-filter[distributed]"
            )


def _in(host: str, domains: list[str]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


class RedisSiteSpider(RedisMixin, scrapy.Spider):
    """A same-site crawler that takes its start URLs from Redis and shares its frontier."""

    name = "site_redis"
    custom_settings: ClassVar[dict[str, Any]] = {
        "SCHEDULER": "crawler.frontier.FrontierScheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
    }

    def __init__(self, allowed_domains: str | list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allowed_domains = _split_urls(allowed_domains)
        self.link_extractor = LinkExtractor()

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        apply_key_prefix(settings, cls.name)

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> RedisSiteSpider:
        spider: RedisSiteSpider = super().from_crawler(crawler, *args, **kwargs)
        spider.setup_redis(crawler)
        # closes the worker after DISTRIBUTED_IDLE_TIMEOUT idle seconds (0: waits for seeds)
        spider.idle_guard = WaitForPeers.from_crawler(crawler)
        return spider

    def spider_idle(self) -> None:
        """Schedule waiting seeds; closing an idle worker is up to ``WaitForPeers``."""
        scheduled = False
        for request in self.waiting_seeds():
            self.crawler.engine.crawl(request)
            scheduled = True
        if scheduled:
            raise DontCloseSpider

    async def start(self) -> AsyncIterator[Any]:
        for request in self.waiting_seeds():
            yield request

    def waiting_seeds(self) -> list[Any]:
        """The seeds waiting in Redis, as requests; none while Redis cannot be reached, which
        is the scheduler's to report (crawler/frontier.py: one warning, and the close past
        ``DISTRIBUTED_REDIS_OUTAGE``), not a start-up error of Scrapy's own (a worker that
        starts reading its seeds as Redis goes away). A seed left unread waits for the next
        idle round."""
        try:
            return list(self.next_requests())
        except REDIS_DOWN:
            return []

    def make_request_from_data(self, data: bytes | str) -> scrapy.Request | list[Any]:
        """A seed: a URL or ``{"url": ..., "meta": {...}}``. Not ``dont_filter``, so a seed
        that is also a link on the site is fetched once, and a seed pushed twice too."""
        text = data.decode(self.redis_encoding or "utf-8") if isinstance(data, bytes) else data
        text = text.strip()
        meta: dict[str, Any] = {}
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict) or not isinstance(parsed.get("url"), str):
                self.logger.warning("Ignoring a seed that is not a URL: %r", text[:200])
                return []
            text = parsed["url"]
            meta = parsed.get("meta") or {}
        parts = urlsplit(text)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            self.logger.warning("Ignoring a seed that is not an http(s) URL: %r", text[:200])
            return []
        return scrapy.Request(text, callback=self.parse, meta=meta)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        yield page_item(response)
        scope = self.allowed_domains or [urlsplit(response.url).hostname or ""]
        for link in self.link_extractor.extract_links(response):
            if _in(urlsplit(link.url).hostname or "", scope):
                yield response.follow(link, callback=self.parse)
