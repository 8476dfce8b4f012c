"""Faults during real crawls: a worker SIGKILLed mid-crawl and restarted, and the PostgreSQL
server going away and coming back mid-crawl (fail-open and fail-closed workers; a server of
the test's own, so that the shared one stays up)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SiteServer
from support.distributed import (
    assert_consistent,
    link_parents,
    path_of,
    queued,
    read_index,
    redis_keys_fixture,
    representatives,
    site_clusters,
    wait_for,
)
from support.pgserver import PrivateServer
from support.redisserver import PrivateRedis
from support.workers import Worker, WorkerGroup, frozen

from crawler.distributed import RedisKeys, seed
from crawler.services import create_pg_database
from crawler.testsite import build_site

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CONCURRENCY = 2


@pytest.fixture
def redis_keys(redis_url: str) -> Iterator[RedisKeys]:
    yield from redis_keys_fixture(redis_url)


def common_settings(db_url: str) -> dict[str, object]:
    return {
        "SIMHASH_FILTER_DATABASE_URL": db_url,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
        "LOG_LEVEL": "INFO",
    }


def redis_settings(
    pg_url: str, redis_url: str, keys: RedisKeys, **more: object
) -> dict[str, object]:
    """A ``site_redis`` worker's settings on ``redis_url`` under ``keys``."""
    return {
        **common_settings(pg_url),
        "REDIS_URL": redis_url,
        "REDIS_KEY_PREFIX": keys.prefix,
        "DISTRIBUTED_IDLE_TIMEOUT": 2,
        **more,
    }


def start_redis_workers(
    group: WorkerGroup,
    tmp_path: Path,
    site: SiteServer,
    redis_url: str,
    keys: RedisKeys,
    settings: dict[str, object],
    names: tuple[str, ...] = ("w",),
) -> list[Worker]:
    """``site_redis`` workers on a frontier seeded with the site's home page."""
    assert seed(redis_url, keys.start_urls, [site.base_url + "/"]) == 1
    return [
        group.start(name, ["crawl", "site_redis"], workdir=tmp_path / name, settings=settings)
        for name in names
    ]


def fetched_by(site: SiteServer) -> list[tuple[str, str]]:
    """(path, User-Agent) of every page request but robots.txt, in order."""
    return [(p, a) for p, a in list(site.hits) if p != "/robots.txt"]


def fetched(site: SiteServer, agent: str | None = None) -> list[str]:
    return [p for p, a in fetched_by(site) if agent in {None, a}]


@pytest.mark.redis
def test_sigkill_one_worker_the_others_finish_and_a_restarted_worker_resumes(
    tmp_path: Path, pg_url: str, redis_url: str, redis_keys: RedisKeys
) -> None:
    clusters_n = 60
    pages = build_site(huge_page_bytes=100_000, clusters=clusters_n)
    parents = link_parents(pages)
    settings = {
        **common_settings(pg_url),
        "REDIS_URL": redis_url,
        "REDIS_KEY_PREFIX": redis_keys.prefix,
        "DISTRIBUTED_IDLE_TIMEOUT": 2,
    }
    with SiteServer(pages, latency=0.15) as site, WorkerGroup() as group:
        assert seed(redis_url, redis_keys.start_urls, [site.base_url + "/"]) == 1

        def worker(name: str) -> Worker:
            return group.start(
                name, ["crawl", "site_redis"], workdir=tmp_path / name, settings=settings
            )

        workers = {name: worker(name) for name in ("a", "b", "c")}
        total = len(pages) - 2  # but robots.txt and the disallowed page

        def busiest() -> tuple[str, int]:
            counts = Counter(agent for _path, agent in fetched_by(site))
            return counts.most_common(1)[0] if counts else ("", 0)

        wait_for(
            lambda: len(fetched(site)) >= total // 4 and busiest()[1] >= 8,
            timeout=120,
            what="a quarter of the site fetched, 8 pages of them by one worker",
        )
        victim = workers.pop(busiest()[0].removeprefix("worker-"))
        victim.kill()
        # The survivors stand still until the restarted worker is fetching: otherwise they
        # may drain the queue while it is still importing Scrapy, and it would find nothing.
        with frozen(workers.values()):
            killed_at = len(fetched(site))
            assert queued(redis_url, redis_keys) > 0, "the kill came too late: nothing queued"
            restarted = worker("restarted")  # the same command: it resumes from Redis
            wait_for(
                lambda: bool(fetched(site, "worker-restarted")),
                timeout=180,
                what="the restarted worker's first page from the shared queue",
            )
        results = {w.name: w.wait(timeout=240) for w in [*workers.values(), restarted]}
        victim_hits = set(fetched(site, f"worker-{victim.name}"))

    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.log[-3000:]}"
        assert result.stats["finish_reason"] == "finished"
        assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
    assert killed_at < total * 3 // 4, "the kill came too late to test anything"

    hits = Counter(fetched(site))
    assert max(hits.values()) == 1, "a page was fetched twice"
    assert hits["/"] == 1  # the restarted worker did not start the crawl over...
    restarted_hits = fetched(site, "worker-restarted")
    assert restarted_hits, "...it resumed it: it fetched pages from the shared queue"
    assert results["restarted"].stat("scheduler/dequeued/redis") >= len(restarted_hits)

    # the index is consistent, one page per near-duplicate cluster
    index = read_index(pg_url)
    assert_consistent(index)
    representatives(index, site_clusters(clusters_n))
    # nothing a surviving worker yielded is missing from the index
    for result in results.values():
        for item in result.items:
            if item.get("fingerprint"):
                assert index.kept[path_of(item["url"])] == int(item["fingerprint"], 16)

    # what was lost is what the killed worker held: pages it was fetching or parsing,
    # and pages only linked from those (scrapy-redis has no acknowledgement of requests)
    reachable = {p for p in pages if p not in {"/robots.txt", "/private/secret.html"}}
    reachable |= {p for p, ps in parents.items() if "?" in p and ps}
    never = reachable - set(hits)
    popped_by_victim = {p for p in never if parents[p] - victim_hits & set(hits)}
    assert len(popped_by_victim) <= CONCURRENCY, sorted(popped_by_victim)
    for path in never - popped_by_victim:  # all of its fetched parents died with the victim
        assert parents[path] & set(hits) <= victim_hits | popped_by_victim, path
    assert len(never) < len(reachable) // 4


# -- PostgreSQL goes away mid-crawl ---------------------------------------------------


@pytest.fixture
def private_pg() -> Iterator[PrivateServer]:
    """A PostgreSQL server of the test's own, to stop and start: the shared one stays up for
    every other test and benchmark running meanwhile."""
    with PrivateServer() as server:
        yield server


def test_postgresql_outage_mid_crawl_fail_open_passes_fail_closed_holds_back(
    tmp_path: Path, private_pg: PrivateServer
) -> None:
    # two crawls, two indexes on the one server: fail-open and fail-closed
    db_urls = {name: create_pg_database("sf_test", private_pg.url()) for name in ("open", "closed")}
    sites = {
        "open": SiteServer(build_site(huge_page_bytes=50_000, clusters=50, seed=1), latency=0.05),
        "closed": SiteServer(build_site(huge_page_bytes=50_000, clusters=50, seed=2), latency=0.05),
    }
    workers: dict[str, Worker] = {}
    for site in sites.values():
        site.start()
        site.hold_after(40)  # the rest waits for the outage (below)
    try:
        with WorkerGroup() as group:
            for name, site in sites.items():
                workers[name] = group.start(
                    name,
                    ["crawl", "site", "-a", f"start_url={site.base_url}/"],
                    workdir=tmp_path / name,
                    settings={
                        **common_settings(db_urls[name]),
                        "SIMHASH_FILTER_FAIL_OPEN": name == "open",
                        "SIMHASH_FILTER_OUTAGE_RETRY": 0.5,  # an outage the retry won't cover
                    },
                )
            wait_for(
                lambda: all(len(fetched(s)) >= 40 for s in sites.values()),
                timeout=120,
                what="both crawls under way",
            )
            # The crawls stand still while the server stops and starts, and each site answers
            # 20 pages during the outage, then holds the rest until the server is back: pages
            # are left to meet the outage and to be indexed after it, however slow the machine.
            with frozen(workers.values()):
                private_pg.stop()
                down_at = {name: len(fetched(s)) for name, s in sites.items()}
                for site in sites.values():
                    site.hold_after(20)
            wait_for(  # pages keep coming while the index is down, and meet the outage
                lambda: all(
                    len(fetched(s)) >= down_at[n] + 15
                    and "Could not check" in workers[n].log_path.read_text()
                    for n, s in sites.items()
                ),
                timeout=120,
                what="15 more pages fetched by each crawl, one of them unchecked",
            )
            with frozen(workers.values()):
                private_pg.start()  # returns once the server accepts connections
                back_at = {name: len(fetched(s)) for name, s in sites.items()}
                for site in sites.values():
                    site.release()
            results = {name: w.wait(timeout=240) for name, w in workers.items()}
    finally:
        for site in sites.values():
            site.stop()

    for name, result in results.items():
        index = read_index(db_urls[name])
        assert_consistent(index)
        assert result.returncode == 0, result.log[-3000:]
        assert result.stats["finish_reason"] == "finished", name
        errors = int(result.stat("simhash_filter/errors"))
        assert errors >= 1, f"{name}: no page met the outage"
        assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
        assert "Could not check" in result.log  # the pipeline's warning, one per page
        site_pages = set(fetched(sites[name]))
        # the pipeline reconnected by itself: pages fetched after the restart were indexed
        after = set(fetched(sites[name])[back_at[name] :])
        assert after & set(index.kept), f"{name}: nothing indexed after the restart"
        kept = site_pages & set(index.kept)
        # kept first, then replaced by the copy the keep policy prefers: counted as kept
        superseded = site_pages & index.superseded
        dropped = site_pages & set(index.dropped) - superseded
        if name == "closed":  # held back: none is in the index, none was emitted
            assert int(result.stat("simhash_filter/kept")) == len(kept) + len(superseded)
            assert int(result.stat("simhash_filter/dropped")) == len(dropped)
        items = {path_of(item["url"]) for item in result.items}
        if name == "open":  # unchecked pages pass, counted as errors...
            assert result.stat("item_dropped_reasons_count/FilterUnavailable") == 0
            # ...and every one of them is in the index after the recovery: kept, or
            # logged as a copy of a kept page (its item had passed)
            journaled = int(result.stat("simhash_filter/unchecked/journaled"))
            assert journaled == errors
            assert int(result.stat("simhash_filter/unchecked/caught_up")) == journaled
            assert result.stat("simhash_filter/unchecked/lost") == 0
            emitted = int(result.stat("simhash_filter/unchecked/emitted_duplicates") or 0)
            # a page of too little text is recorded by its exact-content key, not kept
            no_text_late = int(result.stat("simhash_filter/unchecked/caught_up_no_text") or 0)
            caught_up_kept = journaled - emitted - no_text_late
            kept_ever = len(kept) + len(superseded)
            assert kept_ever == int(result.stat("simhash_filter/kept")) + caught_up_kept
            assert len(dropped) == int(result.stat("simhash_filter/dropped")) + emitted
            unchecked = items - kept - dropped - superseded
            assert len(unchecked) == int(result.stat("simhash_filter/no_text")) + no_text_late
            assert "pages that passed unchecked were checked once the store was back" in (
                result.log
            )
        else:  # unchecked pages are held back (dropped with FilterUnavailable)
            assert result.stat("item_dropped_reasons_count/FilterUnavailable") == errors
            assert len(items) == len(kept) + len(superseded) + int(
                result.stat("simhash_filter/no_text")
            )


def test_postgresql_restart_the_retry_covers_passes_no_page_unchecked(
    tmp_path: Path, private_pg: PrivateServer
) -> None:
    db_url = create_pg_database("sf_test", private_pg.url())
    with (
        SiteServer(build_site(huge_page_bytes=50_000, clusters=40, seed=3), latency=0.05) as site,
        WorkerGroup() as group,
    ):
        worker = group.start(
            "restart",
            ["crawl", "site", "-a", f"start_url={site.base_url}/"],
            workdir=tmp_path / "restart",
            settings={**common_settings(db_url), "SIMHASH_FILTER_OUTAGE_RETRY": 60},
        )
        wait_for(lambda: len(fetched(site)) >= 30, timeout=120, what="the crawl under way")
        with frozen([worker]):
            private_pg.stop()
            down_at = len(fetched(site))
        try:  # pages keep coming while the server is down: their checks wait in the retry
            wait_for(
                lambda: len(fetched(site)) >= down_at + 10,
                timeout=120,
                what="10 more pages fetched while the server is down",
            )
        finally:
            private_pg.start()
        result = worker.wait(timeout=240)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    assert result.stat("simhash_filter/errors") == 0, result.log[-3000:]  # 0 unchecked
    assert "Could not check" not in result.log
    index = read_index(db_url)
    assert_consistent(index)
    for item in result.items:  # every item that passed is in the index
        path = path_of(item["url"])
        if item.get("fingerprint") and path in index.superseded:  # replaced by its copy
            assert index.dropped[path].duplicate_of in index.kept
        elif item.get("fingerprint"):
            assert index.kept[path] == int(item["fingerprint"], 16)


# -- Redis restarts mid-crawl ---------------------------------------------------------


@pytest.mark.redis
@pytest.mark.parametrize("persistent", [False, True], ids=["no-persistence", "appendonly"])
def test_redis_restart_mid_crawl_a_lost_frontier_is_said_and_a_kept_one_finishes(
    tmp_path: Path, pg_url: str, persistent: bool
) -> None:
    """Without persistence a Redis restart loses the queue and the seen-set: the worker
    says so in one ERROR line and ends with finish_reason "frontier_lost", not "finished",
    exit status 1.
    With it (appendonly yes) the crawl finishes, every page fetched. Either way, no
    connection-error traceback."""
    pages = build_site(huge_page_bytes=50_000, clusters=40, seed=4)
    keys = RedisKeys("faults-redis")
    with (
        PrivateRedis(persistent=persistent) as redis_server,
        SiteServer(pages, latency=0.1) as site,
        WorkerGroup() as group,
    ):
        settings = redis_settings(pg_url, redis_server.url(), keys)
        (worker,) = start_redis_workers(group, tmp_path, site, redis_server.url(), keys, settings)
        wait_for(lambda: len(fetched(site)) >= 20, timeout=120, what="the crawl under way")
        with frozen([worker]):
            assert queued(redis_server.url(), keys) > 0, "nothing queued to lose"
            redis_server.restart()
        result = worker.wait(timeout=180)
        total = len(pages) - 2  # but robots.txt and the disallowed page
        hits = fetched(site)
    assert result.returncode == (0 if persistent else 1), result.log[-3000:]
    for noise in ("Task exception was never retrieved", "Traceback"):
        assert noise not in result.log, result.log[-3000:]
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    if persistent:
        assert result.stats["finish_reason"] == "finished"
        assert errors == [], errors
        assert len(set(hits)) >= total - CONCURRENCY  # (a request popped at the stop may go)
    else:
        assert result.stats["finish_reason"] == "frontier_lost"
        assert len(errors) == 1, errors
        assert "The shared frontier in Redis was lost" in errors[0]
        assert len(set(hits)) < total
    assert_consistent(read_index(pg_url))


def redis_warnings(log: str) -> list[str]:
    """The worker's WARNING lines about Redis (the frontier's, the peers' leases')."""
    return [line for line in log.splitlines() if " WARNING: " in line and "Redis" in line]


@pytest.mark.redis
def test_redis_down_past_the_limit_every_worker_closes_frontier_unreachable(
    tmp_path: Path, pg_url: str
) -> None:
    """Redis shut down for good: each worker waits out DISTRIBUTED_REDIS_OUTAGE (a call that
    did not reach Redis never ends the outage), then closes with finish_reason
    "frontier_unreachable", one ERROR line, exit status 1, and at most 2 Redis warnings."""
    keys = RedisKeys("faults-redis-gone")
    with (
        PrivateRedis(persistent=True) as redis_server,
        SiteServer(build_site(huge_page_bytes=50_000, clusters=30, seed=5), latency=0.1) as site,
        WorkerGroup() as group,
    ):
        settings = redis_settings(pg_url, redis_server.url(), keys, DISTRIBUTED_REDIS_OUTAGE=3)
        workers = start_redis_workers(
            group, tmp_path, site, redis_server.url(), keys, settings, names=("a", "b")
        )
        wait_for(lambda: len(fetched(site)) >= 10, timeout=120, what="the crawl under way")
        with frozen(workers):
            redis_server.stop()
        results = [worker.wait(timeout=180) for worker in workers]
    for result in results:
        assert result.stats["finish_reason"] == "frontier_unreachable", result.log[-3000:]
        assert result.returncode != 0
        assert "answers again" not in result.log
        assert len(redis_warnings(result.log)) <= 2, redis_warnings(result.log)
        errors = [line for line in result.log.splitlines() if " ERROR: " in line]
        assert len(errors) == 1, errors
        assert "unreachable for more than 3 s" in errors[0]
        for noise in ("Task exception was never retrieved", "Traceback"):
            assert noise not in result.log, result.log[-3000:]


@pytest.mark.redis
def test_redis_back_within_the_limit_the_crawl_finishes_one_warning_one_recovery(
    tmp_path: Path, pg_url: str
) -> None:
    """Redis shut down and started again (appendonly) after the worker met the outage: the
    crawl finishes, every page fetched, with one warning and one "answers again" line."""
    pages = build_site(huge_page_bytes=50_000, clusters=30, seed=6)
    keys = RedisKeys("faults-redis-back")
    with (
        PrivateRedis(persistent=True) as redis_server,
        SiteServer(pages, latency=0.1) as site,
        WorkerGroup() as group,
    ):
        settings = redis_settings(  # DEBUG: the leases' connection errors, below
            pg_url, redis_server.url(), keys, DISTRIBUTED_REDIS_OUTAGE=600, LOG_LEVEL="DEBUG"
        )
        (worker,) = start_redis_workers(group, tmp_path, site, redis_server.url(), keys, settings)
        wait_for(lambda: len(fetched(site)) >= 10, timeout=120, what="the crawl under way")
        with frozen([worker]):
            assert queued(redis_server.url(), keys) > 0, "nothing queued"
            redis_server.stop()
        wait_for(  # each poll interval asks the scheduler and the leases: 3 of them
            lambda: worker.log_path.read_text().count("Could not reach the workers' leases") >= 3,
            timeout=120,
            what="the worker polling Redis 3 times through the outage",
        )
        redis_server.start()
        result = worker.wait(timeout=180)
        total = len(pages) - 2  # but robots.txt and the disallowed page
        hits = fetched(site)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    warnings = redis_warnings(result.log)
    assert len(warnings) == 1, warnings
    assert "cannot be reached" in warnings[0]
    recoveries = [line for line in result.log.splitlines() if "answers again" in line]
    assert len(recoveries) == 1, recoveries
    assert [line for line in result.log.splitlines() if " ERROR: " in line] == []
    assert len(set(hits)) >= total - CONCURRENCY  # (a request popped at the stop may go)
