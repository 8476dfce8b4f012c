"""Faults in real crawls, measured: a table lock, a stuck peer, a PostgreSQL restart and
outage, a Redis restart without persistence (issue 32's scenarios); Redis down past
``DISTRIBUTED_REDIS_OUTAGE`` and a crawler stopped inside the keep policy's swap (issue 41's).

    .venv/bin/python -m bench.bench_faults                          # every scenario, head
    .venv/bin/python -m bench.bench_faults --base /path/to/old/checkout --rounds 2

Each scenario is real ``scrapy crawl`` processes of this project on the loopback test site
(``build_site(clusters=200)``, ~540 pages), the fault made for real: another session's
``LOCK TABLE pages IN ACCESS EXCLUSIVE MODE``, a crawler SIGSTOPped while its session holds
advisory locks (on the "pg-pipeline" path: a role that may not create the server function),
a throw-away PostgreSQL server stopped and started (``tests/support/pgserver.py``), a
throw-away ``redis-server --save ""`` restarted. With ``--base`` every scenario runs on the
other checkout too, interleaved (head, base, head, base ...), each on a fresh index.

Per run: the longest gap between two items leaving the pipeline (scraped or dropped, from
the crawl's DEBUG log with millisecond times) while the fault lasts, the pages that passed
unchecked (``simhash_filter/errors``), those checked later (``unchecked/caught_up``), the
unchecked pages not in the index at the end, kept pairs the rule calls copies, and the
finish reason. Raw results go to ``bench/results/``; the tables to bench/README.md by hand.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench._common import PG_ADMIN_URL as PG_ADMIN
from bench._common import REDIS_URL, ROOT, machine, write_results
from crawler.distributed import RedisKeys, clear, seed
from crawler.services import admin_statement, create_pg_database, drop_pg_database
from crawler.testsite import SiteServer, build_site
from crawler.testsite.aliasing import AliasingSite, generated_corpus

sys.path.insert(0, str(ROOT / "tests"))  # the index checks and throw-away servers the tests use
from support.distributed import is_copy as rule_calls_copies
from support.distributed import path_of, read_index
from support.pgserver import PrivateServer
from support.redisserver import PrivateRedis

CLUSTERS = 200
LATENCY = 0.2
"""Seconds the site takes to answer: with 2 requests at a time, ~10 pages/s, so the crawl
outlasts the longest fault (the 40 s lock starts at the 100th item of ~540)."""
LOG_FORMAT = "%(created).3f [%(name)s] %(levelname)s: %(message)s"
EXIT = re.compile(
    r"^(\d+\.\d+) \[scrapy\.core\.scraper\] DEBUG: "
    r"(?:Scraped from <\d+ (\S+)>|Dropped: .*: (\S+)$)"
)


@dataclass
class Crawler:
    """One ``scrapy crawl`` process of a checkout, in a folder of its own."""

    name: str
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> str:
        path = self.folder / "scrapy.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def exits(self, paths: set[str] | None = None) -> list[float]:
        """The times items left the pipeline (scraped or dropped); with ``paths``, only
        the items of those pages (the pages in the index at the end: a page without text
        never waits for the store, so its item says nothing of a stall)."""
        return [
            float(m.group(1))
            for line in self.log.splitlines()
            if (m := EXIT.match(line))
            and (paths is None or path_of(m.group(2) or m.group(3)) in paths)
        ]

    def stats(self) -> dict[str, Any]:
        path = self.folder / "stats.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def items(self) -> list[dict[str, Any]]:
        path = self.folder / "items.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def signal(self, sig: int) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)

    def wait(self, timeout: float = 600) -> int:
        return self.process.wait(timeout=timeout)


def start(checkout: Path, folder: Path, args: list[str], settings: dict[str, object]) -> Crawler:
    """``scrapy <args>`` of ``checkout`` (first on PYTHONPATH: its ``simhash_filter`` and
    ``crawler``), DEBUG log with millisecond times, stats and items in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "scrapy", *args, "-o", f"{folder / 'items.jsonl'}:jsonlines"]
    settings = {
        "STATS_FILE": folder / "stats.json",
        "LOG_FILE": folder / "scrapy.log",
        "LOG_LEVEL": "DEBUG",
        "LOG_FORMAT": LOG_FORMAT,
        "USER_AGENT": f"worker-{folder.name}",
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": 2,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        **settings,
    }
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(checkout), "SCRAPY_SETTINGS_MODULE": "crawler.settings"}
    with (folder / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr
        )
    return Crawler(folder.name, folder, process)


def wait_until(condition: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the crawl did not get there")
        time.sleep(0.05)


def longest_gap(exits: list[float], start: float, end: float) -> float:
    """The longest time without an item leaving the pipeline within [start, end]."""
    inside = sorted(t for t in exits if start <= t <= end)
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


@dataclass
class Result:
    scenario: str
    variant: str
    fault_seconds: float = 0.0
    fault_start: float = 0.0
    fault_end: float = 0.0
    longest_gap: float | None = None
    longest_gap_checked: float | None = None
    exits_during_fault: int = 0
    unchecked: int = 0
    caught_up: int = 0
    emitted_duplicates: int = 0
    unchecked_not_in_index: int = 0
    kept_copy_pairs: int = 0
    finish_reasons: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    error_lines: int = 0
    tracebacks: int = 0
    pages_fetched: int = 0  # distinct paths (a clean crawl of the site fetches 538)
    redis_warnings: list[int] = field(default_factory=list)  # a worker's Redis WARNING lines
    recovery_lines: list[int] = field(default_factory=list)  # its "answers again" lines


def measure(result: Result, crawlers: list[Crawler], db_url: str | None) -> Result:
    """Fill ``result`` from the crawlers' stats and logs and the index."""
    for crawler in crawlers:
        stats, log = crawler.stats(), crawler.log
        result.unchecked += int(stats.get("simhash_filter/errors", 0))
        result.caught_up += int(stats.get("simhash_filter/unchecked/caught_up", 0))
        result.emitted_duplicates += int(
            stats.get("simhash_filter/unchecked/emitted_duplicates", 0)
        )
        result.finish_reasons.append(str(stats.get("finish_reason")))
        result.exit_codes.append(crawler.process.returncode)
        result.error_lines += sum(" ERROR: " in line for line in log.splitlines())
        result.tracebacks += log.count("Task exception was never retrieved")
    if db_url is not None:
        index = read_index(db_url)
        kept = sorted(index.kept)
        result.kept_copy_pairs = sum(
            rule_calls_copies(index, a, b) for i, a in enumerate(kept) for b in kept[i + 1 :]
        )
        no_text = sum(int(c.stats().get("simhash_filter/no_text", 0)) for c in crawlers)
        items = {path_of(item["url"]) for c in crawlers for item in c.items()}
        missing = len(items - set(index.kept) - set(index.dropped))
        result.unchecked_not_in_index = max(0, missing - no_text)
        if result.fault_end and result.longest_gap is not None:
            stored = set(index.kept) | set(index.dropped)
            watched = crawlers[-1]  # the one crawler, or the healthy peer of a stuck one
            exits = watched.exits(stored)
            if exits:
                end = min(result.fault_end, max(watched.exits()))
                result.longest_gap_checked = longest_gap(exits, result.fault_start, end)
    return result


def crawl_site(
    checkout: Path, folder: Path, site: SiteServer, db_url: str, **settings: object
) -> Crawler:
    return start(
        checkout,
        folder,
        ["crawl", "site", "-a", f"start_url={site.base_url}/"],
        {"SIMHASH_FILTER_DATABASE_URL": db_url, **settings},
    )


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@contextmanager
def site_of(seed_: int = 0) -> Iterator[tuple[SiteServer, int]]:
    pages = build_site(huge_page_bytes=50_000, clusters=CLUSTERS, seed=seed_)
    with SiteServer(pages, latency=LATENCY) as site:
        yield site, len(pages) - 2  # but robots.txt and the disallowed page


def fetched(site: SiteServer) -> int:
    return sum(1 for path, _agent in list(site.hits) if path != "/robots.txt")


# -- the scenarios: each one run of one checkout ------------------------------------------


def table_lock(checkout: Path, folder: Path, variant: str, hold: float = 40.0) -> Result:
    """Another session holds ``LOCK TABLE pages IN ACCESS EXCLUSIVE MODE`` for ``hold`` s."""
    db = create_pg_database("sf_bench")
    try:
        with site_of() as (site, _total):
            crawler = crawl_site(checkout, folder / "crawl", site, db)
            wait_until(lambda: len(crawler.exits()) >= 100)
            with psycopg.connect(libpq(db), application_name="bench-table-lock") as locker:
                locker.execute("LOCK TABLE pages IN ACCESS EXCLUSIVE MODE")
                began = time.time()
                time.sleep(hold)
                ended = time.time()
                locker.rollback()
            crawler.wait()
        exits = crawler.exits()
        result = Result(f"table lock {hold:.0f} s", variant, hold, began, ended)
        result.longest_gap = longest_gap(exits, began, min(ended, max(exits)))
        result.exits_during_fault = sum(began <= t <= ended for t in exits)
        return measure(result, [crawler], db)
    finally:
        drop_pg_database(db)


def pg_restart(checkout: Path, folder: Path, variant: str, down: float = 0.0) -> Result:
    """A throw-away PostgreSQL server stopped (fast: every session ends) and started again
    after ``down`` seconds (0: at once, a restart of under a second)."""
    with PrivateServer() as server:
        db = create_pg_database("sf_bench", server.url())
        with site_of() as (site, _total):
            crawler = crawl_site(checkout, folder / "crawl", site, db)
            wait_until(lambda: len(crawler.exits()) >= 100)
            began = time.time()
            server.stop()
            time.sleep(down)
            server.start()
            ended = time.time()
            crawler.wait()
        exits = crawler.exits()
        label = f"PostgreSQL down {down:.0f} s" if down else "PostgreSQL restart"
        result = Result(label, variant, ended - began, began, ended + 5)
        result.longest_gap = longest_gap(exits, began, min(ended + 5, max(exits)))
        result.exits_during_fault = sum(began <= t <= ended for t in exits)
        return measure(result, [crawler], db)


def outage(checkout: Path, folder: Path, variant: str) -> Result:
    return pg_restart(checkout, folder, variant, down=20.0)


def redis_workers(
    checkout: Path, folder: Path, redis_url: str, site: SiteServer, db: str, n: int, **more: object
) -> tuple[RedisKeys, list[Crawler]]:
    """``n`` ``site_redis`` workers on ``redis_url`` under fresh keys, the site seeded."""
    keys = RedisKeys(f"bench-faults-{uuid.uuid4().hex[:8]}")
    seed(redis_url, keys.start_urls, [site.base_url + "/"])
    settings = {
        "SIMHASH_FILTER_DATABASE_URL": db,
        "REDIS_URL": redis_url,
        "REDIS_KEY_PREFIX": keys.prefix,
        "DISTRIBUTED_IDLE_TIMEOUT": 5,
        **more,
    }
    crawlers = [
        start(checkout, folder / f"w{i}", ["crawl", "site_redis"], settings) for i in range(n)
    ]
    return keys, crawlers


def wait_or_kill(crawlers: list[Crawler], deadline: float) -> None:
    """Wait for every crawler until ``deadline`` (``time.time()``); SIGKILL the rest."""
    for crawler in crawlers:
        try:
            crawler.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            crawler.signal(signal.SIGKILL)
            crawler.wait()


def redis_restart(checkout: Path, folder: Path, variant: str, workers: int = 3) -> Result:
    """Three ``site_redis`` workers on a throw-away Redis without persistence, restarted
    when a quarter of the site is fetched."""
    db = create_pg_database("sf_bench")
    try:
        with PrivateRedis(persistent=False) as redis_server, site_of() as (site, total):
            _keys, crawlers = redis_workers(checkout, folder, redis_server.url(), site, db, workers)
            wait_until(lambda: fetched(site) >= total // 4)
            began = time.time()
            redis_server.restart()
            result = Result("Redis restart, no persistence", variant, time.time() - began)
            wait_or_kill(crawlers, time.time() + 300)
            result.pages_fetched = len({p for p, _a in site.hits if p != "/robots.txt"})
        return measure(result, crawlers, db)
    finally:
        drop_pg_database(db)


HOLDS_ADVISORY = (
    "SELECT count(*) FROM pg_stat_activity a WHERE a.application_name = %s AND EXISTS "
    "(SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)"
)


def no_create_role(db: str) -> tuple[str, str]:
    """A login role that may use the index but not create the server function (so the
    crawl takes the "pg-pipeline" path, two round trips), and its URL; the tables are
    made first, as the server's owner."""
    from simhash_filter.crawl.config import Config

    config = Config(database_url=db)
    config.open_store(config.make_fingerprinter().spec).close()
    role = f"sf_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(libpq(db), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
    return role, db.replace("postgresql+psycopg://postgres@", f"postgresql+psycopg://{role}@")


def stuck_peer(checkout: Path, folder: Path, variant: str, hold: float = 60.0) -> Result:
    """Two ``site_redis`` workers on the "pg-pipeline" path; one is SIGSTOPped while its
    transaction holds advisory locks, for ``hold`` s: what does the other one do?"""
    db = create_pg_database("sf_bench")
    keys = RedisKeys(f"bench-faults-{uuid.uuid4().hex[:8]}")
    role = ""
    try:
        role, role_url = no_create_role(db)
        with site_of() as (site, _total):
            seed(REDIS_URL, keys.start_urls, [site.base_url + "/"])
            crawlers = []
            for n in range(2):
                settings = {
                    "SIMHASH_FILTER_DATABASE_URL": f"{role_url}?application_name=bench-w{n}",
                    "REDIS_URL": REDIS_URL,
                    "REDIS_KEY_PREFIX": keys.prefix,
                    "DISTRIBUTED_IDLE_TIMEOUT": 5,
                }
                crawlers.append(
                    start(checkout, folder / f"w{n}", ["crawl", "site_redis"], settings)
                )
            stuck, healthy = crawlers
            wait_until(lambda: len(stuck.exits()) + len(healthy.exits()) >= 100)
            if not _freeze_when(stuck, db, HOLDS_ADVISORY, "bench-w0"):
                raise RuntimeError("the worker was never caught inside a transaction")
            began = time.time()
            time.sleep(hold)
            ended = time.time()
            stuck.signal(signal.SIGCONT)
            for crawler in crawlers:
                crawler.wait()
        exits = healthy.exits()
        result = Result(f"stuck peer {hold:.0f} s (pg-pipeline)", variant, hold, began, ended)
        result.longest_gap = longest_gap(exits, began, min(ended, max(exits)))
        result.exits_during_fault = sum(began <= t <= ended for t in exits)
        return measure(result, crawlers, db)
    finally:
        clear(REDIS_URL, keys)
        drop_pg_database(db)
        if role:
            admin_statement(PG_ADMIN, f"DROP ROLE IF EXISTS {role}")


def redis_gone(checkout: Path, folder: Path, variant: str, workers: int = 3) -> Result:
    """Three ``site_redis`` workers, ``DISTRIBUTED_REDIS_OUTAGE = 10``; Redis shut down for
    good when a quarter of the site is fetched: does every worker close, and with how many
    warning lines? (A worker still running 60 s after the shutdown is killed.)"""
    db = create_pg_database("sf_bench")
    try:
        with PrivateRedis(persistent=True) as redis_server, site_of() as (site, total):
            _keys, crawlers = redis_workers(
                checkout, folder, redis_server.url(), site, db, workers, DISTRIBUTED_REDIS_OUTAGE=10
            )
            wait_until(lambda: fetched(site) >= total // 4)
            began = time.time()
            redis_server.stop()
            result = Result("Redis down past the limit (10 s)", variant, 0.0, began)
            wait_or_kill(crawlers, began + 60)
            result.fault_seconds = time.time() - began
            result.pages_fetched = len({p for p, _a in site.hits if p != "/robots.txt"})
        for crawler in crawlers:
            lines = crawler.log.splitlines()
            result.redis_warnings.append(
                sum(" WARNING: " in line and "Redis" in line for line in lines)
            )
            result.recovery_lines.append(sum("answers again" in line for line in lines))
        return measure(result, crawlers, db)
    finally:
        drop_pg_database(db)


IN_THE_SWAP = (
    "SELECT count(*) FROM pg_stat_activity a WHERE a.application_name = %s "
    "AND a.state = 'idle in transaction' AND EXISTS (SELECT 1 FROM pg_locks l "
    "WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted "
    "AND l.mode = 'ExclusiveLock')"
)
"""A session between two round trips of a transaction holding exclusive advisory locks: on
the default pg-function path only the keep policy's swap does that (store/supersede.py; the
URL rules' writes hold the database-wide lock shared, as every single write does)."""


def stopped_in_the_swap(checkout: Path, folder: Path, variant: str, hold: float = 30.0) -> Result:
    """Two ``site_redis`` workers on the default (pg-function) path over the aliasing site
    (canonical hints), the keep policy ``canonical``, variants before their canonical
    (``FORM_FIRST`` off); one is SIGSTOPped between two round trips of its swap (advisory
    locks held), for ``hold`` s: what does the other one do?"""
    db = create_pg_database("sf_bench")
    keys = RedisKeys(f"bench-faults-{uuid.uuid4().hex[:8]}")
    site = AliasingSite(generated_corpus(120)).serve()  # canonical hints: swaps to catch
    site.latency = 0.05
    try:
        if True:  # (the site is served already; stopped below)
            seed(REDIS_URL, keys.start_urls, [site.base_url + "/"])
            crawlers = [
                start(
                    checkout,
                    folder / f"w{n}",
                    ["crawl", "site_redis"],
                    {
                        "SIMHASH_FILTER_DATABASE_URL": f"{db}?application_name=bench-w{n}",
                        "SIMHASH_FILTER_KEEP": "canonical",
                        "SIMHASH_FILTER_FORM_FIRST": False,  # variants first: more swaps
                        "REDIS_URL": REDIS_URL,
                        "REDIS_KEY_PREFIX": keys.prefix,
                        "DISTRIBUTED_IDLE_TIMEOUT": 5,
                    },
                )
                for n in range(2)
            ]
            stuck, healthy = crawlers
            wait_until(lambda: len(stuck.exits()) + len(healthy.exits()) >= 30)
            caught = _freeze_when(stuck, db, IN_THE_SWAP, "bench-w0")
            began = time.time()
            if caught:
                time.sleep(hold)
            ended = time.time()
            stuck.signal(signal.SIGCONT)
            for crawler in crawlers:
                crawler.wait()
        exits = healthy.exits()
        label = f"stopped in the swap {hold:.0f} s (pg-function)"
        result = Result(label if caught else label + ", never caught", variant, hold, began, ended)
        result.longest_gap = longest_gap(exits, began, min(ended, max(exits)))
        result.exits_during_fault = sum(began <= t <= ended for t in exits)
        return measure(result, crawlers, db)
    finally:
        site.stop()
        clear(REDIS_URL, keys)
        drop_pg_database(db)


def _freeze_when(crawler: Crawler, db: str, query: str, application: str) -> bool:
    """SIGSTOP ``crawler`` at a moment ``query`` counts its session (e.g. ``HOLDS_ADVISORY``:
    it holds advisory locks inside a transaction; tried for two minutes at most); False when
    it never did."""
    deadline = time.monotonic() + 120
    with psycopg.connect(libpq(db), autocommit=True) as conn:
        while time.monotonic() < deadline and crawler.process.poll() is None:
            if conn.execute(query, (application,)).fetchone()[0]:  # type: ignore[index]
                crawler.signal(signal.SIGSTOP)
                if conn.execute(query, (application,)).fetchone()[0]:  # type: ignore[index]
                    return True
                crawler.signal(signal.SIGCONT)
            time.sleep(0.001)
    return False


SCENARIOS: dict[str, Callable[[Path, Path, str], Result]] = {
    "table-lock": table_lock,
    "stuck-peer": stuck_peer,
    "restart": pg_restart,
    "outage": outage,
    "redis": redis_restart,
    "redis-gone": redis_gone,
    "swap-stop": stopped_in_the_swap,
}


def table(results: list[Result]) -> str:
    """Medians per scenario and variant, as markdown."""
    lines = [
        "| scenario | variant | runs | longest gap in the fault (s): all items / checked pages "
        "| items out in the fault "
        "| unchecked | checked later | unchecked not in the index | kept copy pairs "
        "| finish reasons | exit codes | ERROR lines | tracebacks | distinct pages fetched "
        "| Redis warnings / recoveries a worker (max) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: "
        "| ---: | --- |",
    ]
    groups: dict[tuple[str, str], list[Result]] = {}
    for result in results:
        groups.setdefault((result.scenario, result.variant), []).append(result)
    for (scenario, variant), runs in groups.items():

        def med(name: str, runs: list[Result] = runs) -> str:
            values = [getattr(r, name) for r in runs if getattr(r, name) is not None]
            return f"{statistics.median(values):.3g}" if values else "-"

        reasons = sorted({reason for r in runs for reason in r.finish_reasons})
        codes = sorted({code for r in runs for code in r.exit_codes})
        pages = med("pages_fetched") if runs[0].pages_fetched else "-"
        redis = (
            f"{max(w for r in runs for w in r.redis_warnings)} / "
            f"{max(n for r in runs for n in r.recovery_lines)}"
            if runs[0].redis_warnings
            else "-"
        )
        lines.append(
            f"| {scenario} | {variant} | {len(runs)} "
            f"| {med('longest_gap')} / {med('longest_gap_checked')} "
            f"| {med('exits_during_fault')} | {med('unchecked')} | {med('caught_up')} "
            f"| {med('unchecked_not_in_index')} | {med('kept_copy_pairs')} | {', '.join(reasons)} "
            f"| {', '.join(map(str, codes))} | {med('error_lines')} | {med('tracebacks')} "
            f"| {pages} | {redis} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--base", type=Path, help="another checkout to run each scenario on too")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp") / f"bench-faults-{os.getpid()}")
    args = parser.parse_args(argv)
    variants = {"head": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    print(f"# {machine()}", flush=True)
    results: list[Result] = []
    for round_ in range(args.rounds):
        for name in args.scenario or list(SCENARIOS):
            for variant, checkout in variants.items():  # interleaved: head base head base
                folder = args.out / f"{name}-{variant}-{round_}"
                result = SCENARIOS[name](checkout, folder, variant)
                results.append(result)
                print(json.dumps(asdict(result)), flush=True)
    print(table(results))
    print(f"raw results: {write_results('bench_faults', [asdict(r) for r in results])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
