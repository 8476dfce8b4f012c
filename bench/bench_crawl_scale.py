"""The crawl itself at scale: does a 30k-page crawl run like a 10k-page one (issue 45)?

    .venv/bin/python -m bench.bench_crawl_scale --pages 10000 30000 --base /path/to/main

The site: the test site's generated near-duplicate clusters (``crawler.testsite``'s
``generated_site``: articles under 1 to 4 URLs, one of them a ``?ref=feed`` variant, linked
from index pages; about 2.5 pages a cluster) behind hub pages (``bench.bench_crawl``'s
``memory_site``). Each crawl is a ``scrapy runspider`` of the spider below in a subprocess
(``CONCURRENT_REQUESTS = 16``, SQLite, the spider's item the page's paragraphs' text), with
the filter off, on (this checkout) and on with ``--base``'s ``simhash_filter`` (main),
interleaved at each size. Inside the crawl process the spider samples every 5 s: responses,
the process's CPU (its threads, not the page workers), RSS, and the learner's backlog
(``simhash_filter/rules/backlog``); the table shows per crawl: pages, CPU ms a page over the
whole crawl and in its second and last tenth, pages/min in the second and last tenth, RSS at
the end and its growth over the last two thirds (the last sample less the first, and the
least-squares slope of every sample, MiB a 10,000 pages), the largest learner backlog, pages
unchecked, and the seconds from the last response to ``Spider closed`` in the log and to
the process's exit.

Where the memory goes: ``SCALE_SNAPSHOT_AT=30000,60000,90000 SCALE_SNAPSHOT_DIR=dir`` makes
the crawl process dump, past each of those page counts, ``probe-<n>.json``
(:mod:`bench.memory_probe`: the largest containers held by the crawl's objects, live objects
by type, a full collection's time, glibc's heap in use and free, SQLite's memory);
``SCALE_SNAPSHOT_TRIM=1`` also trims the heap then and records the RSS after it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import scrapy

from bench._common import ROOT, machine, write_results
from bench.bench_crawl import memory_site
from crawler.testsite import SiteServer

SAMPLE_SECONDS = 5.0
_MIX = {"kept": "kept", "dropped": "dropped", "skipped": "requests/skipped/rule"}
"""The page verdicts and skipped requests sampled with the CPU: what each tenth's pages were
(a tenth of copies costs more a page than a tenth of new pages: the keep decision)."""
PAGES_PER_CLUSTER = 2.55  # memory_site's pages (index and hub pages included) a cluster


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _snapshot_at() -> list[int]:
    spec = os.environ.get("SCALE_SNAPSHOT_AT", "")
    return sorted(int(part) for part in spec.split(",") if part.strip())


class ScaleSpider(scrapy.Spider):
    """Follows every link; one item per article page (its paragraphs' text). Writes a sample
    line every :data:`SAMPLE_SECONDS` to ``samples`` (JSON lines) and one at its close."""

    name = "scale"

    def __init__(self, start: str = "", samples: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.samples_path = samples
        self.last_response = 0.0
        self._loop: Any = None
        self._snapshots_done: set[int] = set()

    def _sample(self, event: str = "sample") -> None:
        stats = self.crawler.stats
        line = {
            "event": event,
            "time": time.time(),
            "responses": stats.get_value("response_received_count", 0),
            "cpu": time.process_time(),
            "rss_kib": _rss_kib(),
            "backlog": stats.get_value("simhash_filter/rules/backlog", 0),
            "last_response": self.last_response,
            **{key: stats.get_value(f"simhash_filter/{stat}", 0) for key, stat in _MIX.items()},
        }
        with open(self.samples_path, "a") as out:
            out.write(json.dumps(line) + "\n")
        self._snapshot(int(line["responses"]))

    def _snapshot(self, responses: int) -> None:
        """Past each of ``SCALE_SNAPSHOT_AT``'s page counts (comma-separated), dump into
        ``SCALE_SNAPSHOT_DIR`` where the memory is (:mod:`bench.memory_probe`)."""
        due = [n for n in _snapshot_at() if n <= responses and n not in self._snapshots_done]
        if not due:
            return
        self._snapshots_done.update(due)
        from bench.memory_probe import probe

        out = Path(os.environ.get("SCALE_SNAPSHOT_DIR", "."))
        try:
            line = {
                "responses": responses,
                "rss_kib": _rss_kib(),
                **probe(bool(os.environ.get("SCALE_SNAPSHOT_TRIM"))),
            }
        except Exception as exc:  # a probe's failure must not stop the samples
            line = {"responses": responses, "error": repr(exc)}
        (out / f"probe-{due[-1]}.json").write_text(json.dumps(line, indent=1))

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self.last_response = time.time()
        if self._loop is None:
            from twisted.internet import task

            self._loop = task.LoopingCall(self._sample)
            self._loop.start(SAMPLE_SECONDS)
        yield from response.follow_all(css="a", callback=self.parse)
        if "/hub/" not in response.url and "/gen/index-" not in response.url:
            text = " ".join(response.xpath("//body//p//text()").getall())
            yield {"url": response.url, "text": text}

    def closed(self, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._sample("closed")
        trace = os.environ.get("SCALE_TRACEMALLOC")  # PYTHONTRACEMALLOC=1 set: where is RSS
        if trace:
            import tracemalloc

            top = tracemalloc.take_snapshot().statistics("filename")[:30]
            Path(trace).write_text("\n".join(str(stat) for stat in top))


def crawl(
    base_url: str,
    workdir: Path,
    *,
    variant: str,
    base: Path | None,
    concurrency: int = 16,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One crawl in a subprocess (``variant``: off, on, main); its stats and samples.
    ``extra``: more Scrapy settings (``--set``), for every variant."""
    stats_path, samples = workdir / "stats.json", workdir / "samples.jsonl"
    for path in (stats_path, samples):
        path.unlink(missing_ok=True)
    db = workdir / "bench.db"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    settings: dict[str, object] = {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
        "LOG_FILE": workdir / "crawl.log",
        "LOG_FILE_APPEND": False,
        "LOG_FORMAT": "%(created).3f [%(name)s] %(levelname)s: %(message)s",
        "TELNETCONSOLE_ENABLED": False,
        "STATS_FILE": stats_path,
        "EXTENSIONS": json.dumps({"crawler.extensions.StatsFile": 500}),
        "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{db}",
    }
    settings.update(extra or {})
    if variant != "off":
        settings["ADDONS"] = json.dumps({"simhash_filter.Addon": 100})
    command = [sys.executable, "-m", "scrapy", "runspider", str(Path(__file__).resolve())]
    command += ["-a", f"start={base_url}/hub/0", "-a", f"samples={samples}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    code = base if variant == "main" and base is not None else ROOT
    env = dict(os.environ, PYTHONPATH=f"{code}{os.pathsep}{ROOT}")
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    exited = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not stats_path.exists():
        raise SystemExit(f"crawl failed:\n{proc.stderr[-3000:]}")
    stats = dict(json.loads(stats_path.read_text()))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    log = (workdir / "crawl.log").read_text(errors="replace")
    closed = [line for line in log.splitlines() if "] INFO: Spider closed" in line]
    return {
        "spider_closed": float(closed[-1].split(" ", 1)[0]) if closed else float("nan"),
        "stats": stats,
        "samples": lines,
        "exited": exited,
        "children_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "learn_errors": log.count("Could not learn URL rules"),
        "locked": log.count("database is locked"),
    }


def _tenth(samples: list[dict[str, Any]], which: int) -> dict[str, float]:
    """Pages/min and CPU ms a page between the samples bounding tenth ``which`` (0-based)
    of the responses; the share of the tenth's checked pages dropped as copies, and the
    requests skipped by rules a response."""
    nan = float("nan")
    total = samples[-1]["responses"]
    lo, hi = total * which / 10, total * (which + 1) / 10
    inside = [s for s in samples if s["event"] == "sample" and lo <= s["responses"] <= hi]
    if len(inside) < 2:
        return {"pages_min": nan, "cpu_ms": nan, "copies": nan, "skipped": nan}
    first, last = inside[0], inside[-1]
    pages = last["responses"] - first["responses"]
    seconds = last["time"] - first["time"]
    mix = {key: last.get(key, 0) - first.get(key, 0) for key in _MIX}
    checked = mix["kept"] + mix["dropped"]
    return {
        "pages_min": 60 * pages / seconds if seconds else nan,
        "cpu_ms": 1000 * (last["cpu"] - first["cpu"]) / pages if pages else nan,
        "copies": mix["dropped"] / checked if checked else nan,
        "skipped": mix["skipped"] / pages if pages else nan,
    }


def print_tenths(results: list[dict[str, Any]]) -> None:
    """Each crawl by tenth of its responses: what the targets compare (the second and the
    last tenth) with what the pages were (copies cost the keep decision; skips cost no
    download but the request's handling)."""
    print("| size | variant | figure | " + " | ".join(str(n) for n in range(1, 11)) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in range(10)) + " |")
    figures = (("cpu_ms", "CPU ms a page", "{:.1f}"), ("pages_min", "pages/min", "{:.0f}"))
    figures += (("copies", "copies' share", "{:.2f}"), ("skipped", "skipped a page", "{:.2f}"))
    for result in results:
        tenths = [_tenth(result["samples"], n) for n in range(10)]
        for key, title, fmt in figures:
            cells = " | ".join(fmt.format(t[key]) for t in tenths)
            print(f"| {result['size']} | {result['variant']} | {title} | {cells} |")


def rss_slope(samples: list[dict[str, Any]], pages: int) -> float:
    """The RSS's least-squares slope over the crawl's last two thirds, MiB per 10,000 pages:
    what "not growing past 30k" reads, where the difference of two samples moves with the C
    heap's swings (tens of MiB between trims) more than with the crawl."""
    points = [(s["responses"], s["rss_kib"] / 1024) for s in samples if s["responses"] >= pages / 3]
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if not spread:
        return 0.0
    return 10_000 * sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    stats, samples = result["stats"], result["samples"]
    closed = samples[-1]
    pages = int(stats.get("response_received_count", 0))
    last = closed["last_response"]
    third = [s for s in samples if s["responses"] >= pages / 3]
    second, tenth = _tenth(samples, 1), _tenth(samples, 9)
    return {
        "pages": pages,
        "cpu_ms_page": 1000 * closed["cpu"] / pages,
        "cpu_ms_2nd": second["cpu_ms"],
        "cpu_ms_last": tenth["cpu_ms"],
        "pages_min_2nd": second["pages_min"],
        "pages_min_last": tenth["pages_min"],
        "rss_mib": max(s["rss_kib"] for s in samples) / 1024,
        "rss_growth_mib": (third[-1]["rss_kib"] - third[0]["rss_kib"]) / 1024 if third else 0,
        "rss_slope_10k": rss_slope(samples, pages),
        "backlog_max": max(s["backlog"] for s in samples),
        "unchecked": sum(v for k, v in stats.items() if k.startswith("simhash_filter/unchecked/")),
        "to_close_s": result["spider_closed"] - last,
        "to_exit_s": result["exited"] - last,
        "skipped": sum(
            v for k, v in stats.items() if k.startswith("simhash_filter/requests/skipped/")
        ),
        "rules_active": stats.get("simhash_filter/rules/active", 0),
        "dropped_observations": stats.get("simhash_filter/rules/observations_dropped", 0),
        "learn_errors": result["learn_errors"],
        "locked": result["locked"],
    }


COLUMNS = (
    ("pages", "{:.0f}"),
    ("cpu_ms_page", "{:.1f}"),
    ("cpu_ms_2nd", "{:.1f}"),
    ("cpu_ms_last", "{:.1f}"),
    ("pages_min_2nd", "{:.0f}"),
    ("pages_min_last", "{:.0f}"),
    ("rss_mib", "{:.0f}"),
    ("rss_growth_mib", "{:.0f}"),
    ("rss_slope_10k", "{:.1f}"),
    ("backlog_max", "{:.0f}"),
    ("dropped_observations", "{:.0f}"),
    ("unchecked", "{:.0f}"),
    ("locked", "{:.0f}"),
    ("to_close_s", "{:.1f}"),
    ("to_exit_s", "{:.1f}"),
    ("skipped", "{:.0f}"),
    ("rules_active", "{:.0f}"),
)


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("| size | variant | " + " | ".join(name for name, _ in COLUMNS) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in COLUMNS) + " |")
    for row in rows:
        cells = " | ".join(fmt.format(row[name]) for name, fmt in COLUMNS)
        print(f"| {row['size']} | {row['variant']} | {cells} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[10_000, 30_000])
    parser.add_argument("--variants", nargs="+", default=["off", "on", "main"])
    parser.add_argument("--base", type=Path, help="a checkout of main (the `main` variant)")
    parser.add_argument("--out", type=Path, help="the raw samples and summaries (JSON)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a Scrapy setting"
    )
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.set)
    variants = [v for v in args.variants if v != "main" or args.base is not None]
    rows: list[dict[str, Any]] = []
    raw: list[dict[str, Any]] = []
    print(machine(), file=sys.stderr)
    for n, size in enumerate(args.pages):
        pages = memory_site(round(size / PAGES_PER_CLUSTER))
        order = variants if n % 2 == 0 else list(reversed(variants))
        with tempfile.TemporaryDirectory() as tmp, SiteServer(pages) as server:
            for variant in order:
                started = time.perf_counter()
                result = crawl(
                    server.base_url, Path(tmp), variant=variant, base=args.base, extra=extra
                )
                row = {"size": size, "variant": variant, **summarize(result)}
                rows.append(row)
                raw.append({"size": size, "variant": variant, **result})
                print(
                    f"{size} {variant}: {time.perf_counter() - started:.0f} s, {row}",
                    file=sys.stderr,
                )
    print_rows(sorted(rows, key=lambda r: (r["size"], variants.index(r["variant"]))))
    print()
    print_tenths(raw)
    if args.out is not None:
        args.out.write_text(json.dumps(raw, default=str))
    write_results("crawl_scale", {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
