"""The smaller findings of issue 19, each with a real case: an empty ``.gz`` import, an
unreadable subfolder, ``export`` with stdout closed, ``near`` on huge hostile HTML, the
``workers/restarts`` count."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler
from support.cli_corpus import run
from support.processes import wait_until

import simhash_filter.page.extract as extract_module
from crawler.testsite.hostile import hostile_page
from crawler.workers import project_env
from simhash_filter.cli.importers import read_html_files
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.filter import WORKER_STATS, PageFilter
from simhash_filter.page.extract import DEFAULT_MAX_BYTES, MAX_ELEMENTS
from simhash_filter.store import FingerprintStore, StoreOptions

ARTICLE = "<html><body><article><p>" + "the bridge opened in march after years " * 20


@pytest.mark.parametrize("name", ["pages.jsonl.gz", "crawl.warc.gz"])
def test_importing_an_empty_gz_is_an_error(
    name: str, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / name
    source.write_bytes(b"")
    code, _, err = run(capsys, "import", str(source), "--db", sqlite_url)
    assert code == 1
    assert f"{source}: an empty file, not gzip data" in err
    assert "Traceback" not in err


def test_an_unreadable_subfolder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.html").write_text(ARTICLE)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.html").write_text(ARTICLE)
    locked.chmod(0)
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:  # as root, mode 000 does not keep us out
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    skipped: list[str] = []
    try:
        records = list(read_html_files(tmp_path, on_skip=skipped.append))
    finally:
        locked.chmod(0o755)
    assert [Path(r.origin).name for r in records] == ["a.html"]
    assert skipped == [f"{locked}: Permission denied: its files were not read"]


def test_export_with_stdout_closed_says_so(sqlite_url: str) -> None:
    FingerprintStore.open(sqlite_url, StoreOptions(spec=Fingerprinter().spec)).close()
    command = [sys.executable, "-m", "simhash_filter", "export", "--db", sqlite_url]
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *command],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env=project_env(),
    )
    assert proc.returncode == 1
    assert "stdout is closed" in proc.stderr
    assert "AttributeError" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_near_on_huge_hostile_html_is_bounded(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    FingerprintStore.open(sqlite_url, StoreOptions(spec=Fingerprinter().spec)).close()
    page = tmp_path / "hostile.html"
    page.write_bytes(hostile_page("headings", 10 * 1024 * 1024))
    bodies: list[int] = []
    trees: list[int] = []
    real_parse, real_main = extract_module.parse_bounded, extract_module._main_text

    def parse(body: bytes | str, capped: list[str] | None = None) -> Any:
        bodies.append(len(body))
        return real_parse(body, capped)

    def main_text(tree: Any, url: str | None) -> str | None:
        trees.append(sum(1 for _ in tree.iter()))
        return real_main(tree, url)

    monkeypatch.setattr(extract_module, "parse_bounded", parse)
    monkeypatch.setattr(extract_module, "_main_text", main_text)
    code, _, err = run(capsys, "near", str(page), "--db", sqlite_url)
    assert code == 0, err
    assert bodies == [DEFAULT_MAX_BYTES]
    assert trees == [MAX_ELEMENTS]


def test_workers_restarts_counts_every_replaced_worker(sqlite_url: str) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(
        Config(database_url=sqlite_url, workers=1, page_timeout=0.5), crawler.stats
    )
    page_filter.open()
    try:
        pool = page_filter.pool
        assert pool is not None
        for _ in range(2):
            wait_until(lambda: len(pool.pids) == 1, "a worker is ready")
            (pid,) = pool.pids
            os.kill(pid, signal.SIGSTOP)  # the page times out: its worker is replaced
            check = asyncio.run(page_filter.check("https://h.example/", None, ARTICLE))
            assert check.error is not None
        wait_until(lambda: pool.restarts == 2, "the second worker was replaced")
    finally:
        page_filter.close()
    assert pool.restarts == 2
    assert crawler.stats.get_value(WORKER_STATS + "restarts") == 2
