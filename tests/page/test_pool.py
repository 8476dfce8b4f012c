"""The page pool with real worker processes: same signatures as in-process, faults that cost
one page, and no worker left behind (close, crawler killed, crawl stopped by a signal)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request
from support.helpers import make_middleware, make_pipeline, run, stat
from support.processes import gone, killed_script, wait_until

from crawler.articles import HARBOUR_BRIDGE, URBAN_BEES, WASTE_SORTING_ZH
from crawler.testsite import blog_template, news_template
from crawler.workers import crawl_command, descendants, project_env
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.pipeline import FilterUnavailable, NearDuplicate
from simhash_filter.page.pool import (
    PageJob,
    PagePool,
    PageTimeout,
    PoolClosed,
    PoolNotStarted,
    WorkerDied,
)
from simhash_filter.page.work import sign_page

NEWS = news_template(HARBOUR_BRIDGE, date="12 March 2024").encode()
BLOG = blog_template(HARBOUR_BRIDGE, date="March 13", comments=True).encode()
BEES = news_template(URBAN_BEES, date="5 April 2024")
WASTE = "\n\n".join(WASTE_SORTING_ZH.paragraphs)
MAX_BYTES = 2 * 1024 * 1024


@pytest.fixture
def pool() -> Iterator[PagePool]:
    pool = PagePool(1, Config().make_fingerprinter(), max_bytes=MAX_BYTES, page_timeout=600)
    pool.start()
    try:
        yield pool
    finally:
        pool.close()


def test_workers_sign_as_the_crawler_process_does() -> None:
    fingerprinter = Config().make_fingerprinter()
    pool = PagePool(2, fingerprinter, max_bytes=MAX_BYTES, page_timeout=600)
    pool.start()
    try:
        assert len(pool.pids) == 2
        jobs = [
            PageJob("https://x.example/news", None, NEWS),
            PageJob("https://x.example/bees", None, BEES),
            PageJob("https://x.example/zh", WASTE, None),
            PageJob("https://x.example/short", "too short", None),
            PageJob("https://x.example/binary", None, bytes(range(256)) * 10),
        ]
        results = [f.result() for f in [pool.submit(job) for job in jobs]]
        for job, result in zip(jobs, results, strict=True):
            expected = sign_page(fingerprinter, job.url, job.text, job.html, max_bytes=MAX_BYTES)
            assert result.signature == expected
            assert result.busy_seconds >= result.cpu_seconds * 0.5 >= 0
            assert result.wait_seconds >= 0
        # the short text is signed by its exact-content key; the binary page has no content
        assert [r.signature is None for r in results] == [False, False, False, False, True]
        assert [r.signature.exact for r in results[:4] if r.signature] == [0, 0, 0, 1]
    finally:
        pids = pool.pids
        pool.close()
    assert all(gone(pid) for pid in pids)
    assert pool.pids == []
    with pytest.raises(PoolClosed):
        pool.submit(jobs[0]).result()


def test_a_sigkilled_worker_costs_its_page_only(pool: PagePool) -> None:
    (pid,) = pool.pids
    os.kill(pid, signal.SIGSTOP)  # the worker holds the page and cannot answer
    held = pool.submit(PageJob("https://x.example/held", None, NEWS))
    wait_until(lambda: pool.in_work == 1, "the page reached the worker")
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match=f"pid {pid}"):
        held.result()
    after = pool.submit(PageJob("https://x.example/next", None, NEWS)).result()
    assert after.signature is not None
    assert pool.restarts == 1
    assert pool.pids != [pid]
    assert gone(pid)


def test_a_page_past_the_timeout_costs_that_page_only() -> None:
    pool = PagePool(1, Config().make_fingerprinter(), max_bytes=MAX_BYTES, page_timeout=0.5)
    pool.start()
    try:
        (pid,) = pool.pids
        os.kill(pid, signal.SIGSTOP)  # the page never finishes
        with pytest.raises(PageTimeout, match="SIMHASH_FILTER_PAGE_TIMEOUT"):
            pool.submit(PageJob("https://x.example/slow", None, NEWS)).result()
        assert gone(pid)  # killed, stopped as it was
        after = pool.submit(PageJob("https://x.example/next", None, NEWS)).result()
        assert after.signature is not None
        assert pool.restarts == 1
    finally:
        pool.close()


def test_pages_queued_when_the_pool_closes_fail_and_nothing_is_left(pool: PagePool) -> None:
    (pid,) = pool.pids
    os.kill(pid, signal.SIGSTOP)
    held = pool.submit(PageJob("https://x.example/held", None, NEWS))
    wait_until(lambda: pool.in_work == 1, "the page reached the worker")
    queued = pool.submit(PageJob("https://x.example/queued", None, NEWS))
    os.kill(pid, signal.SIGKILL)  # as close() would after STOP_TIMEOUT, without the wait
    with pytest.raises(WorkerDied):
        held.result()
    pool.close()
    assert queued.done()
    assert all(gone(p) for p in [pid, *pool.pids])


# -- both entry points ------------------------------------------------------------------


@pytest.mark.parametrize("fail_open", [True, False])
def test_pipeline_with_workers_a_killed_worker_is_one_error(
    sqlite_url: str, fail_open: bool
) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=1, FAIL_OPEN=fail_open)
    pool = pipeline.filter.pool
    assert pool is not None
    pool.ready.result()  # the crawl does not wait for it; the figure below does
    started = stat(pipeline, "workers/start_cpu_ms")
    first = {"url": "https://news.example/bridge", "html": NEWS}
    assert run(pipeline.process_item(first)) is first
    with pytest.raises(NearDuplicate, match=r"https://news\.example/bridge"):
        run(pipeline.process_item({"url": "https://blog.example/bridge", "html": BLOG}))
    (pid,) = pool.pids
    os.kill(pid, signal.SIGSTOP)

    async def kill_while_held() -> Any:
        page = asyncio.ensure_future(
            pipeline.process_item({"url": "https://portal.example/bees", "html": BEES})
        )
        await asyncio.to_thread(wait_until, lambda: pool.in_work == 1, "page in the worker")
        os.kill(pid, signal.SIGKILL)
        return await page

    if fail_open:
        assert run(kill_while_held())["url"] == "https://portal.example/bees"
    else:
        with pytest.raises(FilterUnavailable, match="WorkerDied"):
            run(kill_while_held())
    assert stat(pipeline, "errors") == 1
    # the crawl goes on with a new worker; the page that failed was not stored
    again = {"url": "https://portal.example/bees", "html": BEES}
    assert run(pipeline.process_item(again)) is again
    assert stat(pipeline, "kept") == 2
    assert stat(pipeline, "dropped") == 1
    assert stat(pipeline, "workers/restarts") == 1
    assert stat(pipeline, "workers/pages") == 3
    assert stat(pipeline, "workers/busy_ms") >= stat(pipeline, "workers/cpu_ms") // 2
    assert stat(pipeline, "workers/start_cpu_ms") > started  # the replacement's start too
    run(pipeline.close_spider())
    assert pipeline.filter.pool is None
    assert gone(pid)


def test_middleware_with_workers(sqlite_url: str) -> None:
    middleware = make_middleware(sqlite_url, WORKERS=2)
    pool = middleware.filter.pool
    assert pool is not None
    pool.ready.result()
    pids = pool.pids
    assert len(pids) == 2
    # set once started: the stats written when the spider closes (before the middleware's
    # own spider_closed handler has run) hold the workers' start
    assert stat(middleware, "workers/start_cpu_ms") > 0

    def response(url: str, body: bytes) -> HtmlResponse:
        return HtmlResponse(url, body=body, request=Request(url), encoding="utf-8")

    first = response("https://news.example/bridge", NEWS)
    assert run(middleware.process_response(first.request, first)) is first
    copy = response("https://blog.example/bridge", BLOG)
    with pytest.raises(IgnoreRequest, match=r"https://news\.example/bridge"):
        run(middleware.process_response(copy.request, copy))
    assert stat(middleware, "workers/pages") == 2
    run(middleware.spider_closed())
    assert all(gone(pid) for pid in pids)


def test_the_crawl_workers_run_at_the_configured_niceness(sqlite_url: str) -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    for setting, expected in ((None, 10), (3, 3), (0, 0)):
        extra = {} if setting is None else {"WORKER_NICENESS": setting}
        pipeline = make_pipeline(sqlite_url, WORKERS=1, **extra)
        pool = pipeline.filter.pool
        assert pool is not None
        pool.ready.result()
        (pid,) = pool.pids
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(ours + expected, 19)
        run(pipeline.close_spider())


def test_workers_zero_is_the_thread_path(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, WORKERS=0)
    assert pipeline.filter.pool is None
    run(pipeline.process_item({"url": "https://news.example/bridge", "html": NEWS}))
    assert stat(pipeline, "kept") == 1
    assert stat(pipeline, "workers/pages") == 0
    run(pipeline.close_spider())


def _held_start(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> threading.Event:
    """The pools started from now on wait for the returned event before their workers start
    (and then cannot start any, with ``fail``)."""
    go = threading.Event()
    start_all = PagePool._start_all

    def held(self: PagePool) -> None:
        go.wait()
        if fail:
            monkeypatch.setattr(PagePool, "_new_worker", _no_worker)
        start_all(self)

    monkeypatch.setattr(PagePool, "_start_all", held)
    return go


def _no_worker(self: PagePool) -> Any:
    raise WorkerDied("no worker here")


def test_a_pool_started_without_waiting_queues_pages_until_its_workers_are_ready(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    go = _held_start(monkeypatch)
    fingerprinter = Config().make_fingerprinter()
    pool = PagePool(1, fingerprinter, max_bytes=MAX_BYTES, page_timeout=600)
    pool.start(wait=False)  # returns while the start is held
    try:
        assert not pool.ready.done()
        future = pool.submit(PageJob("https://x.example/news", None, NEWS))
        assert not future.done()
        go.set()
        expected = sign_page(
            fingerprinter, "https://x.example/news", None, NEWS, max_bytes=MAX_BYTES
        )
        assert future.result().signature == expected
        assert pool.ready.result() is None
        assert len(pool.pids) == 1
    finally:
        go.set()
        pool.close()


def test_a_pool_that_cannot_start_fails_its_queued_pages_as_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    go = _held_start(monkeypatch, fail=True)
    pool = PagePool(1, Config().make_fingerprinter(), max_bytes=MAX_BYTES, page_timeout=600)
    pool.start(wait=False)
    queued = pool.submit(PageJob("https://x.example/news", None, NEWS))
    go.set()
    with pytest.raises(PoolNotStarted):
        queued.result()
    with pytest.raises(WorkerDied):
        pool.ready.result()
    with pytest.raises(PoolNotStarted):  # a page after the failure too
        pool.submit(PageJob("https://x.example/bees", BEES, None)).result()
    pool.close()


def test_pages_of_a_crawl_whose_workers_cannot_start_are_signed_in_threads(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    go = _held_start(monkeypatch, fail=True)
    pipeline = make_pipeline(sqlite_url, WORKERS=2)
    pool = pipeline.filter.pool
    assert pool is not None
    submit = pool.submit

    def submit_then_fail(job: PageJob) -> Any:
        future = submit(job)  # queued: now let the start fail
        go.set()
        return future

    monkeypatch.setattr(pool, "submit", submit_then_fail)
    first = {"url": "https://news.example/bridge", "html": NEWS}
    assert run(pipeline.process_item(first)) is first
    assert pipeline.filter.pool is None  # the rest of the crawl takes the thread path
    with pytest.raises(NearDuplicate, match=r"https://news\.example/bridge"):
        run(pipeline.process_item({"url": "https://blog.example/bridge", "html": BLOG}))
    assert stat(pipeline, "kept") == 1
    assert stat(pipeline, "dropped") == 1
    assert stat(pipeline, "errors") == 0
    assert stat(pipeline, "workers/pages") == 0
    assert "Could not start 2 near-duplicate page workers" in caplog.text
    run(pipeline.close_spider())


# -- no orphans: real processes ------------------------------------------------------------


def test_workers_end_when_the_crawler_process_is_killed(tmp_path: Path) -> None:
    source = """
        import sys
        from simhash_filter.crawl.config import Config
        from simhash_filter.page.pool import PagePool

        pool = PagePool(2, Config().make_fingerprinter(), max_bytes=1000, page_timeout=60)
        pool.start()
        print(*pool.pids, flush=True)
        sys.stdin.read()  # until killed
        """
    with killed_script(tmp_path / "owner.py", source) as (owner, pids):
        assert len(pids) == 2
        assert set(pids) <= descendants(owner.pid)
        assert not any(gone(pid) for pid in pids)
    wait_until(lambda: all(gone(pid) for pid in pids), "the workers saw end-of-file and ended")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_crawl_stopped_by_a_signal_leaves_no_worker(tmp_path: Path, signum: int) -> None:
    from support import SiteServer, build_site

    log_path = tmp_path / "crawl.log"
    settings = {
        "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'dedup.db'}",
        "SIMHASH_FILTER_WORKERS": 2,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": 2,
        "LOG_LEVEL": "INFO",
        "LOG_FILE": log_path,
        "STATS_FILE": tmp_path / "stats.json",
    }
    with SiteServer(build_site(), latency=0.3) as site:
        command = crawl_command(f"{site.base_url}/", settings)
        crawl = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=project_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, as a crawl started in a terminal
        )
        try:
            wait_until(
                lambda: "page workers (SIMHASH_FILTER_WORKERS)" in _text(log_path),
                "the page workers started",
            )
            line = next(x for x in _text(log_path).splitlines() if "SIMHASH_FILTER_WORKERS" in x)
            pids = [int(p) for p in line.rsplit("pids", 1)[1].split()]
            assert set(pids) <= descendants(crawl.pid)
            wait_until(lambda: len(site.hits) >= 3, "the crawl fetched pages")
            if signum == signal.SIGINT:  # Ctrl-C in a terminal: the whole process group
                os.killpg(crawl.pid, signum)
            else:
                os.kill(crawl.pid, signum)
            crawl.wait(timeout=300)
        finally:
            if crawl.poll() is None:
                os.killpg(crawl.pid, signal.SIGKILL)
                crawl.wait()
    log = _text(log_path)
    assert "Received SIG" in log, log[-3000:]
    assert "Spider closed (shutdown)" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert all(gone(pid) for pid in pids), "the crawl ended, its page workers are still there"


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""
