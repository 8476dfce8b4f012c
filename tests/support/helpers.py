"""Small helpers the tests share: coroutines run to their end, Scrapy components on a
database, the filter's stats, and fingerprints a few bits away from another."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware
from simhash_filter.crawl.pages.pipeline import NearDuplicatePipeline

__all__ = [
    "crawler_on",
    "filter_stats",
    "flip",
    "flip_n",
    "make_middleware",
    "make_pipeline",
    "open_middleware",
    "run",
    "stat",
]

_T = TypeVar("_T")
_PREFIX = "simhash_filter/"


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a component's coroutine (``process_item``, ``open_spider``...) to its end."""
    return asyncio.run(coro)


def crawler_on(url: str, **settings: Any) -> Crawler:
    """A crawler whose filter uses the database at ``url``; ``settings`` are
    ``SIMHASH_FILTER_*`` settings without the prefix (``WORKERS=0``)."""
    return get_crawler(
        settings_dict={
            "SIMHASH_FILTER_DATABASE_URL": url,
            **{f"SIMHASH_FILTER_{key}": value for key, value in settings.items()},
        }
    )


def make_pipeline(url: str, *, open_: bool = True, **settings: Any) -> NearDuplicatePipeline:
    """A pipeline on ``url`` (:func:`crawler_on`), its spider opened unless ``open_`` is False."""
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler_on(url, **settings))
    if open_:
        run(pipeline.open_spider())
    return pipeline


def open_middleware(crawler: Crawler) -> NearDuplicateMiddleware:
    """The crawler's middleware, its spider opened."""
    middleware = build_from_crawler(NearDuplicateMiddleware, crawler)
    run(middleware.spider_opened())
    return middleware


def make_middleware(url: str, **settings: Any) -> NearDuplicateMiddleware:
    """A middleware on ``url`` (:func:`crawler_on`), its spider opened."""
    return open_middleware(crawler_on(url, **settings))


def _collector(owner: Any) -> Any:
    """The stats collector of a pipeline or middleware (through its filter) or a crawler."""
    page_filter = getattr(owner, "filter", None)
    return owner.stats if page_filter is None else page_filter.stats


def stat(owner: Any, key: str) -> int:
    """The filter's stat ``simhash_filter/<key>`` (0 when not set)."""
    return int(_collector(owner).get_value(_PREFIX + key, 0))


def filter_stats(owner: Any) -> dict[str, int]:
    """The filter's stats without their prefix, the page pool's (``workers/``) left out."""
    return {
        key.removeprefix(_PREFIX): value
        for key, value in _collector(owner).get_stats().items()
        if key.startswith(_PREFIX) and not key.startswith(_PREFIX + "workers/")
    }


def flip(fingerprint: int, positions: Iterable[int]) -> int:
    """``fingerprint`` with the bits at ``positions`` flipped."""
    for bit in positions:
        fingerprint ^= 1 << bit
    return fingerprint


def flip_n(rng: random.Random, fingerprint: int, n: int) -> int:
    """``fingerprint`` with ``n`` distinct bits, drawn by ``rng``, flipped."""
    return flip(fingerprint, rng.sample(range(64), n))


def python_prints(code: str) -> str:
    """What a fresh interpreter running ``code`` prints (stripped): what a new process
    imports is only seen in one."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()
