"""End to end: ``scrapy crawl`` in a subprocess against the loopback test site.

Real HTTP, real Scrapy, real trafilatura, the real store. Which member of a cluster of
near-duplicates is kept depends on the order concurrent responses reach the filter, so the
assertions are per cluster: exactly one member kept, every other member dropped as a
duplicate of that one.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from lxml import html as lxml_html
from support import (
    BOILERPLATE_TRAPS,
    DISTINCT,
    HARBOUR_CLUSTER,
    NEVER_FETCHED,
    NO_TEXT,
    SYNDICATED_CLUSTER,
    ZH_CLUSTER,
    CrawlResult,
    SiteServer,
    build_site,
    crawl_site,
    run_scrapy,
)

from crawler.testsite import FORUM_NOTICE
from simhash_filter import Fingerprinter, hamming_distance
from simhash_filter.page.extract import extract_text
from simhash_filter.store import FingerprintStore

FAST = {
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "LOG_LEVEL": "INFO",
    # the content check alone: every variant is downloaded and judged (the request side,
    # which skips the tracking variant before the download, has its own crawls:
    # test_request_rules.py, and the add-on's defaults below)
    "SIMHASH_FILTER_REQUEST_FILTER": False,
}
TRACKING_VARIANT = "/news/harbour-bridge.html?utm_source=rss"
CLUSTERS = (HARBOUR_CLUSTER, ZH_CLUSTER)


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    with SiteServer(build_site()) as server:
        yield server


def crawl(site: SiteServer, workdir: Path, **settings: object) -> CrawlResult:
    return crawl_site(site, workdir, {**FAST, **settings})


def superseded_paths(db_url: str) -> set[str]:
    """The pages kept first and then replaced by the copy the keep policy prefers."""
    with FingerprintStore.open_existing(db_url) as store:
        return {path_of(d.url) for d in store.duplicates() if d.superseded}


def check_drops(
    db_url: str, kept: set[str], clusters: tuple[frozenset[str], ...] = CLUSTERS
) -> dict[str, str]:
    """Every dropped page, as path → path of the page it duplicates; each cluster checked.
    ``kept``: the pages whose items passed; one kept first and superseded by the copy the keep
    policy prefers (docs/keep.md) passed too, and names its successor like a drop."""
    with FingerprintStore.open_existing(db_url) as store:
        drops = {path_of(d.url): path_of(d.duplicate_of_url) for d in store.duplicates()}
        distances = [d.distance for d in store.duplicates() if not d.superseded]
        superseded = {path_of(d.url) for d in store.duplicates() if d.superseded}
    assert all(0 <= d <= 3 for d in distances)
    kept = kept - superseded
    for cluster in clusters:
        (winner,) = cluster & kept
        assert {p: drops[p] for p in cluster - {winner}} == dict.fromkeys(
            cluster - {winner}, winner
        )
    assert set(drops) == frozenset().union(*clusters) - kept
    return drops


def test_the_site_near_duplicates_are_within_k_and_the_rest_far_apart() -> None:
    """Guards the fixtures: if the fingerprint changes, this says which pairs drifted."""
    fingerprinter = Fingerprinter()
    site = build_site()
    fingerprints = {}
    for path, page in site.items():
        text = extract_text(page.body)
        fingerprints[path.split("?")[0]] = fingerprinter.fingerprint(text) if text else None
    for path in NO_TEXT:
        assert fingerprints[path] is None, path
    for cluster in CLUSTERS:
        for a, b in itertools.combinations(sorted({p.split("?")[0] for p in cluster}), 2):
            distance = hamming_distance(fingerprints[a], fingerprints[b])  # type: ignore[arg-type]
            assert distance <= 3, f"{a} and {b} drifted apart: distance {distance}"
    representatives = [*DISTINCT, "/news/harbour-bridge.html", "/zh/waste-sorting.html"]
    for a, b in itertools.combinations(representatives, 2):
        distance = hamming_distance(fingerprints[a], fingerprints[b])  # type: ignore[arg-type]
        assert distance > 10, f"{a} and {b} came too close: distance {distance}"


@pytest.mark.slow
def test_crawl_keeps_one_page_per_cluster_then_recrawl_is_unchanged(
    site: SiteServer, tmp_path: Path
) -> None:
    site.requested.clear()
    first = crawl(site, tmp_path)
    items = {path_of(i["url"]): i for i in first.items}
    # a copy kept first and superseded by the URL the rules prefer passed too (when the
    # tracking variant arrives before its article): it is no longer kept
    superseded = superseded_paths(f"sqlite:///{tmp_path / 'dedup.db'}")
    kept = {p for p, i in items.items() if i["fingerprint"]} - superseded
    assert {p for p, i in items.items() if not i["fingerprint"]} == NO_TEXT
    assert kept >= DISTINCT
    assert len(kept & HARBOUR_CLUSTER) == 1
    assert len(kept & ZH_CLUSTER) == 1
    assert len(kept) == len(DISTINCT) + 2
    assert all(len(i["fingerprint"]) == 16 for p, i in items.items() if p in kept)
    drops = check_drops(f"sqlite:///{tmp_path / 'dedup.db'}", kept)
    assert len(drops) == 5
    assert first.stat("simhash_filter/superseded") == len(superseded)
    assert first.stat("simhash_filter/kept") == 8 + len(superseded)
    assert first.stat("simhash_filter/dropped") == 5 - len(superseded)
    assert first.stat("simhash_filter/no_text") == len(NO_TEXT)
    assert first.stat("simhash_filter/errors") == 0
    assert first.stat("item_dropped_reasons_count/NearDuplicate") == 5 - len(superseded)
    assert first.stat("log_count/ERROR") == 0
    assert first.log.count("Near-duplicate of") == 1  # the first drop, at INFO
    assert "SIMHASH_FILTER_DEBUG" in first.log
    assert not NEVER_FETCHED & set(site.requested)  # robots.txt obeyed
    assert "/print/help.html" in site.requested  # the pipeline does not stop link following

    # the pages with too little text but some visible text are stored under an exact key
    exact = NO_TEXT - {"/broken/empty.html", "/broken/binary.html"}
    with FingerprintStore.open_existing(f"sqlite:///{tmp_path / 'dedup.db'}") as store:
        assert store.stats().pages == 8 + len(exact)
        for path in kept:
            page = store.lookup(site.url(path))
            assert page is not None
            assert f"{page.fingerprint:016x}" == items[path]["fingerprint"]

    second = crawl(site, tmp_path)
    assert second.stat("simhash_filter/kept") == 0
    assert second.stat("simhash_filter/unchanged") == 8
    assert second.stat("simhash_filter/changed") == 0
    assert second.stat("simhash_filter/dropped") == 5
    assert second.stat("simhash_filter/no_text") == len(NO_TEXT)
    # a superseded page is a copy now: its item no longer passes
    assert {path_of(i["url"]) for i in second.items} == set(items) - superseded
    with FingerprintStore.open_existing(f"sqlite:///{tmp_path / 'dedup.db'}") as store:
        assert store.stats().pages == 8 + len(exact)


@pytest.mark.slow
def test_middleware_ignores_duplicates_and_their_links(site: SiteServer, tmp_path: Path) -> None:
    site.requested.clear()
    result = crawl(site, tmp_path, SIMHASH_FILTER_MIDDLEWARE=True)
    items = {path_of(i["url"]): i for i in result.items}
    kept = {p for p, i in items.items() if i["fingerprint"]}
    # the print version is found only through a kept copy, so it is always checked after it
    # and ignored, and the help page it alone links to is never requested
    assert "/print/harbour-bridge.html" in site.requested
    assert "/print/help.html" not in site.requested
    assert "/print/harbour-bridge.html" not in kept
    check_drops(f"sqlite:///{tmp_path / 'dedup.db'}", kept)
    assert {p for p, i in items.items() if not i["fingerprint"]} == NO_TEXT - {"/print/help.html"}
    # a copy kept first (the tracking variant, when it arrives first) and then superseded by
    # the URL the rules prefer passed too: how many depends on the arrival order
    superseded = result.stat("simhash_filter/superseded")
    assert len(kept) == 8 + superseded
    # counted once although both the middleware and the pipeline are on
    assert result.stat("simhash_filter/kept") == 8 + superseded
    assert result.stat("simhash_filter/dropped") + superseded == 5
    assert result.stat("simhash_filter/no_text") == len(NO_TEXT) - 1
    assert result.stat("item_dropped_count") == 0  # dropped as responses, never as items
    assert result.stat("log_count/ERROR") == 0


FOREIGN_SETTINGS = """\
BOT_NAME = "foreign"
SPIDER_MODULES = ["foreign.spiders"]
ADDONS = {"simhash_filter.Addon": 100}
"""

FOREIGN_SPIDER = """\
import scrapy


class PagesSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, start=None, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        yield {"url": response.url, "html": response.text}
        yield from response.follow_all(css="a", callback=self.parse)
"""


@pytest.mark.slow
def test_addon_alone_in_a_foreign_project(site: SiteServer, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "foreign" / "spiders").mkdir(parents=True)
    (project / "foreign" / "__init__.py").write_text("")
    (project / "foreign" / "settings.py").write_text(FOREIGN_SETTINGS)
    (project / "foreign" / "spiders" / "__init__.py").write_text("")
    (project / "foreign" / "spiders" / "pages.py").write_text(textwrap.dedent(FOREIGN_SPIDER))
    (project / "scrapy.cfg").write_text("[settings]\ndefault = foreign.settings\n")
    site.requested.clear()
    result = run_scrapy(
        ["crawl", "pages", "-a", f"start={site.url('/')}"],
        cwd=project,
        settings_module=None,  # found through scrapy.cfg
        pythonpath=[project],
    )
    assert result.returncode == 0, result.log[-5000:]
    kept_urls = {path_of(i["url"]) for i in result.items}
    assert (project / "dedup.db").exists()  # the default database URL
    with FingerprintStore.open_existing(f"sqlite:///{project / 'dedup.db'}") as store:
        stored = {p for p in kept_urls if store.lookup(site.url(p)) is not None}
    # pages of too little text are stored under an exact key too: the no-text pages, and
    # the private page's few words (this project does not obey robots.txt)
    kept = stored - NO_TEXT - NEVER_FETCHED
    assert kept >= DISTINCT
    assert len(kept) == 8
    # the add-on's request side: the tracking variant is its article's canonical form,
    # skipped before the download (its path is not in the 1-in-20 sample)
    assert TRACKING_VARIANT not in site.requested
    assert result.stat("simhash_filter/requests/skipped/tracking") == 1
    content_clusters = (HARBOUR_CLUSTER - {TRACKING_VARIANT}, ZH_CLUSTER)
    check_drops(f"sqlite:///{project / 'dedup.db'}", kept, content_clusters)
    assert result.stat("simhash_filter/dropped") == 4
    assert result.stat("item_dropped_reasons_count/NearDuplicate") == 4


def test_robots_txt_holds_for_every_request_that_waited_for_it(
    site: SiteServer, tmp_path: Path
) -> None:
    """Several start requests to one host wait together for its robots.txt. Scrapy's own
    middleware (2.13+) checks only the first waiter and lets the rest through (measured
    here: 3 of these 4 disallowed URLs fetched); the project's middleware checks all."""
    disallowed = [site.url(f"/private/secret.html?copy={i}") for i in range(4)]
    site.requested.clear()
    result = run_scrapy(
        ["crawl", "site", "-a", "start_urls=" + ",".join([site.url("/"), *disallowed])],
        cwd=tmp_path,
        settings={**FAST, "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'dedup.db'}",
                  "DEPTH_LIMIT": 1},  # the links of / are depth 1, theirs are not followed
    )  # fmt: skip
    assert result.returncode == 0, result.log[-5000:]
    assert not [path for path in site.requested if path.startswith("/private/")]
    assert result.stat("robotstxt/forbidden") == len(disallowed) + 1  # + the link on /
    assert site.requested.count("/robots.txt") == 1


# -- boilerplate traps (issue 13.E) ------------------------------------------------------


def visible_text(body: bytes) -> str:
    """Every word a reader sees on the page, whitespace-normalized."""
    return " ".join(lxml_html.fromstring(body).body.text_content().split())


def resemblance(a: str, b: str) -> float:
    """Character-5-gram Jaccard similarity of two texts."""
    grams_a, grams_b = ({t[i : i + 5] for i in range(len(t) - 4)} for t in (a, b))
    return len(grams_a & grams_b) / len(grams_a | grams_b)


def test_the_boilerplate_traps_are_traps_and_the_repost_a_copy() -> None:
    """Guards the fixtures of the 13.E crawl: the forum's threads are different pages whose
    extracted text is one and the same notice; the reposted article is the same text as
    the portal's, on a page that differs from the portal's as much."""
    site = build_site(boilerplate_traps=True)
    for a, b in itertools.combinations(sorted(BOILERPLATE_TRAPS), 2):
        assert extract_text(site[a].body) == extract_text(site[b].body) == FORUM_NOTICE
        assert resemblance(visible_text(site[a].body), visible_text(site[b].body)) < 0.2
    portal, repost = sorted(SYNDICATED_CLUSTER)
    assert extract_text(site[portal].body) == extract_text(site[repost].body)
    assert resemblance(visible_text(site[portal].body), visible_text(site[repost].body)) < 0.5


@pytest.fixture(scope="module")
def trap_site() -> Iterator[SiteServer]:
    with SiteServer(build_site(boilerplate_traps=True)) as server:
        yield server


@pytest.mark.slow
def test_crawl_passes_boilerplate_traps_and_still_drops_copies(
    trap_site: SiteServer, tmp_path: Path
) -> None:
    result = crawl(trap_site, tmp_path)
    items = {path_of(i["url"]): i for i in result.items}
    superseded = superseded_paths(f"sqlite:///{tmp_path / 'dedup.db'}")  # their items passed
    kept = {p for p, i in items.items() if i["fingerprint"]} - superseded
    # (a) different posts, one extracted text: every thread passes, and the two that match
    # an earlier one are counted as boilerplate
    assert kept >= BOILERPLATE_TRAPS
    assert result.stat("simhash_filter/boilerplate") == len(BOILERPLATE_TRAPS) - 1
    # (b) the same article on other pages is still dropped, the repost across sites too
    clusters = (*CLUSTERS, SYNDICATED_CLUSTER)
    drops = check_drops(f"sqlite:///{tmp_path / 'dedup.db'}", kept, clusters)
    assert not BOILERPLATE_TRAPS & set(drops)
    assert kept == DISTINCT - SYNDICATED_CLUSTER | BOILERPLATE_TRAPS | {
        p for cluster in clusters for p in cluster & kept
    }
    assert len(drops) == 6  # dropped on arrival, or kept first and superseded
    assert result.stat("simhash_filter/superseded") == len(superseded)
    assert result.stat("simhash_filter/dropped") == 6 - len(superseded)
    assert result.stat("item_dropped_reasons_count/NearDuplicate") == 6 - len(superseded)
    assert result.stat("simhash_filter/errors") == 0
    assert result.stat("log_count/ERROR") == 0
