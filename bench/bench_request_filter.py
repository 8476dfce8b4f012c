"""CPU a request of the request side: the rule fingerprinter against Scrapy's default.

    .venv/bin/python -m bench.bench_request_filter [--requests 20000] [--rounds 3]

Each variant fingerprints the same kind of requests (half of them URL variants: tracking
parameters, a learned parameter, a learned path prefix) under 0, 100, 1k and 10k active
learned rules, spread over 1,000 hosts or all on the requests' one host, and, beside it,
Scrapy's default ``RequestFingerprinter``. A request's CPU is ``thread_time`` around one
``fingerprint`` call plus the request filter's ``request_scheduled`` handler (what the
scheduler pays per request); the requests are made beforehand (Scrapy makes them anyway).
Variants are interleaved (A B A B ...), each round on fresh requests (no cache carried
over); the table gives the median over rounds of each round's p50, p99 and mean (the CPU
the requests cost the crawl together, a request's share).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler

from bench._common import machine, write_results
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.request_filter import RequestFilter
from simhash_filter.crawl.requests.rule_book import RuleBook
from simhash_filter.urls.rules import PARAM, PREFIX, UrlRule
from simhash_filter.urls.ruleset import RuleSet

HOST = "news.example"
SPREAD_HOSTS = 1000


def make_rules(n: int, *, spread: bool) -> list[UrlRule]:
    """``n`` learned rules (half param, half prefix), on 1,000 hosts or all on :data:`HOST`;
    two of them are the ones the requests' variants hit."""
    rules = [UrlRule(HOST, PARAM, "/news/?replytocom"), UrlRule(HOST, PREFIX, "/print/ -> /")]
    for k in range(max(0, n - 2)):
        host = f"host{k % SPREAD_HOSTS}.example" if spread else HOST
        if k % 2:
            rules.append(UrlRule(host, PARAM, f"/section{k}/?p{k}"))
        else:
            rules.append(UrlRule(host, PREFIX, f"/mirror{k}/ -> /section{k}/"))
    return rules[:n] if n else []


def make_requests(count: int, seed: int) -> list[Request]:
    """Article URLs on :data:`HOST`, every other one a variant (tracking, learned param,
    learned prefix), with a sorted and an unsorted query."""
    requests = []
    for k in range(count):
        path = f"/news/2024/06/article-{seed}-{k}.html"
        match k % 6:
            case 1:
                url = f"https://{HOST}{path}?utm_source=rss&utm_medium=feed&id={k}"
            case 3:
                url = f"https://{HOST}{path}?replytocom={k}"
            case 5:
                url = f"https://{HOST}/print{path}"
            case _:
                url = f"https://{HOST}{path}?b={k}&a=1"
        requests.append(Request(url))
    return requests


def rule_variant(rules: list[UrlRule]) -> Callable[[Request], object]:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    book = RuleBook.for_crawler(crawler)
    book.set_rules(RuleSet(rules))
    fingerprinter = RuleFingerprinter(book, RequestFingerprinter())
    extension = RequestFilter.from_crawler(crawler)

    def one(request: Request) -> object:
        digest = fingerprinter.fingerprint(request)
        extension.request_scheduled(request)
        return digest

    return one


def default_variant() -> Callable[[Request], object]:
    return RequestFingerprinter().fingerprint


def measure(call: Callable[[Request], object], requests: list[Request]) -> list[float]:
    """Microseconds of thread CPU per request."""
    times = []
    clock = time.thread_time_ns
    for request in requests:
        start = clock()
        call(request)
        times.append((clock() - start) / 1000)
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _kept_urls(db: str) -> list[str]:
    from sqlalchemy import select

    from simhash_filter.store import FingerprintStore
    from simhash_filter.store.schema import pages_table

    with FingerprintStore.open_existing(db) as store, store.engine.connect() as conn:
        return [url for (url,) in conn.execute(select(pages_table.c.url))]


def site_crawls(workdir: Path) -> None:
    """Requests and pages kept on the tests' alias site (tests/support/alias_site.py), two
    crawls on one database (the second starts with the rules the first learned), the request
    filter off (as before it) and on."""
    from tests.support.alias_site import alias_site
    from tests.support.crawl import run_scrapy

    print(
        "| request filter | crawl | requests | skipped tracking / session / rule "
        "| pages kept | stories kept (of 12) | ?id= pages kept (of 6) |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    rows = []
    for on in (False, True):
        db = f"sqlite:///{workdir / f'site-{on}.db'}"
        with alias_site() as site:
            for run in (1, 2):
                before = len(site.requested)
                stats = run_scrapy(
                    ["crawl", "site", "-a", f"start_url={site.base_url}/"],
                    cwd=workdir,
                    settings={
                        "DOWNLOAD_DELAY": 0,
                        "ROBOTSTXT_OBEY": False,
                        "SIMHASH_FILTER_WORKERS": 0,
                        "CONCURRENT_REQUESTS": 2,
                        "SIMHASH_FILTER_DATABASE_URL": db,
                        "SIMHASH_FILTER_REQUEST_FILTER": on,
                    },
                ).stats
                urls = _kept_urls(db)
                row = {
                    "request_filter": on,
                    "crawl": run,
                    "requests": len(site.requested) - before,
                    "skipped": [
                        stats.get(f"simhash_filter/requests/skipped/{reason}", 0)
                        for reason in ("tracking", "session", "rule")
                    ],
                    "kept": len(urls),
                    "stories": sum(any(f"/{s}" in u for u in urls) for s in site.slugs()),
                    "items": sum(any(f"/item?id={k}" in u for u in urls) for k in range(6)),
                }
                rows.append(row)
                print(
                    f"| {'on' if on else 'off'} | {run} | {row['requests']} | "
                    f"{' / '.join(map(str, row['skipped']))} | {row['kept']} | "
                    f"{row['stories']} | {row['items']} |"
                )
    print(f"\nraw results: {write_results('request_filter_site', rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--site", type=Path, metavar="DIR", help="crawl the alias site in DIR instead"
    )
    args = parser.parse_args()
    if args.site is not None:
        args.site.mkdir(parents=True, exist_ok=True)
        site_crawls(args.site)
        return
    variants: dict[str, Callable[[Request], object]] = {"scrapy default": default_variant()}
    for n in (0, 100, 1_000, 10_000):
        variants[f"rules {n} spread"] = rule_variant(make_rules(n, spread=True))
        if n:
            variants[f"rules {n} one host"] = rule_variant(make_rules(n, spread=False))
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
    for round_ in range(args.rounds):
        for name, call in variants.items():  # interleaved: A B C ... A B C ...
            requests = make_requests(args.requests, seed=round_ * 100 + len(runs[name]))
            times = measure(call, requests)
            runs[name].append(
                (percentile(times, 0.5), percentile(times, 0.99), statistics.fmean(times))
            )
    default_p50 = statistics.median(v[0] for v in runs["scrapy default"])
    print(f"{machine()}\n")
    print("| variant | p50 µs CPU | p99 µs CPU | mean µs CPU | p50 / Scrapy default |")
    print("| --- | ---: | ---: | ---: | ---: |")
    table = {}
    for name, values in runs.items():
        p50 = statistics.median(v[0] for v in values)
        p99 = statistics.median(v[1] for v in values)
        mean = statistics.median(v[2] for v in values)
        table[name] = {"p50_us": p50, "p99_us": p99, "mean_us": mean, "rounds": values}
        print(f"| {name} | {p50:.1f} | {p99:.1f} | {mean:.1f} | {p50 / default_p50:.2f}× |")
    print(f"\nraw results: {write_results('request_filter', table)}")


if __name__ == "__main__":
    main()
