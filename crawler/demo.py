"""Offline demo: crawl a loopback site full of near-duplicates and show what was dropped.

    python -m crawler.demo                # in a temporary folder, removed afterwards
    python -m crawler.demo --dir demo     # keep demo/dedup.db, demo/pages.jsonl, demo/crawl.log
    python -m crawler.demo --middleware   # drop near-duplicate responses before parsing
    python -m crawler.demo --report r.html   # where the HTML report goes

It serves :mod:`crawler.testsite` on 127.0.0.1 (no internet needed), runs the real
``scrapy crawl site`` command of this project against it in a subprocess, and prints the
pages kept, the near-duplicates dropped (with the page each duplicates and the distance)
and the pages without text. The crawl stores page texts (``SIMHASH_FILTER_STORE_TEXT``),
and the demo writes ``simhash-filter report``'s HTML file and prints its path (it is kept
when the temporary folder is removed).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from .testsite import SiteServer, build_site
from .workers import project_env


def similar(value: float | None) -> str:
    """The similarity as the drop lines and the command line name it (rounded to 3)."""
    return "" if value is None else f"similarity {round(value, 3):g}, "


def _crawl(base_url: str, workdir: Path, *, middleware: bool) -> tuple[list[str], int]:
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "site",
        "-a",
        f"start_url={base_url}/",
        "-O",
        "pages.jsonl",
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{workdir / 'dedup.db'}",
        "-s",
        f"STATS_FILE={workdir / 'stats.json'}",
        "-s",
        f"LOG_FILE={workdir / 'crawl.log'}",
        "-s",
        "SIMHASH_FILTER_STORE_TEXT=True",
    ]
    if middleware:
        command += ["-s", "SIMHASH_FILTER_MIDDLEWARE=True"]
    return command, subprocess.run(command, cwd=workdir, env=project_env(), check=False).returncode


def _report(base_url: str, workdir: Path) -> None:
    from simhash_filter.store import FingerprintStore

    def short(url: str) -> str:
        return url.removeprefix(base_url) or "/"

    items = [
        json.loads(line)
        for line in (workdir / "pages.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    stats = json.loads((workdir / "stats.json").read_text())
    with FingerprintStore.open_existing(f"sqlite:///{workdir / 'dedup.db'}") as store:
        drops = sorted(store.duplicates(), key=lambda d: d.url)
    kept = sorted((i for i in items if i.get("fingerprint")), key=lambda i: i["url"])
    no_text = sorted(i["url"] for i in items if not i.get("fingerprint"))
    print(f"\nKept ({len(kept)} pages, fingerprint and title):")
    for item in kept:
        print(f"  {short(item['url']):44} {item['fingerprint']}  {(item['title'] or '')[:48]}")
    print(f"\nDropped as near-duplicates ({len(drops)}):")
    for drop in drops:
        print(
            f"  {short(drop.url):44} duplicate of {short(drop.duplicate_of_url)}"
            f" ({similar(drop.similarity)}distance {drop.distance} bits)"
        )
    print(f"\nPassed without text to fingerprint ({len(no_text)}):")
    for url in no_text:
        print(f"  {short(url)}")
    print("\nStats:")
    for key in sorted(k for k in stats if k.startswith("simhash_filter/")):
        print(f"  {key}: {stats[key]}")
    pages = stats.get("simhash_filter/workers/pages", 0)
    if pages:
        print(
            f"\nPage work: {pages} pages signed in worker processes, "
            f"{stats.get('simhash_filter/workers/cpu_ms', 0) / pages:.1f} ms CPU a page there, "
            f"{stats.get('simhash_filter/workers/wait_ms', 0) / pages:.1f} ms a page waiting "
            "for a free worker (SIMHASH_FILTER_WORKERS)"
        )


def _write_html_report(database: Path, path: Path) -> None:
    from simhash_filter.cli.report import write_report
    from simhash_filter.store import FingerprintStore

    with FingerprintStore.open_existing(f"sqlite:///{database}") as store:
        write_report(store, path)
    print(f"\nHTML report (simhash-filter report): {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crawler.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dir", type=Path, help="keep the database, items and log here")
    parser.add_argument(
        "--report",
        type=Path,
        help="write the HTML report here (default: report.html in --dir, else "
        "simhash-filter-demo-report.html in the system's temporary folder)",
    )
    parser.add_argument(
        "--middleware",
        action="store_true",
        help="also enable NearDuplicateMiddleware (SIMHASH_FILTER_MIDDLEWARE)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="simhash-demo-") as tmp:
        workdir = (args.dir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "dedup.db").unlink(missing_ok=True)  # a fresh index every run
        with SiteServer(build_site()) as site:
            print(f"Serving the demo site at {site.base_url}/ (loopback only)")
            command, returncode = _crawl(site.base_url, workdir, middleware=args.middleware)
            print("Ran: " + shlex.join(["scrapy", *command[3:]]))
            if returncode != 0:
                print(
                    f"The crawl failed (exit {returncode}); log: {workdir / 'crawl.log'}",
                    file=sys.stderr,
                )
                if args.dir is None:
                    print((workdir / "crawl.log").read_text()[-4000:], file=sys.stderr)
                return 1
            _report(site.base_url, workdir)
        report = args.report or (
            workdir / "report.html"
            if args.dir
            else Path(tempfile.gettempdir()) / "simhash-filter-demo-report.html"
        )
        _write_html_report(workdir / "dedup.db", report.resolve())
        if args.dir:
            print(
                f"\nDatabase, items and log in {workdir}/ "
                f"(try: simhash-filter dupes --db {workdir / 'dedup.db'})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
