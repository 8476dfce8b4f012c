"""Index faults the pipeline meets: a SQLite file locked by another process past the busy
timeout, a read-only database, a database made with another fingerprint spec, a database
URL with a password that must never reach a log or the CLI's output.

Each is a counted, logged, clear outcome: a page that cannot be checked passes (fail-open,
``simhash_filter/errors``) or is held back (fail-closed, ``FilterUnavailable``); a database
that cannot be used at all stops the crawl at start with a message that says why.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import SiteServer, build_site, run_scrapy
from support.helpers import make_pipeline, run, stat

from crawler.articles import HARBOUR_BRIDGE, LIBRARY, NIGHT_TRAINS, URBAN_BEES
from simhash_filter.crawl.pages.pipeline import FilterUnavailable
from simhash_filter.store import FingerprintStore, SchemeMismatchError, StoreError, StoreOptions

TEXTS = ["\n\n".join(a.paragraphs) for a in (HARBOUR_BRIDGE, URBAN_BEES, NIGHT_TRAINS, LIBRARY)]
PASSWORD = "s3cr3t-Pa55"


def item(n: int) -> dict[str, str]:
    return {"url": f"https://faults.example/{n}", "text": TEXTS[n]}


# -- SQLite locked by another process -------------------------------------------------


@pytest.fixture
def locker(tmp_path: Path) -> Iterator[Any]:
    """Another process holding the write lock of ``tmp_path/dedup.db`` until released."""
    path = tmp_path / "dedup.db"
    processes: list[subprocess.Popen[str]] = []

    def lock() -> None:
        code = (
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
        )
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        processes.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "locked"

    def release() -> None:
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
        processes.clear()

    lock.release = release  # type: ignore[attr-defined]
    try:
        yield lock
    finally:
        release()


def test_sqlite_locked_past_the_busy_timeout_fail_open(
    tmp_path: Path, locker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'dedup.db'}?timeout=0.3"
    pipeline = make_pipeline(url)
    assert run(pipeline.process_item(item(0))) is not None
    locker()
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        passed = run(pipeline.process_item(item(1)))  # waits 0.3 s once, then gives up
    assert passed["url"] == item(1)["url"]
    assert stat(pipeline, "errors") == 1
    message = caplog.text
    assert "Could not check https://faults.example/1" in message
    assert "database is locked" in message
    assert "?timeout=<seconds>" in message  # ...and how to wait longer
    assert stat(pipeline, "unchecked/journaled") == 1
    locker.release()
    run(pipeline.process_item(item(2)))  # the lock is gone: checked and kept again
    assert stat(pipeline, "kept") == 2
    run(pipeline.close_spider())
    assert stat(pipeline, "unchecked/caught_up") == 1  # ...and the page that passed unchecked
    with FingerprintStore.open_existing(f"sqlite:///{tmp_path / 'dedup.db'}") as store:
        assert store.lookup(item(1)["url"]) is not None  # is in the index after all
        assert store.lookup(item(2)["url"]) is not None


def test_sqlite_locked_past_the_busy_timeout_fail_closed(tmp_path: Path, locker: Any) -> None:
    url = f"sqlite:///{tmp_path / 'dedup.db'}?timeout=0.2"
    pipeline = make_pipeline(url, FAIL_OPEN=False)
    locker()
    with pytest.raises(FilterUnavailable, match="database is locked"):
        run(pipeline.process_item(item(0)))
    assert stat(pipeline, "errors") == 1
    assert stat(pipeline, "kept") == 0
    run(pipeline.close_spider())


def test_sqlite_locked_when_the_crawl_starts(tmp_path: Path, locker: Any) -> None:
    FingerprintStore.open(f"sqlite:///{tmp_path / 'dedup.db'}", StoreOptions(spec="x")).close()
    (tmp_path / "dedup.db").unlink()  # a fresh file, locked before the index exists
    (tmp_path / "dedup.db").touch()
    locker()
    pipeline = make_pipeline(f"sqlite:///{tmp_path / 'dedup.db'}?timeout=0.2", open_=False)
    with pytest.raises(StoreError, match=r"cannot open sqlite:///.*: database is locked"):
        run(pipeline.open_spider())
    assert (tmp_path / "dedup.db").exists()  # empty, but not made by this crawl: it stays


def test_sqlite_busy_timeout_must_be_a_number(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="timeout in a SQLite URL must be a number"):
        FingerprintStore.open(f"sqlite:///{tmp_path / 'd.db'}?timeout=soon", StoreOptions(spec="x"))


# -- read-only database ---------------------------------------------------------------


def test_read_only_database_pages_pass_counted_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "dedup.db"
    writer = make_pipeline(f"sqlite:///{path}")
    run(writer.process_item(item(0)))
    run(writer.close_spider())
    reader = make_pipeline(f"sqlite:///file:{path}?mode=ro&uri=true")  # opens: it can read
    with caplog.at_level(logging.WARNING, logger="simhash_filter"):
        assert run(reader.process_item(item(1)))["url"] == item(1)["url"]
    assert stat(reader, "errors") == 1
    assert "attempt to write a readonly database" in caplog.text
    run(reader.close_spider())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only files anyway")
def test_read_only_database_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "dedup.db"
    writer = make_pipeline(f"sqlite:///{path}")
    run(writer.process_item(item(0)))
    run(writer.close_spider())
    path.chmod(0o444)
    try:
        pipeline = make_pipeline(f"sqlite:///{path}", open_=False)
        refused: str | None = None
        try:
            run(pipeline.open_spider())
        except StoreError as exc:
            refused = str(exc)
        if refused is not None:  # refused at start: says why
            assert "readonly" in refused or "unable to open" in refused
            return
        with caplog.at_level(logging.WARNING, logger="simhash_filter"):
            run(pipeline.process_item(item(1)))
        assert stat(pipeline, "errors") == 1
        assert "readonly" in caplog.text
        run(pipeline.close_spider())
    finally:
        path.chmod(0o644)


# -- a database made with another fingerprint spec ------------------------------------


def test_other_spec_database_refused_at_start_saying_what_differs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    FingerprintStore.open(url, StoreOptions(spec="simhash-filter/0;f=64;weight=binary")).close()
    pipeline = make_pipeline(url, open_=False)
    with pytest.raises(SchemeMismatchError) as refused:
        run(pipeline.open_spider())
    message = str(refused.value)
    assert "holds fingerprints made with another spec" in message
    assert "stored spec has 'simhash-filter/0;weight=binary'" in message
    assert "simhash-filter import" in message  # how to get out of it


@pytest.mark.slow
def test_other_spec_database_stops_a_real_crawl_before_any_page(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    FingerprintStore.open(url, StoreOptions(spec="simhash-filter/0;f=64;weight=binary")).close()
    with SiteServer(build_site(huge_page_bytes=1000)) as site:
        result = run_scrapy(
            ["crawl", "site", "-a", f"start_url={site.base_url}/"],
            cwd=tmp_path,
            settings={"SIMHASH_FILTER_DATABASE_URL": url},
        )
        requested = list(site.requested)
    assert result.returncode != 0
    assert "SchemeMismatchError" in result.log
    assert "holds fingerprints made with another spec" in result.log
    for noise in ("AssertionError", "Task exception was never retrieved"):
        assert noise not in result.log
    assert requested == []  # not one page fetched, none let through unchecked
    assert result.items == []


# -- a full disk when the crawl starts -------------------------------------------------

FULL_DISK = """
mount -t tmpfs -o size=64k simhash-filter-full "$1" || exit 97
head -c 1M /dev/zero > "$1/filler" 2>/dev/null
[ "$(df --output=avail "$1" | tail -n 1 | tr -d ' ')" = 0 ] || exit 98
shift
"$@"
status=$?
ls -A /full > /listing/after
exit $status
"""


def full_disk_wrapper(folder: Path, listing: Path) -> list[str]:
    """A command that runs the command appended to it with ``folder`` on a full file
    system: a 64 KB tmpfs filled up, mounted in a mount namespace of the command's own (as
    root, or as a user through a user namespace), so nothing is left mounted; it writes
    the names in ``folder`` when the command has ended to ``listing``."""
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    script = FULL_DISK.replace("/full", str(folder)).replace("/listing/after", str(listing))
    return ["unshare", *user, "--mount", "sh", "-c", script, "sh", str(folder)]


@pytest.mark.slow
def test_full_disk_at_start_stops_the_crawl_with_one_clear_error(tmp_path: Path) -> None:
    full, listing = tmp_path / "full", tmp_path / "listing"
    full.mkdir()
    url = f"sqlite:///{full / 'dedup.db'}"
    with SiteServer(build_site(huge_page_bytes=1000)) as site:
        result = run_scrapy(
            ["crawl", "site", "-a", f"start_url={site.base_url}/"],
            cwd=tmp_path,
            settings={"SIMHASH_FILTER_DATABASE_URL": url},
            wrapper=full_disk_wrapper(full, listing),
        )
        requested = list(site.requested)
    assert result.returncode == 1, result.log  # as for a database of another spec
    errors = [line for line in result.log.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.log
    assert f"cannot open {url}: database or disk is full" in errors[0]
    for noise in ("Traceback", "AssertionError", "Task exception was never retrieved"):
        assert noise not in result.log
    assert requested == []  # not one page fetched, none let through unchecked
    assert result.items == []
    left = listing.read_text().split()
    assert "dedup.db" not in left  # no empty database left behind
    assert "dedup.db-lock" not in left  # nor its writer lock file


# -- passwords in database URLs -------------------------------------------------------

CLOSED_PORT_URL = f"postgresql+psycopg://crawler:{PASSWORD}@127.0.0.1:1/dedup"


def test_password_not_in_the_error_or_the_log(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = make_pipeline(CLOSED_PORT_URL, open_=False)
    with caplog.at_level(logging.DEBUG), pytest.raises(StoreError) as failed:
        run(pipeline.open_spider())
    assert "crawler:***@127.0.0.1:1/dedup" in str(failed.value)
    assert PASSWORD not in str(failed.value)
    assert PASSWORD not in repr(failed.value)
    assert PASSWORD not in caplog.text


@pytest.mark.slow
def test_password_not_in_a_real_crawl_log(tmp_path: Path) -> None:
    with SiteServer(build_site(huge_page_bytes=1000)) as site:
        result = run_scrapy(
            ["crawl", "site", "-a", f"start_url={site.base_url}/"],
            cwd=tmp_path,
            settings={"SIMHASH_FILTER_DATABASE_URL": CLOSED_PORT_URL, "LOG_LEVEL": "DEBUG"},
        )
    assert result.returncode != 0
    assert "crawler:***@127.0.0.1:1/dedup" in result.log
    assert PASSWORD not in result.log
    stats_file = tmp_path / "stats.json"
    if stats_file.exists():
        assert PASSWORD not in stats_file.read_text()


@pytest.mark.parametrize("debug", [False, True])
def test_password_not_in_cli_output(tmp_path: Path, debug: bool) -> None:
    command = [sys.executable, "-m", "simhash_filter", "--db", CLOSED_PORT_URL]
    if debug:
        command.append("--debug")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for args in (["stats"], ["dupes"], ["lookup", "https://example.com/"]):
        proc = subprocess.run(
            [*command, *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )
        assert proc.returncode != 0
        assert "crawler:***@127.0.0.1:1/dedup" in proc.stderr
        assert PASSWORD not in proc.stdout + proc.stderr
    env["SIMHASH_FILTER_DATABASE_URL"] = CLOSED_PORT_URL  # from the environment
    proc = subprocess.run(
        [sys.executable, "-m", "simhash_filter", "stats"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert PASSWORD not in proc.stdout + proc.stderr
