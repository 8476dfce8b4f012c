"""No credential of a database URL in any output or log (issue 10 item 3), and a connect
timeout for a PostgreSQL host that accepts and never answers (issue 12)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from support import SiteServer, build_site, run_scrapy
from support.cli_corpus import run

from simhash_filter.store import FingerprintStore, StoreError, StoreOptions, engine
from simhash_filter.store.urls import display_url, redact, url_secrets

SECRETS = ("Pw-userinfo-7f3a", "Pw-query-91c2", "Ssl-pass-44d1")


def secret_url(base: str, database: str | None = None) -> str:
    """``base`` (a PostgreSQL URL) with a password in its userinfo and two in its query
    (libpq's ``password`` and ``sslpassword``); ``database`` replaces its database name."""
    url = make_url(base).set(password=SECRETS[0])
    if database is not None:
        url = url.set(database=database)
    url = url.update_query_dict({"password": SECRETS[1], "sslpassword": SECRETS[2]})
    return url.render_as_string(hide_password=False)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"{secret} shown in:\n{text[-3000:]}"


# --- display_url and redact ------------------------------------------------------------


def test_display_url_hides_every_credential() -> None:
    url = (
        "postgresql+psycopg://crawler:p%40ss@db.example/dedup"
        "?password=q1&sslpassword=q2&api_key=q3&token=q4&application_name=crawl"
    )
    shown = display_url(url)
    assert shown == (
        "postgresql+psycopg://crawler:***@db.example/dedup?api_key=***&application_name=crawl"
        "&password=***&sslpassword=***&token=***"
    )
    assert display_url("sqlite:///dedup.db") == "sqlite:///dedup.db"
    assert display_url("postgresql+psycopg://u:secret@host:notaport/db") == (
        "<unparseable database URL>"
    )
    assert set(url_secrets(url)) >= {"p@ss", "p%40ss", "q1", "q2", "q3", "q4"}
    assert redact("auth failed for p@ss (q1, q4)", url) == "auth failed for *** (***, ***)"
    assert url_secrets("postgresql+psycopg://u:s3cr3t@host:notaport/db") == ["s3cr3t"]


# --- a failing CLI run and a working one -----------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["stats", "--debug"],
        ["dupes", "--json"],
        ["lookup", "https://example.com/"],
        ["near", "0123456789abcdef"],
        ["clusters"],
        ["export"],
        ["reindex", "--max-distance", "3"],
        ["import", "-"],
        ["import", "-", "--debug"],
    ],
)
def test_a_failing_cli_run_shows_no_secret(
    pg_url: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    url = secret_url(pg_url, database="simhash_no_such_database")
    code, out, err = run(capsys, *argv, "--db", url)
    assert code == 1
    assert 'database "simhash_no_such_database" does not exist' in err  # failed where we think
    assert_no_secret(out, err)


@pytest.mark.postgres
def test_a_failing_cli_process_shows_no_secret_with_the_url_in_the_environment(
    pg_url: str, tmp_path: Path
) -> None:
    url = secret_url(pg_url, database="simhash_no_such_database")
    env = {**os.environ, "SIMHASH_FILTER_DATABASE_URL": url}
    proc = subprocess.run(
        [sys.executable, "-m", "simhash_filter", "--debug", "stats"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr  # --debug: the traceback is there, redacted
    assert_no_secret(proc.stdout, proc.stderr)


@pytest.mark.postgres
def test_a_working_database_is_shown_without_its_secrets(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = secret_url(pg_url)  # trust authentication: any password is accepted
    FingerprintStore.open(url, StoreOptions(spec="simhash-test;secrets")).close()
    code, out, err = run(capsys, "stats", "--db", url)
    assert code == 0
    assert f"database            {display_url(url)}" in out.splitlines()
    assert_no_secret(out, err)


# --- a failing crawl -------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    with SiteServer(build_site()) as server:
        yield server


@pytest.mark.slow
@pytest.mark.postgres
def test_a_failing_crawl_logs_no_secret(pg_url: str, site: SiteServer, tmp_path: Path) -> None:
    url = secret_url(pg_url, database="simhash_no_such_database")
    result = run_scrapy(
        ["crawl", "site", "-a", f"start_url={site.url('/')}"],
        cwd=tmp_path,
        settings={
            "SIMHASH_FILTER_DATABASE_URL": url,
            "LOG_LEVEL": "DEBUG",
            "CLOSESPIDER_PAGECOUNT": 5,
        },
    )
    # the store's error is in the log
    assert 'database "simhash_no_such_database" does not exist' in result.log
    files = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert_no_secret(result.log, *files)


# --- connect timeout -------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel completes the handshake into
    the backlog) and never says a word."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_the_default_connect_timeout_ends_a_silent_server(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT_S", 2)  # the default, made short here
    url = f"postgresql+psycopg://crawler@127.0.0.1:{silent_server}/dedup"
    expected = f"cannot open {re.escape(url)}: connection timeout expired"
    with pytest.raises(StoreError, match=expected):
        FingerprintStore.open_existing(url)


def test_the_url_overrides_the_connect_timeout(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT_S", 3600)  # would hang the test
    url = f"postgresql+psycopg://crawler@127.0.0.1:{silent_server}/dedup?connect_timeout=2"
    with pytest.raises(StoreError, match="timeout"):
        FingerprintStore.open_existing(url)
    assert engine.server_connect_args(make_url(url)) == {}
    assert engine.server_connect_args(make_url("postgresql://h/d")) == {"connect_timeout": 3600}
    assert engine.server_connect_args(make_url("sqlite:///x.db")) == {}


def test_the_cli_ends_with_a_clear_error_on_a_silent_server(
    silent_server: int, tmp_path: Path
) -> None:
    url = f"postgresql+psycopg://crawler:{SECRETS[0]}@127.0.0.1:{silent_server}/dedup?connect_timeout=2"
    for argv in (["stats"], ["import", "-"]):
        proc = subprocess.run(
            [sys.executable, "-m", "simhash_filter", *argv, "--db", url],
            cwd=tmp_path,
            input="",
            capture_output=True,
            text=True,
            timeout=300,  # a guard: the timeout under test is 2 s
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith(f"simhash-filter: error: cannot open {display_url(url)}: "), (
            proc.stderr
        )
        assert "timeout" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert_no_secret(proc.stdout, proc.stderr)
