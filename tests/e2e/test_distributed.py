"""A real distributed crawl: 3 ``scrapy crawl site`` workers, one Redis frontier, one
PostgreSQL index, against the loopback site scaled up to ~280 pages with ~110 near-duplicate
clusters, compared with a single-process crawl of the same site.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import NEVER_FETCHED, SiteServer, run_scrapy
from support.distributed import (
    assert_consistent,
    read_index,
    redis_keys_fixture,
    representatives,
    site_clusters,
    wait_for,
)
from support.workers import WorkerGroup

from crawler.distributed import PeerLeases, RedisKeys, WaitForPeers
from crawler.testsite import build_site

CLUSTERS = 100
WORKERS = 3


@pytest.fixture
def redis_keys(redis_url: str) -> Iterator[RedisKeys]:
    yield from redis_keys_fixture(redis_url)


@pytest.fixture(scope="module")
def big_site() -> Iterator[SiteServer]:
    with SiteServer(build_site(huge_page_bytes=300_000, clusters=CLUSTERS)) as server:
        yield server


def worker_settings(redis_url: str, keys: RedisKeys, db_url: str) -> dict[str, object]:
    return {
        "REDIS_URL": redis_url,
        **keys.settings(),
        "SIMHASH_FILTER_DATABASE_URL": db_url,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": 8,
        "DISTRIBUTED_IDLE_TIMEOUT": 5,  # after the last peer stops working
        "LOG_LEVEL": "INFO",
        **SAME_FETCHES,
    }


SAME_FETCHES = {
    "SIMHASH_FILTER_FORM_FIRST": False,
    "SIMHASH_FILTER_TEMPLATE_MIN_PAGES": 0,
    "SIMHASH_FILTER_VIEWS_WAIT": False,
}
"""The reference crawl and the workers fetch the same URLs and sign them alike: no
download-time decisions, which depend on when each process learned its rules, no host
template left out of the signed text, which depends on when each learned the template, and no
view waiting for its page (a URL no page links: the workers' shared frontier holds nothing)."""


def test_wait_for_peers_keeps_an_idle_worker_open_until_the_timeout() -> None:
    from scrapy.exceptions import DontCloseSpider

    extension = WaitForPeers(timeout=3600)
    with pytest.raises(DontCloseSpider):
        extension.spider_idle()
    extension.busy()
    with pytest.raises(DontCloseSpider):
        extension.spider_idle()
    closing = WaitForPeers(timeout=1e-9)
    with pytest.raises(DontCloseSpider):  # the first idle call starts the clock
        closing.spider_idle()
    closing.spider_idle()  # idle for longer than the timeout: the worker may close
    forever = WaitForPeers(timeout=0)
    for _ in range(3):
        with pytest.raises(DontCloseSpider):
            forever.spider_idle()


class FakePeers:
    """Stands in for :class:`PeerLeases`: whether another worker is working."""

    def __init__(self) -> None:
        self.others = True
        self.rested = 0

    def resting(self) -> None:
        self.rested += 1

    def others_working(self) -> bool:
        return self.others


def test_wait_for_peers_keeps_an_idle_worker_open_while_a_peer_works() -> None:
    from scrapy.exceptions import DontCloseSpider

    peers = FakePeers()
    extension = WaitForPeers(timeout=1e-9, peers=peers)  # type: ignore[arg-type]
    for _ in range(3):  # however long it has been idle
        with pytest.raises(DontCloseSpider):
            extension.spider_idle()
    assert peers.rested == 3  # an idle worker gives its own lease up
    peers.others = False  # the last peer stopped, longer ago than the timeout
    extension.spider_idle()  # no peer working: it may close


@pytest.mark.redis
def test_peer_leases_in_redis(redis_url: str, redis_keys: RedisKeys) -> None:
    import redis

    server = redis.Redis.from_url(redis_url)
    me, peer = (PeerLeases(server, redis_keys.workers) for _ in range(2))
    assert not me.others_working()
    peer.working()
    assert me.others_working()
    assert not peer.others_working()  # its own lease does not count
    peer.resting()
    assert not me.others_working()
    dead = PeerLeases(server, redis_keys.workers, lease=-1.0)  # a lease that has run out
    dead.working()
    assert not me.others_working()
    assert server.zcard(redis_keys.workers) == 0  # and it was swept


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_three_workers_share_one_frontier_and_one_index(
    big_site: SiteServer, tmp_path: Path, pg_url: str, redis_url: str, redis_keys: RedisKeys
) -> None:
    clusters = site_clusters(CLUSTERS)
    start = ["crawl", "site", "-a", f"start_url={big_site.base_url}/"]

    # the reference: one process, its own SQLite index
    big_site.hits.clear()
    reference_db = f"sqlite:///{tmp_path / 'reference.db'}"
    (tmp_path / "reference").mkdir()
    single = run_scrapy(
        start,
        cwd=tmp_path / "reference",
        settings={"SIMHASH_FILTER_DATABASE_URL": reference_db, "DOWNLOAD_DELAY": 0, **SAME_FETCHES},
    )
    assert single.returncode == 0, single.log[-3000:]
    reference_hits = Counter(path for path, _agent in big_site.hits)
    assert len(reference_hits) > 250
    assert max(reference_hits.values()) == 1

    # the distributed crawl: 3 workers, one Redis queue, one PostgreSQL index. The site
    # answers nothing until every worker is up; then it answers the first worker's robots.txt
    # and the start page, and holds again until a second worker asks for something (it took
    # a request from the shared queue): the first worker cannot crawl the whole site alone,
    # however slowly its peers poll the queue. The first to take the start URL holds its peers
    # open (its lease in Redis) while the site keeps it waiting.
    big_site.hits.clear()
    with WorkerGroup() as group:
        big_site.hold()
        try:
            workers = [
                group.start(
                    str(n),
                    start,
                    workdir=tmp_path / f"worker-{n}",
                    settings=worker_settings(redis_url, redis_keys, pg_url),
                    settings_module="crawler.distributed_settings",
                )
                for n in range(WORKERS)
            ]
            wait_for(
                lambda: (
                    all(
                        w.log_path.exists() and "Spider opened" in w.log_path.read_text()
                        for w in workers
                    )
                    and bool(big_site.hits)
                ),
                timeout=180,
                what="every worker's spider open and the first request",
            )
            assert [p for p, _a in big_site.hits] == ["/robots.txt"], "held: robots.txt only"
            first_agent = big_site.hits[0][1]
            big_site.hold_after(1)  # robots.txt, held now, and the start page
            wait_for(
                lambda: any(agent != first_agent for _p, agent in list(big_site.hits)),
                timeout=180,
                what="a second worker's first request",
            )
        finally:
            big_site.release()
        results = [worker.wait(timeout=240) for worker in workers]
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.stats["finish_reason"] == "finished"
        assert result.stat("log_count/ERROR") == 0, result.log[-3000:]

    # every page fetched once, by some worker; robots.txt once per worker
    hits = Counter(path for path, _agent in big_site.hits)
    robots = hits.pop("/robots.txt")
    reference_hits.pop("/robots.txt")
    assert robots <= WORKERS
    assert hits == reference_hits
    assert not NEVER_FETCHED & set(hits)
    by_worker = Counter(agent for path, agent in big_site.hits if path != "/robots.txt")
    assert sum(by_worker.values()) == len(hits)
    assert len(by_worker) >= 2, f"one worker did all the work: {by_worker}"

    # the index: consistent, one page per near-duplicate cluster, as in the single crawl
    index = read_index(pg_url)
    reference = read_index(reference_db)
    assert_consistent(index)
    assert_consistent(reference)
    kept = representatives(index, clusters)
    assert set(kept) == set(representatives(reference, clusters)) == set(clusters.values())
    assert len(index.dropped) == index.dropped_rows == len(reference.dropped)
    for path, drop in index.dropped.items():
        assert clusters[drop.duplicate_of] == clusters[path]
    # same pages, same fingerprints as in the single crawl (kept or dropped)
    fingerprints = {**index.kept, **{p: d.fingerprint for p, d in index.dropped.items()}}
    reference_fps = {**reference.kept, **{p: d.fingerprint for p, d in reference.dropped.items()}}
    assert fingerprints == reference_fps

    # the workers' stats add up to the single crawl's
    def total(key: str) -> int:
        return sum(int(result.stat(key)) for result in results)

    # a copy kept first and superseded by its canonical counts as kept, then superseded: how
    # many depends on which copy each process met first, the pages kept in the end do not
    def net_kept(kept: int, superseded: int) -> int:
        return kept - superseded

    workers_kept = net_kept(total("simhash_filter/kept"), total("simhash_filter/superseded"))
    single_kept = net_kept(
        int(single.stat("simhash_filter/kept")), int(single.stat("simhash_filter/superseded"))
    )
    assert workers_kept == single_kept == len(index.kept)
    # every other page was dropped on arrival or superseded later: together the same
    assert total("simhash_filter/dropped") + total("simhash_filter/superseded") == int(
        single.stat("simhash_filter/dropped")
    ) + int(single.stat("simhash_filter/superseded"))
    for outcome in ("no_text",):
        assert total(f"simhash_filter/{outcome}") == single.stat(f"simhash_filter/{outcome}")
    assert total("simhash_filter/errors") == 0
    items = [item for result in results for item in result.items]
    assert len(items) == len({item["url"] for item in items})
    assert len(items) - total("simhash_filter/superseded") == len(single.items) - int(
        single.stat("simhash_filter/superseded")
    )


@pytest.mark.redis
def test_frontier_outage_is_ended_only_by_a_call_that_reaches_redis(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """scrapy-redis's ``has_pending_requests`` asks ``len(self)``, guarded itself: while
    Redis is down it must not count as Redis answering (which re-armed the warning and
    started the outage clock over, so a worker never reached DISTRIBUTED_REDIS_OUTAGE)."""
    import logging

    from scrapy import Request, Spider
    from scrapy.utils.test import get_crawler
    from support.redisserver import PrivateRedis

    from crawler.frontier import FrontierScheduler

    class Probe(Spider):
        name = "probe"

    with PrivateRedis(persistent=False) as server:
        settings = {
            "REDIS_URL": server.url(),
            "SCHEDULER_PERSIST": True,
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        }
        crawler = get_crawler(Probe, settings)
        crawler.spider = Probe.from_crawler(crawler)
        scheduler = FrontierScheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        server.stop()
        with caplog.at_level(logging.INFO, logger="crawler.frontier"):
            assert scheduler.next_request() is None
            down_since = scheduler._down_since
            assert down_since is not None
            for n in range(1, 4):
                assert scheduler.has_pending_requests()  # not known: not "finished"
                assert scheduler.enqueue_request(Request(f"https://example.com/{n}"))  # held
                assert len(scheduler) == n
                assert scheduler.next_request() is None
            assert scheduler._down_since == down_since  # the clock did not start over
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if "answers again" in m], messages
    assert len([m for m in messages if "cannot be reached" in m]) == 1, messages


def test_crawl_command_exits_1_when_the_frontier_stopped_the_worker() -> None:
    from crawler.commands.crawl import FAILED_REASONS, Command
    from crawler.frontier import FRONTIER_LOST, FRONTIER_UNREACHABLE

    assert {FRONTIER_LOST, FRONTIER_UNREACHABLE} == FAILED_REASONS
    command = Command()
    command._spider_closed(reason="finished")
    assert command.exitcode == 0
    command._spider_closed(reason=FRONTIER_UNREACHABLE)
    assert command.exitcode == 1
