"""``SIMHASH_FILTER_VARIANTS_LAST`` (issue 42's frontier lever, off by default): requests that
look like a page's variant are one priority step down; the add-on installs it when asked."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from simhash_filter import Addon
from simhash_filter.crawl.requests.variants_last import (
    VariantsLastMiddleware,
    looks_like_a_variant,
)


@pytest.mark.parametrize(
    ("url", "variant"),
    [
        ("https://x.example/news/a/", False),
        ("https://x.example/print/news/a/", True),
        ("https://x.example/news/a/amp/", True),
        ("https://x.example/Mirror/news/a/", True),
        ("https://x.example/news/a/?utm_source=rss", True),
        ("https://x.example/news/a/;jsessionid=AB12", True),
        ("https://x.example/?p=12", False),  # a parameter that chooses content
        ("https://x.example/printers/", False),
    ],
)
def test_what_looks_like_a_variant(url: str, variant: bool) -> None:
    assert looks_like_a_variant(url) is variant


def test_variants_are_one_step_down_and_nothing_else_moves() -> None:
    middleware = VariantsLastMiddleware()
    response = HtmlResponse("https://x.example/", body=b"<html></html>")
    out = list(
        middleware.process_spider_output(
            response,
            [
                Request("https://x.example/a/", priority=2),
                Request("https://x.example/print/a/", priority=2),
                {"url": "https://x.example/"},
            ],
        )
    )
    assert [r.priority for r in out[:2]] == [2, 1]
    assert out[2] == {"url": "https://x.example/"}


def test_the_addon_installs_it_only_when_asked() -> None:
    def spider_middlewares(**settings: Any) -> dict[Any, int]:
        crawler = get_crawler(settings_dict={"ADDONS": {Addon: 100}, **settings})
        listed = crawler.settings.getdict("SPIDER_MIDDLEWARES")
        return {load_object(name): priority for name, priority in listed.items()}

    assert VariantsLastMiddleware not in spider_middlewares()
    assert spider_middlewares(SIMHASH_FILTER_VARIANTS_LAST=True)[VariantsLastMiddleware] == 950
