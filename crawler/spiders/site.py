"""``site``: crawl one or more sites, one item per HTML page.

    scrapy crawl site -a start_url=https://example.com -O pages.jsonl
    scrapy crawl site -a start_urls=https://a.example,https://b.example

Links are followed within the start URLs' host names (subdomains included); robots.txt is
obeyed (``ROBOTSTXT_OBEY``). Limit the crawl with the usual settings (``DEPTH_LIMIT``,
``CLOSESPIDER_PAGECOUNT``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from crawler.items import page_item


def _split_urls(*values: str | list[str] | tuple[str, ...] | None) -> list[str]:
    urls: list[str] = []
    for value in values:
        if not value:
            continue
        parts = value.split(",") if isinstance(value, str) else list(value)
        urls.extend(part.strip() for part in parts if part.strip())
    return list(dict.fromkeys(urls))


class SiteSpider(scrapy.Spider):
    """A generic same-site crawler that yields every HTML page it reaches."""

    name = "site"

    def __init__(
        self,
        start_url: str | None = None,
        start_urls: str | list[str] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        urls = _split_urls(start_url, start_urls)
        if not urls:
            raise ValueError("give a start URL: scrapy crawl site -a start_url=https://...")
        for url in urls:
            if urlsplit(url).scheme not in {"http", "https"} or not urlsplit(url).hostname:
                raise ValueError(f"start URL must be an http(s) URL, got {url!r}")
        self.start_urls = urls
        self.allowed_domains = sorted({urlsplit(url).hostname or "" for url in urls})
        self.link_extractor = LinkExtractor()

    def _in_scope(self, url: str) -> bool:
        host = urlsplit(url).hostname or ""
        return any(host == d or host.endswith("." + d) for d in self.allowed_domains)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        yield page_item(response)
        for link in self.link_extractor.extract_links(response):
            if self._in_scope(link.url):  # by host name: LinkExtractor's allow_domains sees ports
                yield response.follow(link, callback=self.parse)
