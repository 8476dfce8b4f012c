"""Real ``scrapy crawl`` runs over a loopback site with URL aliases: variants skipped before
download, no page lost, rules learned and shared, JOBDIR and scrapy-redis skipping natively,
and a wrong rule retired with its skipped requests fetched after all."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.utils.request import fingerprint
from sqlalchemy import select

from simhash_filter.store import FingerprintStore
from simhash_filter.store.schema import pages_table
from simhash_filter.store.url_rules import UrlRuleStore
from simhash_filter.urls.rules import RuleState
from simhash_filter.urls.sampling import is_sampled
from tests.support.alias_site import AliasSite, ViewSite, alias_site
from tests.support.crawl import CrawlResult, run_scrapy

pytestmark = pytest.mark.slow

FAST = {
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "SIMHASH_FILTER_WORKERS": 0,
    "LOG_LEVEL": "INFO",
}
STATS = "simhash_filter/requests/"


def crawl(site: AliasSite, cwd: Path, db: str, **settings: object) -> CrawlResult:
    cwd.mkdir(parents=True, exist_ok=True)
    result = run_scrapy(
        ["crawl", "site", "-a", f"start_url={site.base_url}/"],
        cwd=cwd,
        settings={**FAST, "SIMHASH_FILTER_DATABASE_URL": db, **settings},
    )
    assert result.returncode == 0, result.log[-3000:]
    return result


def kept_urls(db: str) -> set[str]:
    """The URLs of every page the crawls kept."""
    with FingerprintStore.open_existing(db) as store, store.engine.connect() as conn:
        return {url for (url,) in conn.execute(select(pages_table.c.url))}


def _story_kept(site: AliasSite, urls: set[str], k: int) -> bool:
    slug = site.slugs()[k]
    return any(f"/{slug}" in url for url in urls)


def _assert_no_page_lost(site: AliasSite, db: str) -> None:
    urls = kept_urls(db)
    assert all(_story_kept(site, urls, k) for k in range(site.articles))
    for k in range(site.items):  # a parameter that selects content: every value kept
        assert f"{site.base_url}/item?id={k}" in urls
    assert f"{site.base_url}/moved/story-x" in urls  # the redirect target, not "seen"


def test_variants_are_skipped_rules_learned_and_no_page_lost(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dedup.db'}"
    with alias_site() as site:
        first = crawl(site, tmp_path / "one", db, CONCURRENT_REQUESTS=2)
        fetched_first = len(site.requested)
        _assert_no_page_lost(site, db)
        assert first.stats[STATS + "skipped/tracking"] >= 1
        assert first.stats[STATS + "skipped/session"] >= 1
        info = [line for line in first.log.splitlines() if "Skipped <GET" in line]
        assert len(info) == 1
        assert "INFO" in info[0]
        with FingerprintStore.open_existing(db) as store:
            active = {r.rule.kind for r in UrlRuleStore(store).rules(states=[RuleState.ACTIVE])}
        assert {"param", "prefix", "suffix"} <= active
        second = crawl(site, tmp_path / "two", db, CONCURRENT_REQUESTS=2)
        fetched_second = len(site.requested) - fetched_first
    assert second.stats[STATS + "skipped/rule"] >= 1
    assert fetched_second < fetched_first
    requested_second = site.requested[fetched_first:]
    for k in range(site.items):  # content parameters are fetched every time
        assert f"/item?id={k}" in requested_second


def test_two_crawlers_share_rules_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with alias_site() as site:
        crawl(site, tmp_path / "learner", pg_url, CONCURRENT_REQUESTS=2)
        learned = len(site.requested)
        other = crawl(site, tmp_path / "other", pg_url, CONCURRENT_REQUESTS=2)
    assert other.stats[STATS + "skipped/rule"] >= 1
    assert len(site.requested) - learned < learned
    with FingerprintStore.open_existing(pg_url) as store:
        saved = sum(r.fetches_saved for r in UrlRuleStore(store).rules())
    assert saved >= other.stats[STATS + "skipped/rule"]


def test_a_jobdir_resume_keeps_skipping_by_canonical_form(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dedup.db'}"
    jobdir = tmp_path / "job"
    with alias_site() as site:
        settings = {"JOBDIR": str(jobdir), "CONCURRENT_REQUESTS": 1}
        crawl(site, tmp_path / "run", db, CLOSESPIDER_PAGECOUNT=6, **settings)
        crawl(site, tmp_path / "run", db, **settings)
        seen = (jobdir / "requests.seen").read_bytes()
    _assert_no_page_lost(site, db)
    canonical = Request(f"{site.base_url}/news/story-0")
    digest = fingerprint(canonical)
    assert digest in seen or digest.hex().encode() in seen  # (binary since Scrapy 2.14)
    variants = [
        path for path in site.requested if "utm_source=feed" in path and not is_sampled(path, 20)
    ]
    assert variants == []  # never fetched in either run: skipped as their canonical form


def test_scrapy_redis_skips_variants_in_its_shared_set(tmp_path: Path, redis_url: str) -> None:
    import redis

    prefix = f"simhash-filter-test-rules-{tmp_path.name}"
    client = redis.Redis.from_url(redis_url)
    db = f"sqlite:///{tmp_path / 'dedup.db'}"
    try:
        with alias_site() as site:
            crawl(
                site,
                tmp_path / "run",
                db,
                SCHEDULER="scrapy_redis.scheduler.Scheduler",
                DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
                SCHEDULER_QUEUE_KEY=f"{prefix}:requests",
                SCHEDULER_DUPEFILTER_KEY=f"{prefix}:dupefilter",
                SCHEDULER_PERSIST=True,
                REDIS_URL=redis_url,
                CONCURRENT_REQUESTS=2,
            )
            members = {m.decode() for m in client.smembers(f"{prefix}:dupefilter")}
        canonical = fingerprint(Request(f"{site.base_url}/news/story-1")).hex()
        assert canonical in members
        variants = [p for p in site.requested if "utm_source=feed" in p and not is_sampled(p, 20)]
        assert variants == []
        _assert_no_page_lost(site, db)
    finally:
        client.delete(f"{prefix}:dupefilter", f"{prefix}:requests")


def _views(rate: int) -> dict[int, list[str]]:
    """Three views a document: on the later documents two the sample skips, then one it
    fetches (the counterexample)."""
    views: dict[int, list[str]] = {k: ["a", "b", "c"] for k in range(3)}
    for k in range(3, 6):
        path = f"/doc/{k}?view="
        skipped = [v for v in (f"s{n}" for n in range(200)) if not is_sampled(path + v, rate)]
        sampled = next(v for v in (f"t{n}" for n in range(200)) if is_sampled(path + v, rate))
        views[k] = [*skipped[:2], sampled]
    return views


def test_a_wrong_rule_is_retired_and_its_skips_fetched(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dedup.db'}"
    site = ViewSite(articles=6, views=_views(3), same_until=3)
    with alias_site(site):
        result = crawl(
            site,
            tmp_path / "run",
            db,
            CONCURRENT_REQUESTS=1,
            DEPTH_PRIORITY=1,
            SCHEDULER_DISK_QUEUE="scrapy.squeues.PickleFifoDiskQueue",
            SCHEDULER_MEMORY_QUEUE="scrapy.squeues.FifoMemoryQueue",
            SIMHASH_FILTER_RULE_MIN_SUPPORT=2,
            SIMHASH_FILTER_RULE_SAMPLE=3,
        )
    assert result.stats.get("simhash_filter/rules/retired", 0) >= 1, result.log[-4000:]
    assert result.stats.get(STATS + "refetched", 0) >= 1
    with FingerprintStore.open_existing(db) as store:
        views = {r.rule.pattern: r.state for r in UrlRuleStore(store).rules()}
    assert views["/doc/?view"] is RuleState.RETIRED  # "any value": wrong from doc 3 on
    urls = kept_urls(db)
    for k in range(site.articles):  # every different page kept: none lost to the rule
        assert any(url.startswith(f"{site.base_url}/doc/{k}") for url in urls)
        if k >= site.same_until:
            for view in site.views[k]:
                assert f"{site.base_url}/doc/{k}?view={view}" in urls
