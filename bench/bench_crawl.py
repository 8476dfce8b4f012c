"""Crawl overhead of the near-duplicate filter, on a loopback site built from real pages.

    .venv/bin/python -m bench.bench_crawl --part html --repeats 2
    (parts: html, text, latency, stages; each one run of a few minutes)

The site: every page of ``pages_en/html/*.html.gz`` and ``pages_zh/original/*.html``, each
also in three near-duplicate variants (a syndication banner and another title, a reader
comment block, the last paragraph removed) under other URLs, plus hub pages linking them:
at least 1,000 pages. Each configuration is a real ``scrapy runspider`` of the spider below
in a subprocess, the variants interleaved (in turn forward and backward), ``--repeats``
times; pages/s is responses over the crawl's elapsed time, and the table shows the median
and the ratios to the crawl without the filter and to the thread path
(``SIMHASH_FILTER_WORKERS = 0``):

- ``text``: the spider puts the page text in the item (``//body//p//text()``, as a spider
  with selectors for the article would), the filter fingerprints it;
- ``html``: the spider puts the raw page bytes in the item; the filter extracts the main
  text with trafilatura first;
- ``site``: the spider does a page's work as this project's generic ``site`` spider does
  (its item, ``crawler.items.page_item``; Scrapy's ``LinkExtractor`` over every page) and
  the items go to a JSON lines feed, as ``scrapy crawl site -O pages.jsonl`` writes them:
  the crawl a user runs, whose own CPU a page the filter's is weighed against.

``memory``: one raw-HTML crawl of ~10,000 generated pages (``--clusters``) with the default
workers, the RSS of the crawl process and of its workers sampled every second.
Parts: ``html`` (loopback, CPU-bound: off, threads, 1 and 2 page workers), ``text`` (off,
threads, the default), ``cost`` (raw HTML: off, the default, ``--base``'s default),
``sitecost`` (the same with ``site`` items), ``storetext`` (raw HTML, the default with and without
``SIMHASH_FILTER_STORE_TEXT``), ``latency`` (a server answering in ``--latency`` s: off and the
default, both item kinds). CPU per page counts the crawl process and its page workers;
the ideal pages/s is cores / CPU per page. ``stages``: one page at a time in this process,
the time of each stage of the filter for English and for Chinese pages: extraction
(trafilatura), tokenization (jieba for CJK), the rest of
fingerprinting (weights and simhash), and the index (``check_and_add`` on a SQLite file).
Targets: raw-HTML crawl with the pool ≥ 1.7× the thread path's pages/s on 2 cores and
≥ 80% of the ideal; text crawl no slower than the thread path; a 0.1 s-latency crawl
≥ 0.95× the crawl without the filter; for English, the filter's time beyond extraction
≤ 10% of extraction's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import scrapy
from scrapy.linkextractors import LinkExtractor

from bench._common import DATA_DIR, ROOT, descendants, machine, write_results
from bench.crawl_site import build_bench_site, hub_pages, load_corpus, variants
from crawler.testsite import Page, SiteServer


class BenchSpider(scrapy.Spider):
    """Follows hub pages; one item per page, with its text or its raw HTML."""

    name = "bench"

    def __init__(self, start: str = "", mode: str = "text", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.mode = mode
        self.link_extractor = LinkExtractor()

    def parse(self, response: Any, **kwargs: Any) -> Any:
        if self.crawler.stats.get_value(STARTUP_STAT) is None:  # the first response
            self.crawler.stats.set_value(STARTUP_STAT, startup_cpu_seconds())
        if self.mode == "site":
            yield from self.parse_as_site_spider(response)
            return
        if "/hub/" in response.url or "/gen/index-" in response.url:
            yield from response.follow_all(css="a", callback=self.parse)
            return
        if self.mode == "text":
            text = " ".join(response.xpath("//body//p//text()").getall())
            yield {"url": response.url, "text": text}
        else:
            yield {"url": response.url, "html": response.body}

    def parse_as_site_spider(self, response: Any) -> Any:
        """``crawler/spiders/site.py``'s work on a page: its item (not for hubs) and every
        link extracted; followed are the links to the bench site's own pages (the real pages'
        relative links would reach paths the loopback site does not serve)."""
        from crawler.items import page_item

        if "/hub/" not in response.url:
            yield page_item(response)
        for link in self.link_extractor.extract_links(response):
            if link.url.startswith(self.start_urls[0].split("/hub/")[0]) and SITE_PATH.match(
                link.url.split("/", 3)[3]
            ):
                yield response.follow(link, callback=self.parse)


SITE_PATH = re.compile(r"(?:hub/\d+|(?:en|zh)/[^/?#]+/(?:original|copy\d)\.html)\Z")
"""The bench site's own paths (``bench.crawl_site``), after the host's slash."""

STARTUP_STAT = "bench/startup_cpu_seconds"
"""CPU seconds of the crawl process and its page workers when the first response arrives:
the start-up (imports, the store's opening, the workers' start), paid once a crawl."""


def startup_cpu_seconds() -> float:
    """CPU seconds so far of this process (all its threads) and of the processes below it."""
    ticks = os.sysconf("SC_CLK_TCK")
    children = 0.0
    for pid in descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return time.process_time() + children


# -- crawls -----------------------------------------------------------------------------


EVERY_CRAWL: dict[str, object] = {}
"""Scrapy settings of every crawl, the filter on or off (``--set``): e.g. the add-on's
``CONCURRENT_ITEMS`` for the crawl without it too, so the two differ by the filter alone."""


def crawl(
    base_url: str,
    workdir: Path,
    *,
    mode: str,
    filter_on: bool,
    concurrency: int,
    workers: int | None = None,
    rss_samples: list[tuple[float, int, int]] | None = None,
    store_text: bool = False,
    code: Path | None = None,
    extra: dict[str, object] | None = None,
) -> dict[str, Any]:
    """One crawl in a subprocess; its stats plus ``bench/*`` CPU and wall times. With
    ``rss_samples``, (seconds, crawl process RSS, page workers' RSS) every second. ``code``:
    the checkout whose ``simhash_filter`` the crawl imports (default: this one); ``extra``:
    more Scrapy settings (with the filter on)."""
    stats_path = workdir / "stats.json"
    stats_path.unlink(missing_ok=True)
    db = workdir / "bench.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    settings = {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "STATS_FILE": stats_path,
        "EXTENSIONS": json.dumps({"crawler.extensions.StatsFile": 500}),
        "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{db}",
        **EVERY_CRAWL,
    }
    if filter_on:
        settings["ADDONS"] = json.dumps({"simhash_filter.Addon": 100})
        if workers is not None:
            settings["SIMHASH_FILTER_WORKERS"] = workers
        if store_text:
            settings["SIMHASH_FILTER_STORE_TEXT"] = True
        settings.update(extra or {})
    if mode == "site":  # the items to a feed, as `scrapy crawl site -O pages.jsonl` does
        feed = workdir / "items.jsonl"
        settings["FEEDS"] = json.dumps({str(feed): {"format": "jsonlines", "overwrite": True}})
    command = [sys.executable, "-m", "scrapy", "runspider", str(Path(__file__).resolve())]
    command += ["-a", f"start={base_url}/hub/0", "-a", f"mode={mode}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = dict(os.environ, PYTHONPATH=str(code or ROOT))
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = time.process_time()  # this process: the site server's threads, else idle
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(command, cwd=workdir, env=env, stderr=stderr, text=True)
        while child.poll() is None:
            if rss_samples is not None:
                rss_samples.append((time.perf_counter() - started, *tree_rss(child.pid)))
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=1.0)
        stderr.seek(0)
        proc = subprocess.CompletedProcess(command, child.returncode, "", stderr.read())
    wall = time.perf_counter() - started
    server_cpu = time.process_time() - server_before
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not stats_path.exists():
        raise SystemExit(f"crawl failed:\n{proc.stderr[-3000:]}")
    stats = dict(json.loads(stats_path.read_text()))
    # CPU seconds of the crawl process (all its threads, start-up and shutdown included):
    # unlike pages/s, hardly moved by other jobs competing for the machine's cores
    stats["bench/cpu_seconds"] = (after.ru_utime - before.ru_utime) + (
        after.ru_stime - before.ru_stime
    )
    stats["bench/server_cpu_seconds"] = server_cpu
    stats["bench/wall_seconds"] = wall
    return stats


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss(pid: int) -> tuple[int, int]:
    """RSS in KiB of process ``pid`` and of all its descendants (the page workers)."""
    return _rss_kib(pid), sum(_rss_kib(child) for child in descendants(pid))


def pages_per_second(stats: dict[str, Any]) -> float:
    return float(stats["response_received_count"]) / float(stats["elapsed_time_seconds"])


def cpu_ms_per_page(stats: dict[str, Any]) -> float:
    return 1000 * float(stats["bench/cpu_seconds"]) / float(stats["response_received_count"])


# -- stages ------------------------------------------------------------------------------


def stage_times(corpus: list[tuple[str, str, bytes]], workdir: Path) -> dict[str, dict[str, float]]:
    """Mean ms per page of each stage, per language (one page at a time, this process).

    The index is timed twice: one transaction per page (``check_and_add``), and in groups
    of 16 pages (``add_many``), as the pipeline's group commit does when pages arrive faster
    than one transaction takes."""
    from scrapy.http import HtmlResponse

    from simhash_filter import Fingerprinter
    from simhash_filter.page.extract import extract_text
    from simhash_filter.store import FingerprintStore, StoreOptions

    fingerprinter = Fingerprinter()
    t0 = time.perf_counter()
    fingerprinter.fingerprint("warm up jieba 预热分词词典 " * 10)
    jieba_load = time.perf_counter() - t0
    results: dict[str, dict[str, float]] = {}
    stages = ("extraction", "tokenization", "fingerprint", "index", "index_grouped", "spider_text")
    for lang in ("en", "zh"):
        totals = dict.fromkeys(stages, 0.0)
        spider_pages = 0
        rows: list[tuple[str, int, int]] = []
        with FingerprintStore.open(
            f"sqlite:///{workdir / f'{lang}1.db'}", StoreOptions(spec="bench")
        ) as store:
            for _, name, html in (p for p in corpus if p[0] == lang):
                for n, page in enumerate([html, *variants(html)]):
                    # the text crawl's case: the spider's own text, as Scrapy decodes it
                    response = HtmlResponse(url=f"https://{lang}.example/", body=page)
                    spider_text = " ".join(response.xpath("//body//p//text()").getall())
                    t0 = time.perf_counter()
                    fingerprinter.fingerprint(spider_text)
                    totals["spider_text"] += time.perf_counter() - t0
                    spider_pages += 1
                    t0 = time.perf_counter()
                    text = extract_text(page)
                    t1 = time.perf_counter()
                    if not text:
                        continue
                    fingerprinter.tokens(text)
                    t2 = time.perf_counter()
                    fingerprint = fingerprinter.fingerprint(text)
                    t3 = time.perf_counter()
                    if fingerprint is None:
                        continue
                    row = (f"https://{lang}.example/{name}/{n}", fingerprint, len(text))
                    store.check_and_add(row[0], row[1], text_length=row[2])
                    t4 = time.perf_counter()
                    rows.append(row)
                    totals["extraction"] += t1 - t0
                    totals["tokenization"] += t2 - t1
                    # fingerprint() tokenizes again: the rest is weights + simhash
                    totals["fingerprint"] += max(0.0, (t3 - t2) - (t2 - t1))
                    totals["index"] += t4 - t3
        with FingerprintStore.open(
            f"sqlite:///{workdir / f'{lang}16.db'}", StoreOptions(spec="bench")
        ) as store:
            t0 = time.perf_counter()
            for i in range(0, len(rows), 16):
                store.add_many(rows[i : i + 16])
            totals["index_grouped"] = time.perf_counter() - t0
        spider_seconds = totals.pop("spider_text")
        results[lang] = {k: 1000 * v / len(rows) for k, v in totals.items()} | {
            "pages": len(rows),
            "spider_text": 1000 * spider_seconds / spider_pages,
            "spider_pages": spider_pages,
            "jieba_load": 1000 * jieba_load,
        }
    return results


# -- main --------------------------------------------------------------------------------


class Variant(NamedTuple):
    """One crawl configuration: the filter off, or on with this many page workers
    (None: the default, 0: the thread path)."""

    label: str
    filter_on: bool
    workers: int | None = None
    store_text: bool = False  # SIMHASH_FILTER_STORE_TEXT
    code: Path | None = None  # another checkout's simhash_filter (``--base``)


OFF = Variant("filter off", False)
THREADS = Variant("threads (WORKERS=0)", True, 0)
DEFAULT = Variant("default (WORKERS unset)", True)


class Scenario(NamedTuple):
    name: str
    latency: float
    concurrency: int
    mode: str
    variants: tuple[Variant, ...]


def scenarios(part: str, latency: float, base: Path | None = None) -> list[Scenario]:
    """The crawls of one ``--part`` (``cost``: with the ``--base`` checkout's filter too)."""
    pools = tuple(Variant(f"pool, {n} worker{'s' * (n > 1)}", True, n) for n in (1, 2))
    loopback = "loopback, CPU-bound"
    with_base = (OFF, DEFAULT) + (
        (Variant("base (WORKERS unset)", True, None, False, base),) if base else ()
    )
    parts = {
        "html": [Scenario(loopback, 0.0, 32, "html", (OFF, THREADS, *pools))],
        "text": [Scenario(loopback, 0.0, 32, "text", (OFF, THREADS, DEFAULT))],
        "latency": [
            Scenario(f"{latency:g} s latency", latency, 4, mode, (OFF, DEFAULT))
            for mode in ("html", "text")
        ],
        "cost": [Scenario(loopback, 0.0, 32, "html", with_base)],
        "sitecost": [Scenario(loopback, 0.0, 32, "site", with_base)],
        "storetext": [
            Scenario(
                loopback, 0.0, 32, "html", (DEFAULT, Variant("STORE_TEXT on", True, None, True))
            )
        ],
    }
    return parts[part]


def summarize(runs: list[dict[str, Any]], cores: int) -> dict[str, float]:
    """Medians over the repeats of one variant: pages/s, CPU ms per page (all processes, and
    the workers' share), the ideal pages/s (cores / CPU per page) and pages/s over it."""
    pages = [float(s["response_received_count"]) for s in runs]
    total = [1000 * float(s["bench/cpu_seconds"]) / p for s, p in zip(runs, pages, strict=True)]
    workers = [
        (
            float(s.get("simhash_filter/workers/cpu_ms", 0))
            + float(s.get("simhash_filter/workers/start_cpu_ms", 0))
        )
        / p
        for s, p in zip(runs, pages, strict=True)
    ]
    steady = [
        1000 * (float(s["bench/cpu_seconds"]) - float(s.get(STARTUP_STAT, 0))) / p
        for s, p in zip(runs, pages, strict=True)
    ]
    page_work = [
        float(s.get("simhash_filter/workers/cpu_ms", 0)) / p
        for s, p in zip(runs, pages, strict=True)
    ]
    rate = statistics.median(pages_per_second(s) for s in runs)
    cpu = statistics.median(total)
    ideal = cores * 1000 / cpu
    return {
        "pages_per_second": rate,
        "cpu_ms_per_page": cpu,
        "steady_cpu_ms_per_page": statistics.median(steady),
        # the crawl process alone: the steady state less the workers' page work
        "crawler_steady_cpu_ms_per_page": statistics.median(
            t - w for t, w in zip(steady, page_work, strict=True)
        ),
        "startup_cpu_seconds": statistics.median(float(s.get(STARTUP_STAT, 0)) for s in runs),
        "worker_cpu_ms_per_page": statistics.median(workers),
        "crawler_cpu_ms_per_page": statistics.median(
            t - w for t, w in zip(total, workers, strict=True)
        ),
        "ideal_pages_per_second": ideal,
        "of_ideal": rate / ideal,
        "worker_busy_over_cpu": statistics.median(
            float(s.get("simhash_filter/workers/busy_ms", 0))
            / max(1.0, float(s.get("simhash_filter/workers/cpu_ms", 0)))
            for s in runs
        ),
        "wait_ms_per_page": statistics.median(
            float(s.get("simhash_filter/workers/wait_ms", 0)) / p
            for s, p in zip(runs, pages, strict=True)
        ),
        "kept": statistics.median(float(s.get("simhash_filter/kept", 0)) for s in runs),
        "dropped": statistics.median(float(s.get("simhash_filter/dropped", 0)) for s in runs),
        "errors": max(float(s.get("simhash_filter/errors", 0)) for s in runs),
    }


def run_part(
    part: str,
    corpus: list[tuple[str, str, bytes]],
    repeats: int,
    latency: float,
    base: Path | None = None,
) -> list[dict[str, Any]]:
    """Crawl every variant of the part's scenarios, interleaved, ``repeats`` times."""
    from simhash_filter.page.pool import usable_cpus

    cores = usable_cpus()
    site, _ = build_bench_site(corpus)
    rows = []
    for scenario in scenarios(part, latency, base):
        with (
            tempfile.TemporaryDirectory() as tmp,
            SiteServer(site, latency=scenario.latency) as server,
        ):
            runs: dict[Variant, list[dict[str, Any]]] = {v: [] for v in scenario.variants}
            for repeat in range(repeats):
                # ABBA order: a machine whose load drifts during the run favours no variant
                order = scenario.variants if repeat % 2 == 0 else scenario.variants[::-1]
                for variant in order:
                    runs[variant].append(
                        crawl(
                            server.base_url,
                            Path(tmp),
                            mode=scenario.mode,
                            filter_on=variant.filter_on,
                            concurrency=scenario.concurrency,
                            workers=variant.workers,
                            store_text=variant.store_text,
                            code=variant.code,
                        )
                    )
                    print(".", end="", flush=True, file=sys.stderr)
        base = {v: summarize(r, cores) for v, r in runs.items()}
        for variant in scenario.variants:
            row = {
                "scenario": scenario.name,
                "concurrency": scenario.concurrency,
                "item": scenario.mode,
                "variant": variant.label,
                **base[variant],
            }
            if OFF in base:
                row["vs_off"] = row["pages_per_second"] / base[OFF]["pages_per_second"]
            if DEFAULT in base:
                row["vs_default"] = row["pages_per_second"] / base[DEFAULT]["pages_per_second"]
            if THREADS in base:
                row["vs_threads"] = row["pages_per_second"] / base[THREADS]["pages_per_second"]
            if OFF in base and variant.filter_on:  # the filter's own CPU, and wall time
                row["filter_cpu_ms_per_page"] = (
                    row["cpu_ms_per_page"] - base[OFF]["cpu_ms_per_page"]
                )
                row["filter_steady_cpu_ms_per_page"] = (
                    row["steady_cpu_ms_per_page"] - base[OFF]["steady_cpu_ms_per_page"]
                )
                row["filter_crawler_steady_cpu_ms_per_page"] = (
                    row["crawler_steady_cpu_ms_per_page"]
                    - base[OFF]["crawler_steady_cpu_ms_per_page"]
                )
                row["filter_startup_cpu_seconds"] = (
                    row["startup_cpu_seconds"] - base[OFF]["startup_cpu_seconds"]
                )
                row["wall_vs_off"] = base[OFF]["pages_per_second"] / row["pages_per_second"]
                # each repeat's crawls ran next to each other: their ratio drifts less with
                # the machine's load than the ratio of the medians
                paired = [
                    pages_per_second(off) / pages_per_second(on)
                    for off, on in zip(runs[OFF], runs[variant], strict=True)
                ]
                row["wall_vs_off_repeats"] = paired
                row["wall_vs_off_paired"] = statistics.median(paired)
            rows.append(row)
    print(file=sys.stderr)
    return rows


def memory_site(clusters: int) -> dict[str, Page]:
    """The generated clusters of the test site (about 2.5 pages a cluster) and hub pages
    linking their index pages."""
    from crawler.testsite import generated_site

    pages, _ = generated_site(clusters)
    pages.update(hub_pages(sorted(p for p in pages if p.startswith("/gen/index-"))))
    return pages


def run_memory(clusters: int) -> dict[str, Any]:
    """One long raw-HTML crawl with the default workers; RSS sampled every second."""
    samples: list[tuple[float, int, int]] = []
    with tempfile.TemporaryDirectory() as tmp, SiteServer(memory_site(clusters)) as server:
        stats = crawl(
            server.base_url,
            Path(tmp),
            mode="html",
            filter_on=True,
            concurrency=32,
            rss_samples=samples,
        )
    samples = [s for s in samples if s[1] > 0]
    tenth = max(1, len(samples) // 10)
    deciles = [samples[min(len(samples) - 1, i * tenth)] for i in range(1, 10)] + [samples[-1]]
    return {
        "responses": stats["response_received_count"],
        "pages_per_second": pages_per_second(stats),
        "kept": stats.get("simhash_filter/kept", 0),
        "dropped": stats.get("simhash_filter/dropped", 0),
        "errors": stats.get("simhash_filter/errors", 0),
        "workers_pages": stats.get("simhash_filter/workers/pages", 0),
        "rss_deciles": [
            {"seconds": round(t), "crawl_mib": c / 1024, "workers_mib": w / 1024}
            for t, c, w in deciles
        ],
        "rss_max_crawl_mib": max(c for _, c, _ in samples) / 1024,
        "rss_max_workers_mib": max(w for _, _, w in samples) / 1024,
    }


def print_memory(result: dict[str, Any]) -> None:
    print(
        f"{result['responses']} responses at {result['pages_per_second']:.1f} pages/s; "
        f"kept {result['kept']}, dropped {result['dropped']}, errors {result['errors']}, "
        f"{result['workers_pages']} pages signed in workers\n"
    )
    print("| time (s) | crawl process RSS (MiB) | page workers RSS (MiB) |")
    print("| ---: | ---: | ---: |")
    for d in result["rss_deciles"]:
        print(f"| {d['seconds']} | {d['crawl_mib']:.0f} | {d['workers_mib']:.0f} |")
    print(f"| max | {result['rss_max_crawl_mib']:.0f} | {result['rss_max_workers_mib']:.0f} |")


def print_cost(rows: list[dict[str, Any]]) -> None:
    """The filter's own CPU a page (on minus off) and the wall time over the crawl without it."""
    costed = [r for r in rows if "filter_cpu_ms_per_page" in r]
    if not costed:
        return
    print(
        "\n| variant | filter CPU ms/page (on - off) | steady state: without the start-up "
        "| of it the crawl process | start-up CPU s (on - off) | wall time / filter off "
        "| the same, repeat by repeat: median (range) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in costed:
        repeats = r["wall_vs_off_repeats"]
        print(
            f"| {r['variant']} | {r['filter_cpu_ms_per_page']:.1f} "
            f"| {r['filter_steady_cpu_ms_per_page']:.1f} "
            f"| {r['filter_crawler_steady_cpu_ms_per_page']:.1f} "
            f"| {r['filter_startup_cpu_seconds']:.2f} | {r['wall_vs_off']:.2f}x "
            f"| {r['wall_vs_off_paired']:.2f}x ({min(repeats):.2f}-{max(repeats):.2f}) |"
        )


def print_crawls(rows: list[dict[str, Any]]) -> None:
    print(
        "| crawl | item | variant | pages/s | vs off | vs threads "
        "| CPU ms/page (crawler + workers) | ideal pages/s | of ideal "
        "| worker wall/CPU | queue wait ms/page "
        "| kept | dropped | errors |"
    )
    print("| --- | --- | --- " + "| ---: " * 11 + "|")
    for r in rows:
        vs_threads = f"{r['vs_threads']:.2f}x" if "vs_threads" in r else "-"
        if "vs_threads" not in r and "vs_default" in r:
            vs_threads = f"{r['vs_default']:.2f}x of default"
        vs_off = f"{r['vs_off']:.2f}x" if "vs_off" in r else "-"
        print(
            f"| {r['scenario']} ({r['concurrency']}) | {r['item']} | {r['variant']} "
            f"| {r['pages_per_second']:.1f} | {vs_off} | {vs_threads} "
            f"| {r['cpu_ms_per_page']:.1f} ({r['crawler_cpu_ms_per_page']:.1f} + "
            f"{r['worker_cpu_ms_per_page']:.1f}) | {r['ideal_pages_per_second']:.0f} "
            f"| {r['of_ideal']:.0%} | {r['worker_busy_over_cpu']:.2f} "
            f"| {r['wait_ms_per_page']:.1f} "
            f"| {r['kept']:.0f} | {r['dropped']:.0f} | {r['errors']:.0f} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--part",
        choices=(
            "html",
            "text",
            "latency",
            "stages",
            "memory",
            "storetext",
            "cost",
            "sitecost",
            "profile",
        ),
        default="html",
        help="which crawls to run (each part is one run of a few minutes)",
    )
    parser.add_argument(
        "--latency", type=float, default=0.1, help="server latency of the latency part (s)"
    )
    parser.add_argument(
        "--clusters", type=int, default=4000, help="generated articles of the memory part"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="cost: a checkout of another commit (e.g. a git worktree of main) crawled too",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a Scrapy setting"
    )
    args = parser.parse_args(argv)
    EVERY_CRAWL.update(item.split("=", 1) for item in args.set)
    if not (args.data / "pages_en").is_dir():
        print(f"no corpus at {args.data} (give --data)", file=sys.stderr)
        return 2
    corpus = load_corpus(args.data)
    site, n_pages = build_bench_site(corpus)
    print(f"site: {n_pages} pages ({len(corpus)} originals x 4) + {len(site) - n_pages} hubs")
    print(f"machine: {machine()}\n")
    if args.part == "memory":
        result = run_memory(args.clusters)
        print_memory(result)
        path = write_results("bench_crawl-memory", result)
    elif args.part == "profile":
        # imported here: the spider module is loaded by crawls of a --base checkout too
        from bench.crawl_profile import print_profile, stage_profile

        with tempfile.TemporaryDirectory() as tmp:
            profile = stage_profile(corpus, Path(tmp))
        print_profile(profile)
        path = write_results("bench_crawl-profile", profile)
    elif args.part == "stages":
        with tempfile.TemporaryDirectory() as tmp:
            stages = stage_times(corpus, Path(tmp))
        print_stages(stages)
        path = write_results("bench_crawl-stages", stages)
    else:
        rows = run_part(args.part, corpus, args.repeats, args.latency, args.base)
        print_crawls(rows)
        print_cost(rows)
        print(
            "\nCPU ms/page: user+system CPU of the crawl process and its page workers (start-up "
            "included) per response; steady state: the same less their CPU at the first "
            "response (the start-up, paid once a crawl); the workers' share is their page work "
            "plus their start.\n"
            "ideal = cores / CPU per page; of ideal = pages/s / ideal; worker wall/CPU: a page's "
            "time in a worker over its CPU there (1.0: a core to itself).\nMedians of the repeats; "
            f"machine load after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())}."
        )
        path = write_results(f"bench_crawl-{args.part}", rows)
    print(f"\nraw results: {path.relative_to(ROOT)}")
    return 0


def print_stages(stages: dict[str, dict[str, float]]) -> None:
    print("| stage (ms/page, one thread) | English | Chinese |")
    print("| --- | ---: | ---: |")
    names = {
        "extraction": "extraction (trafilatura)",
        "tokenization": "tokenization (jieba for Chinese)",
        "fingerprint": "weights + simhash",
        "spider_text": "text crawl: fingerprint of the spider's text (all of it)",
        "index": "index, 1 page/transaction",
        "index_grouped": "index, 16 pages/transaction",
    }
    for stage, label in names.items():
        print(f"| {label} | {stages['en'][stage]:.2f} | {stages['zh'][stage]:.2f} |")
    for lang in ("en", "zh"):
        s = stages[lang]
        for index in ("index", "index_grouped"):
            s[f"beyond_{index}"] = s["tokenization"] + s["fingerprint"] + s[index]
    en, zh = stages["en"], stages["zh"]
    for index, label in (("index", "1 page"), ("index_grouped", "16 pages")):
        b = f"beyond_{index}"
        print(
            f"| filter beyond extraction, {label}/transaction | {en[b]:.2f} "
            f"({en[b] / en['extraction']:.1%} of extraction) "
            f"| {zh[b]:.2f} ({zh[b] / zh['extraction']:.1%}) |"
        )
    print(f"| pages timed | {en['pages']:.0f} | {zh['pages']:.0f} |")
    print(f"| jieba's dictionary load, once per process | - | {zh['jieba_load']:.0f} |")
    n_en, n_zh = en["spider_pages"], zh["spider_pages"]
    text_filter = (
        n_en * (en["spider_text"] + en["index_grouped"])
        + n_zh * (zh["spider_text"] + zh["index_grouped"])
        + zh["jieba_load"]
    ) / (n_en + n_zh)
    print(
        f"\nText crawl, the filter's own CPU per page of this site ({n_en:.0f} English, "
        f"{n_zh:.0f} Chinese pages; jieba's load spread over them): {text_filter:.2f} ms; "
        f"English pages only: {en['spider_text'] + en['index_grouped']:.2f} ms."
    )
    jieba_free = (zh["fingerprint"] + zh["index_grouped"]) / zh["extraction"]
    print(
        f"\nChinese without jieba's segmentation: {jieba_free:.1%} of extraction time. "
        "Crawl rows: pages/s is responses / elapsed time, median of the repeats."
    )


if __name__ == "__main__":
    sys.exit(main())
