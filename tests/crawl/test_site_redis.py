"""The ``site_redis`` spider's seeds while Redis cannot be reached: none, and no error of
its own (the scheduler reports the outage once, crawler/frontier.py)."""

from __future__ import annotations

import asyncio
import socket

import pytest
from scrapy.utils.test import get_crawler

from crawler.distributed import RedisKeys, seed
from crawler.spiders.site_redis import RedisSiteSpider

pytestmark = pytest.mark.redis


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _spider(redis_url: str, prefix: str) -> RedisSiteSpider:
    settings = {"REDIS_URL": redis_url, "REDIS_KEY_PREFIX": prefix}
    crawler = get_crawler(RedisSiteSpider, settings)
    spider: RedisSiteSpider = RedisSiteSpider.from_crawler(crawler)
    return spider


async def _started(spider: RedisSiteSpider) -> list[str]:
    return [request.url async for request in spider.start()]


def test_seeds_read_while_redis_is_down_are_none_and_raise_nothing() -> None:
    """A worker that reads its seeds as Redis goes away (a loaded machine starts one late):
    Scrapy logged "Error while reading start items" beside the outage's own ERROR line."""
    spider = _spider(f"redis://127.0.0.1:{_closed_port()}/0", "seeds-down")
    assert asyncio.run(_started(spider)) == []
    assert spider.waiting_seeds() == []


def test_seeds_waiting_in_redis_start_the_crawl(redis_url: str) -> None:
    keys = RedisKeys("seeds-up-test")
    spider = _spider(redis_url, keys.prefix)
    spider.server.delete(keys.start_urls)
    try:
        assert seed(redis_url, keys.start_urls, ["http://site.example/"]) == 1
        assert asyncio.run(_started(spider)) == ["http://site.example/"]
        assert asyncio.run(_started(spider)) == []  # read once
    finally:
        spider.server.delete(keys.start_urls)
