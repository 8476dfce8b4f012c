"""The README's own snippets in a fresh ``scrapy startproject``, crawled over loopback HTTP.

A new user's first hour: the README's ``ADDONS`` line in a new project's ``settings.py``,
its ``parse`` in a spider of the user's own, ``scrapy crawl … -O pages.jsonl``. Every kept
page must reach the feed; a bad setting, a misspelled one and a missing database driver
must each be one clear line.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import NEVER_FETCHED, SiteServer, build_site
from support.blocked_modules import blocking_path

from simhash_filter.store.engine import POSTGRESQL_EXTRA

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
PROJECT = "readme_project"


def python_snippets() -> list[str]:
    """The README's ```python blocks, in order."""
    text = README.read_text(encoding="utf-8")
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", text, re.S)]


def snippet_with(marker: str) -> str:
    (found,) = [s for s in python_snippets() if marker in s]
    ast.parse(found)  # the README's code is Python
    return found


def inline_pipelines_line() -> str:
    """The README's one-line setting for a project without add-ons."""
    text = README.read_text(encoding="utf-8")
    (line,) = re.findall(r"`(ITEM_PIPELINES = \{[^`]*\})`", text)
    return line


@dataclass(frozen=True)
class Run:
    returncode: int
    log: str
    feed: list[str]

    def stat(self, name: str) -> int:
        found = re.search(rf"'{re.escape(name)}': (\d+)", self.log)
        return int(found.group(1)) if found else 0


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    with SiteServer(build_site()) as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, site: SiteServer) -> Path:
    """``scrapy startproject`` + the README's ADDONS line + a spider whose ``parse`` is the
    README's, started from every page of the loopback site."""
    root = tmp_path_factory.mktemp("readme")
    subprocess.run(
        [sys.executable, "-m", "scrapy", "startproject", PROJECT],
        cwd=root,
        check=True,
        capture_output=True,
    )
    folder = root / PROJECT
    settings = folder / PROJECT / "settings.py"
    settings.write_text(
        settings.read_text(encoding="utf-8") + "\n" + snippet_with("ADDONS"), encoding="utf-8"
    )
    urls = sorted(site.url(path) for path in build_site() if path not in NEVER_FETCHED)
    parse = textwrap.indent(snippet_with("def parse"), "    ")
    spider = "import scrapy\n\n\nclass Pages(scrapy.Spider):\n    name = 'pages'\n"
    spider += f"    start_urls = {urls!r}\n\n{parse}"
    (folder / PROJECT / "spiders" / "pages.py").write_text(spider, encoding="utf-8")
    return folder


def crawl(project: Path, *settings: str, pythonpath: Path | None = None) -> Run:
    """``scrapy crawl pages -O pages.jsonl`` in the project, as a user runs it."""
    feed = project / "pages.jsonl"
    feed.unlink(missing_ok=True)
    command = [sys.executable, "-m", "scrapy", "crawl", "pages", "-O", "pages.jsonl"]
    command += ["-s", "LOG_LEVEL=INFO", "-s", "DOWNLOAD_DELAY=0"]
    for setting in settings:
        command += ["-s", setting]
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300
    )
    lines = feed.read_text(encoding="utf-8").splitlines() if feed.exists() else []
    return Run(proc.returncode, proc.stderr, lines)


def test_the_readme_snippets_export_every_kept_page(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "dedup.db"
    result = crawl(project, f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{db}")
    assert result.returncode == 0, result.log[-3000:]
    assert "not JSON serializable" not in result.log
    assert "Enabled addons:\n[simhash_filter.Addon]" in result.log
    # the import path, as the README writes it, not "<class '...'>" (issue 44 item 6)
    pipelines = result.log.split("Enabled item pipelines:\n", 1)[1].split("\n", 1)[0]
    assert pipelines == "['simhash_filter.NearDuplicatePipeline']"
    assert "<class 'simhash_filter" not in result.log
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dedup.db"]  # no dedup.db-lock
    passed = sum(result.stat(f"simhash_filter/{s}") for s in ("kept", "no_text", "too_deep"))
    assert result.stat("simhash_filter/kept") >= 8
    assert result.stat("simhash_filter/dropped") >= 4
    assert result.stat("item_scraped_count") == passed == len(result.feed)
    assert all('"url": "http://127.0.0.1' in line for line in result.feed)


def test_the_readme_line_without_addons(project: Path, tmp_path: Path) -> None:
    """``ITEM_PIPELINES = {...}`` from the README instead of the add-on, and a plain file
    path as the database (as ``simhash-filter --db`` takes one)."""
    pipelines = inline_pipelines_line().split(" = ", 1)[1]
    result = crawl(
        project,
        "ADDONS={}",
        f"ITEM_PIPELINES={pipelines}",
        f"SIMHASH_FILTER_DATABASE_URL={tmp_path / 'plain.db'}",
    )
    assert result.returncode == 0, result.log[-3000:]
    assert (tmp_path / "plain.db").exists()
    assert result.stat("simhash_filter/dropped") >= 4
    assert result.stat("item_scraped_count") == len(result.feed) > 0


def _errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] ERROR:" in line]


def test_a_wrong_type_is_one_error_line(project: Path, tmp_path: Path) -> None:
    result = crawl(project, "SIMHASH_FILTER_MIN_TOKENS=lots")
    assert result.returncode == 1
    (error,) = _errors(result.log)
    assert "SIMHASH_FILTER_MIN_TOKENS must be an integer, got 'lots'" in error
    assert "Traceback" not in result.log
    assert "Task exception was never retrieved" not in result.log


def test_a_misspelled_setting_is_named_with_the_nearest(project: Path, tmp_path: Path) -> None:
    result = crawl(
        project,
        f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{tmp_path / 'typo.db'}",
        "SIMHASH_FILTER_MIN_SIMILARTY=0.9",
    )
    assert result.returncode == 0, result.log[-3000:]
    (warning,) = [line for line in result.log.splitlines() if "MIN_SIMILARTY" in line]
    assert "WARNING" in warning
    assert "did you mean SIMHASH_FILTER_MIN_SIMILARITY?" in warning


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://postgres@127.0.0.1:5432/postgres", POSTGRESQL_EXTRA),
        ("mysql://crawler@127.0.0.1/crawl", "mysql databases are not supported"),
    ],
)
def test_a_missing_driver_is_one_error_line(
    project: Path, tmp_path: Path, url: str, expected: str
) -> None:
    blocker = blocking_path(tmp_path / "blocked", ["psycopg"])
    result = crawl(project, f"SIMHASH_FILTER_DATABASE_URL={url}", pythonpath=blocker)
    assert result.returncode == 1
    (error,) = _errors(result.log)
    assert expected in error
    assert "Traceback" not in result.log
    assert result.feed == []


@pytest.mark.parametrize("middleware", [False, True], ids=["pipeline", "middleware"])
def test_every_drop_is_in_the_debug_log(project: Path, tmp_path: Path, middleware: bool) -> None:
    """Pipeline or middleware mode, each drop is in the log (the first at INFO with the
    hint; in pipeline mode Scrapy's own DEBUG line of every DropItem too)."""
    result = crawl(
        project,
        f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{tmp_path / 'log.db'}",
        f"SIMHASH_FILTER_MIDDLEWARE={middleware}",
        "LOG_LEVEL=DEBUG",
    )
    assert result.returncode == 0, result.log[-3000:]
    drops = [line for line in result.log.splitlines() if "Near-duplicate of " in line]
    dropped_urls = {re.search(r"\): (\S+)", line).group(1) for line in drops}  # type: ignore[union-attr]
    assert len(dropped_urls) == result.stat("simhash_filter/dropped") >= 4
    assert sum("] INFO: " in line for line in drops) == 1
    # one similarity, named, beside the distance (issue 44 item 5)
    named = [re.search(r"\((similarity [0-9.]+, )?distance \d+ bits\)", line) for line in drops]
    assert all(named)
    assert any(found and found.group(1) for found in named)
    # no page content in the log, at DEBUG either (issue 44 item 1): a dropped item is
    # logged whole by Scrapy, and its HTML must not be in it
    assert "'html':" not in result.log
    assert "<!doctype" not in result.log.lower()
    assert "<body" not in result.log.lower()


def test_the_info_log_holds_no_line_a_page(project: Path, tmp_path: Path) -> None:
    """At INFO the log names at most a few pages (the first drop, the first skip): its size
    does not grow with the crawl, so a 1,000-page crawl's stays far under 100 KB."""
    result = crawl(project, f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{tmp_path / 'info.db'}")
    assert result.returncode == 0, result.log[-3000:]
    pages = result.stat("simhash_filter/kept") + result.stat("simhash_filter/dropped")
    assert pages >= 12
    naming = [line for line in result.log.splitlines() if "http://127.0.0.1" in line]
    assert len(naming) <= 3, naming
    assert len(result.log.encode()) < 20_000


def test_the_feed_of_a_crawl_with_add_text_imports_back(project: Path, tmp_path: Path) -> None:
    """Issue 44 item 4: with SIMHASH_FILTER_ADD_TEXT the crawl's own -O feed holds each
    page's main text, and importing it into an empty database keeps the pages the crawl
    kept, with the same fingerprints."""
    crawled = tmp_path / "crawl.db"
    result = crawl(
        project, f"SIMHASH_FILTER_DATABASE_URL=sqlite:///{crawled}", "SIMHASH_FILTER_ADD_TEXT=True"
    )
    assert result.returncode == 0, result.log[-3000:]
    with_text = [line for line in result.feed if '"text": ' in line]
    assert len(with_text) >= result.stat("simhash_filter/kept"), result.feed  # no_text aside
    imported = tmp_path / "imported.db"
    cli = [sys.executable, "-m", "simhash_filter"]
    proc = subprocess.run(
        [*cli, "import", str(project / "pages.jsonl"), "--no-progress", "--db", str(imported)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr

    def kept(db: Path) -> list[tuple[str, str]]:
        out = subprocess.run(
            [*cli, "export", "--pages", "--format", "csv", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        rows = [line.split(",") for line in out.splitlines()[1:]]
        # (url, fingerprint) of the fingerprinted pages: the crawl also records pages with
        # too little text by their bytes (text_length 0), which pass as no_text
        return sorted((row[0], row[1]) for row in rows if row[2] != "0")

    assert kept(imported) == kept(crawled)
    assert len(kept(crawled)) == result.stat("simhash_filter/kept") >= 8
