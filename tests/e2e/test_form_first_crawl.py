"""A real ``scrapy crawl`` of a loopback site whose articles are linked only under tracking
parameters: the form (the URL without them) is fetched in the variant's place and kept; a
form that 404s or redirects elsewhere falls back to the variant's own URL, so no page is lost;
``simhash_filter/rules/active`` reaches the final stats."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.crawl import CrawlResult, crawl_site

from crawler.articles import ENGLISH_ARTICLES
from crawler.testsite.server import Page, SiteServer

pytestmark = pytest.mark.slow  # real `scrapy crawl` subprocesses

FAST = {
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "SIMHASH_FILTER_WORKERS": 0,
    "LOG_LEVEL": "INFO",
}
STATS = "simhash_filter/requests/"
HOME_LINKS = ("/a?utm_source=home", "/b?utm_source=home", "/c?utm_source=home")


def article(n: int, links: str = "") -> Page:
    text = ENGLISH_ARTICLES[n]
    paragraphs = "".join(f"<p>{p}</p>" for p in text.paragraphs)
    body = f"<html><head><title>{text.title}</title></head><body><article><h1>{text.title}"
    return Page(f"{body}</h1>{paragraphs}</article>{links}</body></html>".encode())


def resolve(target: str) -> Page | None:
    """``/a``: the article under any query (it links its own clean URL); ``/b``: only under
    its tracking link (the clean URL 404s); ``/c``: likewise, the clean URL redirects home."""
    path, _, query = target.partition("?")
    if path == "/":
        links = "".join(f"<a href='{link}'>{link}</a>" for link in HOME_LINKS)
        return Page(f"<html><body>{links}</body></html>".encode())
    if path == "/a":
        return article(0, "<a href='/a'>permalink</a>")
    if path in ("/b", "/c"):
        if query:
            return article(1 if path == "/b" else 2)
        return None if path == "/b" else Page(b"", status=301, headers=(("Location", "/"),))
    return None


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(resolve) as server:
        yield server


def crawl(site: SiteServer, workdir: Path, **settings: object) -> CrawlResult:
    return crawl_site(site, workdir, {**FAST, **settings})


def _targets(result: CrawlResult) -> set[str]:
    targets = set()
    for item in result.items:
        parts = urlsplit(item["url"])
        targets.add(parts.path + (f"?{parts.query}" if parts.query else ""))
    return targets


def test_the_form_is_fetched_in_the_variants_place_with_fallbacks(
    site: SiteServer, tmp_path: Path
) -> None:
    result = crawl(site, tmp_path)
    assert site.requested.count("/a") == 1  # the form, once: its own link was skipped
    assert "/a?utm_source=home" not in site.requested
    for path in ("/b", "/c"):  # the form failed: the variant itself, once
        assert site.requested.count(path) == 1
        assert site.requested.count(path + "?utm_source=home") == 1
    assert {"/a", "/b?utm_source=home", "/c?utm_source=home"} <= _targets(result)  # none lost
    assert result.stats[STATS + "form_first"] == 1
    assert result.stats[STATS + "form_failed"] == 2
    assert result.stats["simhash_filter/rules/active"] == 0  # in the final stats


def test_form_first_off_fetches_the_variant(site: SiteServer, tmp_path: Path) -> None:
    result = crawl(site, tmp_path, SIMHASH_FILTER_FORM_FIRST=False)
    requested = site.requested
    assert "/a?utm_source=home" in requested
    if "/a" in requested:  # the kept variant's form, fetched after it to replace it
        assert requested.index("/a?utm_source=home") < requested.index("/a")
    assert _targets(result) & {"/a?utm_source=home", "/a"}
    assert STATS + "form_first" not in result.stats
