"""A real ``scrapy crawl`` over a loopback site whose variants are linked before their
canonicals: the kept URL is the canonical in every cluster, the ``-O`` feed has one row a
content, a canonical that 404s loses nothing, and wrong canonicals (pages naming the home
page) change nothing; with the pipeline alone and with the middleware (canonical first in
both), with the request filter on and off; an unchanged recrawl emits the same rows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.crawl import CrawlResult, run_scrapy

from crawler.articles import ENGLISH_ARTICLES, HIGH_SPEED_RAIL_ZH, WASTE_SORTING_ZH, Article
from crawler.testsite.generated import generated_article
from crawler.testsite.server import Page, SiteServer
from simhash_filter.store import FingerprintStore, canonical_url
from simhash_filter.store.reports import iter_pages

pytestmark = pytest.mark.slow  # real `scrapy crawl` subprocesses

FAST = {
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "LOG_LEVEL": "INFO",
    # the keep policy's own choices: form first would fetch /articles/0 in place of its
    # tracking link (tests/e2e/test_form_first_crawl.py)
    "SIMHASH_FILTER_FORM_FIRST": False,
    # the mirror (MIRROR) declares nothing: it waits for its page (VIEWS_WAIT, the default)
}
CLUSTERS = 3  # articles 0..2: two variants linked from home, the canonical only from them
LOST = 3  # article 3: its variants name a canonical that 404s
WRONG = (4, 5)  # articles 4 and 5 each name the home page as their canonical
DIFFERS = ("/print/rail", "/articles/rail")  # a variant naming a canonical of another text
MIRROR = ("/mirror/bridge", "/bridge")  # a mirror declaring nothing, linked before its page
SLASH = ("/news/tram", "/news/tram/")  # naming its slash form in og:url, linked before it


def article_page(n: int | Article, canonical: str | None, note: str, links: str = "") -> Page:
    article = ENGLISH_ARTICLES[n] if isinstance(n, int) else n
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    paragraphs = "".join(f"<p>{p}</p>" for p in article.paragraphs)
    html = (
        f"<html><head><title>{article.title}</title>{head}</head><body>"
        f"<nav><a href='/'>Home</a></nav><article><h1>{article.title}</h1>{paragraphs}"
        f"<p>{note}</p></article>{links}</body></html>"
    )
    return Page(html.encode())


def build_site() -> dict[str, Page]:
    pages: dict[str, Page] = {}
    home_links = []
    for n in (*range(CLUSTERS), LOST):
        canonical = f"/articles/{n}"
        to_canonical = f"<a href='{canonical}'>Read it on the web</a>"
        variants = [f"/print/{n}", f"/amp/{n}"]
        for variant, note in zip(variants, ("Printed edition.", "AMP."), strict=True):
            pages[variant] = article_page(n, canonical, note, to_canonical)
        if n == 0:  # home links only the canonical under a query w3lib reorders (the server
            # ignores queries), so it is kept first: the signal's URLs are in the store's form
            home_links.append(f"{canonical}?utm_source=home&utm_campaign=spring")
            to_variants = "".join(f"<a href='{v}'>{v}</a>" for v in variants)
            pages[canonical] = article_page(n, canonical, "Web edition.", to_variants)
            continue
        home_links += variants
        if n != LOST:
            pages[canonical] = article_page(n, canonical, "Web edition.")
        else:
            pages[canonical] = Page(b"<html><body>Not here</body></html>", status=404)
    for n in WRONG:
        pages[f"/wrong/{n}"] = article_page(n, "/", "Our site.")
        home_links.append(f"/wrong/{n}")
    # a variant whose declared canonical is another text: both kept, the variant once
    to_differs = f"<a href='{DIFFERS[1]}'>Web</a>"
    pages[DIFFERS[0]] = article_page(HIGH_SPEED_RAIL_ZH, DIFFERS[1], "Print.", to_differs)
    pages[DIFFERS[1]] = article_page(WASTE_SORTING_ZH, DIFFERS[1], "Web.")
    home_links.append(DIFFERS[0])
    # a mirror that declares no canonical, its article linked from it only: it waits while
    # its URL without the view marker is fetched (issue 42: 15 of 26 misses on the bench site)
    mirrored = generated_article(42)
    pages[MIRROR[0]] = article_page(mirrored, None, "", f"<a href='{MIRROR[1]}'>Web</a>")
    pages[MIRROR[1]] = article_page(mirrored, None, "")
    home_links.append(MIRROR[0])
    # a slash-less URL whose og:url (weak) names its slash form: it waits for that URL
    slashed = generated_article(43)
    og = f"<head><meta property='og:url' content='{SLASH[1]}'>".encode()
    for path, link in ((SLASH[0], f"<a href='{SLASH[1]}'>Web</a>"), (SLASH[1], "")):
        body = article_page(slashed, None, "", link).body.replace(b"<head>", og, 1)
        pages[path] = Page(body)
    home_links.append(SLASH[0])
    links = "".join(f"<li><a href='{path}'>{path}</a></li>" for path in home_links)
    head = "<head><link rel='canonical' href='/'></head>"
    pages["/"] = Page(f"<html>{head}<body><ul>{links}</ul></body></html>".encode())
    pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", "text/plain")
    return pages


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(build_site()) as server:
        yield server


def crawl(
    site: SiteServer, workdir: Path, **settings: object
) -> tuple[CrawlResult, list[str], list[str]]:
    """The crawl, the paths of the pages kept in the store, and those of the storage
    pipeline's file (crawler/pipelines.py)."""
    db = f"sqlite:///{workdir / 'dedup.db'}"
    kept_file = workdir / "kept.jsonl"
    result = run_scrapy(
        ["crawl", "site", "-a", f"start_url={site.url('/')}"],
        cwd=workdir,
        settings={**FAST, "SIMHASH_FILTER_DATABASE_URL": db, "KEPT_PAGES_FILE": kept_file}
        | settings,
    )
    assert result.returncode == 0, result.log[-5000:]
    assert result.stats.get("finish_reason") == "finished", result.log[-5000:]
    with FingerprintStore.open_existing(db) as store:
        # pages of too little text (the home page's list of links) are stored under their
        # exact-content key, text length 0: no cluster's kept page
        kept = sorted(path_of(page.url) for page in iter_pages(store) if page.text_length)
    lines = kept_file.read_text().splitlines()
    stored = sorted(path_of(json.loads(line)["url"]) for line in lines)
    return result, kept, stored


def path_of(url: str) -> str:
    """Path and query of ``url`` in the store's canonical form."""
    parts = urlsplit(canonical_url(url))
    return parts.path + (f"?{parts.query}" if parts.query else "")


def check_kept(kept: list[str]) -> None:
    """The canonical of every cluster, one variant of the article whose canonical 404s, both
    articles with wrong canonicals (the home page, a list of links, has no text), and the
    variant whose canonical differs with that canonical: nothing lost, nothing twice."""
    lost_variants = {f"/print/{LOST}", f"/amp/{LOST}"}
    expected = {*(f"/articles/{n}" for n in range(CLUSTERS)), *(f"/wrong/{n}" for n in WRONG)}
    expected |= {*DIFFERS, MIRROR[1], SLASH[1]}
    assert expected <= set(kept), kept
    (survivor,) = set(kept) - expected
    assert survivor in lost_variants
    assert len(kept) == len(expected) + 1


def feed_paths(result: CrawlResult) -> list[str]:
    """The paths of the ``-O`` feed's rows (what a stream consumer got)."""
    return sorted(path_of(item["url"]) for item in result.items)


@pytest.mark.parametrize("middleware", [False, True], ids=["pipeline", "middleware"])
@pytest.mark.parametrize("requests", [True, False], ids=["request-filter", "no-request-filter"])
def test_the_canonical_is_fetched_first_and_the_feed_has_one_row_a_content(
    site: SiteServer, tmp_path: Path, middleware: bool, requests: bool
) -> None:
    """The default policy (issue 42), in both modes, with the request filter on and off: each
    variant waits while its canonical is fetched, so every cluster's one row is its canonical
    (the feed a stream consumer got: nothing to take back), and nothing is superseded."""
    result, kept, stored = crawl(
        site,
        tmp_path,
        SIMHASH_FILTER_MIDDLEWARE=middleware,
        SIMHASH_FILTER_REQUEST_FILTER=requests,
        SIMHASH_FILTER_DEBUG=True,  # every drop logged
    )
    check_kept(kept)
    assert feed_paths(result) == sorted(["/", *kept])  # one row a content, no repeat
    assert stored == feed_paths(result)
    named = {path_of(item["url"]): path_of(item["canonical_url"]) for item in result.items}
    assert all(named[f"/articles/{n}"] == f"/articles/{n}" for n in range(CLUSTERS))
    assert MIRROR[0] not in named  # the mirror waited for its page: the page's one row
    assert SLASH[0] not in named  # waited for its og:url, its slash form: that one row
    assert named[DIFFERS[0]] == DIFFERS[0]  # its declared canonical is another page
    assert result.stats.get("simhash_filter/canonical_first", 0) >= CLUSTERS + 1
    assert result.stats.get("simhash_filter/superseded", 0) == 0
    assert result.stats.get("simhash_filter/late_canonical", 0) == 0
    variants = [p for p in site.requested if p.startswith(("/print/", "/amp/"))]
    assert sorted(variants) == sorted(set(variants))  # held in memory, never fetched twice
    logged = re.findall(r"Near-duplicate of \S+ \([^)]*\): (\S+)", result.log)
    assert logged
    assert not {path_of(url) for url in logged} & set(kept)  # no kept page logged as a copy


def test_holding_never_stalls_a_crawl_of_one_request_at_a_time(
    site: SiteServer, tmp_path: Path
) -> None:
    """One request at a time and a scraper that backs out past one response: the held
    variants are ignored requests, not items waiting in the pipeline, so the crawl goes on
    and finishes (``crawl`` asserts it) with every canonical kept (a stall: the timeout)."""
    result, kept, _ = crawl(
        site, tmp_path, CONCURRENT_REQUESTS=1, SCRAPER_SLOT_MAX_ACTIVE_SIZE=1, CONCURRENT_ITEMS=1
    )
    check_kept(kept)
    assert feed_paths(result) == sorted(["/", *kept])


def test_an_unchanged_recrawl_emits_the_same_rows(site: SiteServer, tmp_path: Path) -> None:
    """Stable keeps: the second crawl of an unchanged site keeps the same URLs, writes the
    same feed and replaces nothing."""
    first, kept, _ = crawl(site, tmp_path)
    again, kept_again, _ = crawl(site, tmp_path)
    assert kept_again == kept
    assert feed_paths(again) == feed_paths(first)
    assert again.stats.get("simhash_filter/superseded", 0) == 0
    assert again.stats.get("simhash_filter/kept", 0) == 0  # nothing new: all unchanged


def test_supersede_keeps_the_canonical_for_storage_that_replaces(
    site: SiteServer, tmp_path: Path
) -> None:
    """``KEEP = "supersede"``: the canonical is fetched first too, and a variant kept before
    its canonical (none here) would be replaced; the storage pipeline's file is the kept set."""
    _, kept, stored = crawl(site, tmp_path, SIMHASH_FILTER_KEEP="supersede")
    check_kept(kept)
    assert stored == sorted(["/", *kept])
    with FingerprintStore.open_existing(f"sqlite:///{tmp_path / 'dedup.db'}") as store:
        pairs = list(store.canonical_pairs())
    # each variant the crawl fetched is confirmed (a variant the request rules skip before
    # download, e.g. once /amp/1 and /amp/2 taught a rule, is never fetched)
    fetched = {path for path, _agent in site.hits}
    variants = {p for p in fetched if p.startswith(("/print/", "/amp/", "/articles/0?"))}
    variants |= {SLASH[0]} & fetched  # its og:url, confirmed
    variants -= {f"/print/{LOST}", f"/amp/{LOST}"}  # their canonical 404s: nothing confirmed
    variants -= {DIFFERS[0]}  # its canonical is another text
    assert {path_of(p.variant_url) for p in pairs} == {path_of(v) for v in variants}
    assert len(pairs) == len(variants) >= CLUSTERS + 1


def test_keep_first_keeps_a_variant(site: SiteServer, tmp_path: Path) -> None:
    result, kept, _ = crawl(site, tmp_path, SIMHASH_FILTER_KEEP="first")
    canonicals = {f"/articles/{n}" for n in range(CLUSTERS)}
    assert not canonicals & set(kept)  # the canonicals came after their variants
    assert result.stats.get("simhash_filter/superseded", 0) == 0
