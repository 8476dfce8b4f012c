"""Run ``scrapy crawl`` in a subprocess to its end and collect its items, stats and log."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from crawler.testsite.server import SiteServer
from crawler.workers import CrawlResult, project_env

__all__ = ["CrawlResult", "crawl_site", "run_scrapy"]


def run_scrapy(
    args: Sequence[str],
    *,
    cwd: Path,
    settings: Mapping[str, object] = {},
    settings_module: str | None = "crawler.settings",
    pythonpath: Sequence[Path] = (),
    timeout: float = 300,
    wrapper: Sequence[str] = (),
) -> CrawlResult:
    """``scrapy <args>`` in ``cwd`` with the repository (and ``pythonpath``) on ``PYTHONPATH``.

    Items go to ``cwd/items.jsonl`` and the final stats to ``cwd/stats.json`` (through the
    crawler project's ``StatsFile`` extension, enabled here with ``-s`` for other projects).
    ``wrapper``: a command the ``scrapy`` command line is appended to (``unshare ...``).
    """
    items_path = cwd / "items.jsonl"
    stats_path = cwd / "stats.json"
    for path in (items_path, stats_path):
        path.unlink(missing_ok=True)
    command = [*wrapper, sys.executable, "-m", "scrapy", *args, "-O", str(items_path)]
    command += ["-s", f"STATS_FILE={stats_path}"]
    command += ["-s", 'EXTENSIONS={"crawler.extensions.StatsFile": 500}']
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    proc = subprocess.run(
        command,
        cwd=cwd,
        env=project_env(settings_module, pythonpath),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    items = (
        [json.loads(line) for line in items_path.read_text().splitlines() if line.strip()]
        if items_path.exists()
        else []
    )
    return CrawlResult(proc.returncode, stats, items, proc.stderr)


def crawl_site(site: SiteServer, workdir: Path, settings: Mapping[str, object]) -> CrawlResult:
    """``scrapy crawl site`` from the site's home page, its database ``workdir/dedup.db``
    (``settings`` may name another), asserted to finish."""
    db = f"sqlite:///{workdir / 'dedup.db'}"
    result = run_scrapy(
        ["crawl", "site", "-a", f"start_url={site.url('/')}"],
        cwd=workdir,
        settings={"SIMHASH_FILTER_DATABASE_URL": db, **settings},
    )
    assert result.returncode == 0, result.log[-5000:]
    assert result.stats.get("finish_reason") == "finished", result.log[-5000:]
    return result
