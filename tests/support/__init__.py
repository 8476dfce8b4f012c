"""Test support: what the tests know about the loopback test site, and crawl helpers.

The site itself lives in :mod:`crawler.testsite` (the demo and the benchmarks serve it
too); this package re-exports it and adds what the tests know about it: which pages are
near-duplicates of which, which have no text, which must never be fetched. Beside it:
``crawl`` (one ``scrapy crawl`` to its end), ``workers`` (several, frozen at will),
``distributed`` (a crawl's index and the site's clusters), ``cli_corpus`` (the CLI's texts),
``helpers`` (components on a database, their stats, bit flips), ``processes`` (waiting on
and killing other processes).
"""

from __future__ import annotations

from crawler.testsite import FORUM_THREADS, HUGE_PAGE_BYTES, Page, SiteServer, build_site

from .crawl import CrawlResult, crawl_site, run_scrapy

__all__ = [
    "BOILERPLATE_TRAPS",
    "DISTINCT",
    "HARBOUR_CLUSTER",
    "HUGE_PAGE_BYTES",
    "NEVER_FETCHED",
    "NO_TEXT",
    "SYNDICATED_CLUSTER",
    "ZH_CLUSTER",
    "CrawlResult",
    "Page",
    "SiteServer",
    "build_site",
    "crawl_site",
    "run_scrapy",
]

HARBOUR_CLUSTER = frozenset(
    {
        "/news/harbour-bridge.html",
        "/news/harbour-bridge.html?utm_source=rss",  # same page, tracking parameter
        "/print/harbour-bridge.html",  # print template, changed date
        "/blog/2024/03/harbour-bridge-reopens/",  # blog template, added comment block
        "/news/harbour-bridge-short.html",  # one paragraph removed
    }
)
"""One article, five URLs: exactly one is kept, the other four are dropped as its duplicates."""

ZH_CLUSTER = frozenset({"/zh/waste-sorting.html", "/zh/gbk/waste-sorting.html"})
"""A Chinese article in UTF-8 and GBK (other template, changed date): one kept, one dropped."""

DISTINCT = frozenset(
    {
        "/portal/urban-beekeeping.html",  # four articles sharing one heavy template
        "/portal/volcano-drones.html",
        "/portal/library-reopens.html",
        "/portal/night-trains.html",
        "/zh/mountain-railway.html",
        "/broken/sourdough-chemistry-huge.html",  # the 5 MB page
    }
)
"""Pages unlike any other: always kept."""

NO_TEXT = frozenset(
    {
        "/",  # a link list
        "/portal/lantern-photos.html",  # a photo gallery: template, no main text
        "/print/help.html",  # a few words
        "/broken/empty.html",
        "/broken/binary.html",
    }
)
"""Pages that pass unfingerprinted."""

NEVER_FETCHED = frozenset({"/private/secret.html"})
"""Disallowed by robots.txt."""

BOILERPLATE_TRAPS = frozenset(f"/forum/thread-{n}.html" for n in range(FORUM_THREADS))
"""``build_site(boilerplate_traps=True)``: different posts, one extracted text (the forum's
notice): an extraction failure, not copies. Every one passes (issue 13.E)."""

SYNDICATED_CLUSTER = frozenset(
    {"/portal/urban-beekeeping.html", "/syndicated/urban-beekeeping.html"}
)
"""``build_site(boilerplate_traps=True)``: one article on two sites, in two templates: one
kept, one dropped, however much the pages around it differ."""
