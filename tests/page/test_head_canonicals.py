"""Canonical hints read from the parse the page work makes anyway (page/head_canonicals.py)."""

from __future__ import annotations

import pytest
from trafilatura.utils import load_html

from crawler.articles import HARBOUR_BRIDGE
from simhash_filter.core.canonical import PageHints
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.page.extract import extract_page
from simhash_filter.page.head_canonicals import MAX_HEAD_ELEMENTS, page_hints
from simhash_filter.page.pool import PageJob, PagePool
from simhash_filter.page.work import work_page

URL = "https://site.example/news/bridge.html?utm_source=rss"
BODY = "<article>" + "".join(f"<p>{p}</p>" for p in HARBOUR_BRIDGE.paragraphs) + "</article>"


def page(head: str, body: str = BODY) -> str:
    return f"<html><head><title>t</title>{head}</head><body>{body}</body></html>"


def hints_of(html: str, url: str | None = URL) -> PageHints | None:
    return page_hints(load_html(html), url)


def test_link_and_og_url_resolve_against_the_page() -> None:
    html = page('<link rel="canonical" href="bridge.html"><meta property="og:url" content="/b">')
    assert hints_of(html) == PageHints(
        "https://site.example/news/bridge.html", "https://site.example/b"
    )


def test_base_href_counts_and_rel_is_a_token_list() -> None:
    html = page('<base href="/archive/"><link rel="Alternate CANONICAL" href="bridge">')
    assert hints_of(html) == PageHints("https://site.example/archive/bridge", None)


def test_a_canonical_link_in_the_body_is_not_the_pages() -> None:
    html = page("", BODY + '<link rel="canonical" href="/quoted">')
    assert hints_of(html) is None


@pytest.mark.parametrize(
    "head",
    [
        "",
        '<link rel="canonical">',
        '<link rel="canonical" href="javascript:void(0)">',
        '<link rel="stylesheet" href="/a.css">',
        '<link rel="canonical" href="/a"><link rel="canonical" href="/b">',  # conflicting
    ],
)
def test_no_usable_hint(head: str) -> None:
    assert hints_of(page(head)) is None


def test_no_url_no_hints_and_a_huge_head_is_bounded() -> None:
    assert hints_of(page('<link rel="canonical" href="/a">'), None) is None
    crowd = '<link rel="preload" href="/x">' * (MAX_HEAD_ELEMENTS + 10)
    assert hints_of(page(crowd + '<link rel="canonical" href="/late">')) is None
    assert hints_of(page('<link rel="canonical" href="/early">' + crowd)) == PageHints(
        "https://site.example/early", None
    )


def test_the_page_work_carries_the_hints_and_the_text_is_unchanged() -> None:
    with_hint = page('<link rel="canonical" href="/news/bridge.html">')
    without = page("")
    extracted = extract_page(with_hint, url=URL)
    assert extracted.hints == PageHints("https://site.example/news/bridge.html", None)
    assert extracted.text == extract_page(without, url=URL).text
    fingerprinter = Fingerprinter()
    work = work_page(fingerprinter, URL, None, with_hint, max_bytes=1 << 20)
    plain = work_page(fingerprinter, URL, None, without, max_bytes=1 << 20)
    assert work.hints is not None
    assert work.hints.link == "https://site.example/news/bridge.html"
    assert work.signature == plain.signature
    empty = page("<link rel=canonical href=/x>", "<p>short</p>")
    no_text = work_page(fingerprinter, URL, None, empty, max_bytes=1 << 20)
    assert no_text.signature is not None
    assert no_text.signature.exact  # too little text: signed by its bytes, hints kept
    assert no_text.hints == PageHints("https://site.example/x", None)


def test_the_page_pool_returns_the_hints() -> None:
    fingerprinter = Fingerprinter()
    html = page('<link rel="canonical" href="/news/bridge.html">')
    pool = PagePool(1, fingerprinter, max_bytes=1 << 20, page_timeout=60)
    pool.start()
    try:
        result = pool.submit(PageJob(URL, None, html)).result(timeout=120)
    finally:
        pool.close()
    assert result.hints == PageHints("https://site.example/news/bridge.html", None)
    assert result.signature is not None
