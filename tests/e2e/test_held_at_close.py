"""A variant held for its canonical when the crawl closes before that canonical answered (a
``CLOSESPIDER_*`` limit, a shutdown): a real ``scrapy crawl`` over a loopback site whose
canonical never answers in time. The variant's row is in the ``-O`` feed, in pipeline mode
and in middleware mode: its content reached the crawl only through the held response, so a
feed without it would have lost the page (issue 42)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.close_when_held import REASON
from support.crawl import CrawlResult, run_scrapy

from crawler.articles import ENGLISH_ARTICLES
from crawler.testsite.server import Page, SiteServer

pytestmark = pytest.mark.slow  # real `scrapy crawl` subprocesses

VARIANT, CANONICAL, PLAIN = "/print/0", "/articles/0", "/about"


def article(n: int, canonical: str | None, note: str, links: str = "") -> bytes:
    text = ENGLISH_ARTICLES[n]
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    paragraphs = "".join(f"<p>{p}</p>" for p in text.paragraphs)
    return (
        f"<html><head><title>{text.title}</title>{head}</head><body><article>"
        f"<h1>{text.title}</h1>{paragraphs}<p>{note}</p></article>{links}</body></html>"
    ).encode()


class StalledCanonical:
    """The site: the home page links a plain page and a variant naming a canonical that
    answers nothing until :attr:`answer` is set (then a 404): it never produces a row."""

    def __init__(self) -> None:
        self.answer = threading.Event()
        home = f"<a href='{PLAIN}'>About</a><a href='{VARIANT}'>Print</a>"
        self.pages = {
            "/": Page(f"<html><body>{home}</body></html>".encode()),
            "/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain"),
            PLAIN: Page(article(1, None, "About us.")),
            VARIANT: Page(article(0, CANONICAL, "Printed edition.")),
        }

    def __call__(self, target: str) -> Page | None:
        path = urlsplit(target).path
        if path == CANONICAL:
            self.answer.wait()
            return None
        return self.pages.get(path)


@pytest.fixture
def stalled() -> Iterator[SiteServer]:
    site = StalledCanonical()
    server = SiteServer(site).start()
    try:
        yield server
    finally:
        site.answer.set()
        server.stop()


def crawl(server: SiteServer, workdir: Path, **settings: object) -> CrawlResult:
    """The crawl from the home page, closed once the variant is held (``CloseWhenHeld``)."""
    extensions = {"crawler.extensions.StatsFile": 500, "support.close_when_held.CloseWhenHeld": 0}
    return run_scrapy(
        ["crawl", "site", "-a", f"start_url={server.url('/')}"],
        cwd=workdir,
        settings={
            "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{workdir / 'dedup.db'}",
            "DOWNLOAD_DELAY": 0,
            "LOG_LEVEL": "INFO",
            "EXTENSIONS": json.dumps(extensions),
            **settings,
        },
        pythonpath=[Path(__file__).parents[1]],
    )


def paths(result: CrawlResult) -> list[str]:
    return sorted(urlsplit(item["url"]).path for item in result.items)


@pytest.mark.parametrize("middleware", [False, True], ids=["pipeline", "middleware"])
def test_a_variant_held_when_the_crawl_closes_reaches_the_feed(
    stalled: SiteServer, tmp_path: Path, middleware: bool
) -> None:
    """The crawl closes the moment the variant is held (its canonical scheduled, and
    answering nothing if fetched): the variant's item still reaches the feed, once."""
    server = stalled
    result = crawl(server, tmp_path, SIMHASH_FILTER_MIDDLEWARE=middleware, DOWNLOAD_TIMEOUT=5)
    assert result.returncode == 0, result.log[-5000:]
    assert result.stats.get("finish_reason") == REASON, result.log[-5000:]
    assert result.stats.get("simhash_filter/canonical_first") == 1  # the variant was held
    assert result.stats.get("simhash_filter/released_at_close") == 1  # ...when it closed
    assert VARIANT in paths(result)  # its row, once
    assert CANONICAL not in paths(result)
    assert paths(result) == sorted(set(paths(result)))
    assert server.requested.count(VARIANT) == 1  # answered from memory
    assert result.stats.get("simhash_filter/canonical_first_at_close", 0) == 0
    assert result.stats.get("log_count/ERROR", 0) == 0, result.log[-5000:]
