"""The page workers' zygote: workers forked from one preloaded interpreter sign as the crawler
process does, die, time out and are replaced as fresh workers are, and leave nothing behind;
without the zygote the workers start on their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from multiprocessing.connection import wait
from pathlib import Path

import pytest
from support.hostile import SPIN, SpinningFingerprinter
from support.processes import gone, killed_script, wait_until

from crawler.articles import HARBOUR_BRIDGE, WASTE_SORTING_ZH
from crawler.testsite import news_template
from crawler.workers import descendants
from simhash_filter.crawl.config import Config
from simhash_filter.page.pool import PageJob, PagePool, WorkerDied, _Worker
from simhash_filter.page.work import sign_page
from simhash_filter.page.worker import Setup
from simhash_filter.page.zygote import Zygote, can_fork, fork_refusal

pytestmark = pytest.mark.skipif(not can_fork(), reason="workers are forked on Linux only")

NEWS = news_template(HARBOUR_BRIDGE, date="12 March 2024").encode()
WASTE = "\n\n".join(WASTE_SORTING_ZH.paragraphs)
MAX_BYTES = 2 * 1024 * 1024


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.fixture
def pool() -> Iterator[PagePool]:
    pool = PagePool(2, Config().make_fingerprinter(), max_bytes=MAX_BYTES, page_timeout=600)
    pool.start()
    try:
        yield pool
    finally:
        pool.close()


def test_the_workers_are_forked_from_one_zygote_and_sign_alike(pool: PagePool) -> None:
    zygote = pool.zygote_pid
    assert zygote is not None
    assert parent_of(zygote) == os.getpid()
    assert len(pool.pids) == 2
    assert all(parent_of(pid) == zygote for pid in pool.pids)
    fingerprinter = Config().make_fingerprinter()
    jobs = [
        PageJob("https://x.example/news", None, NEWS),
        PageJob("https://x.example/zh", WASTE, None),
        PageJob("https://x.example/short", "too short", None),
    ]
    for job, future in [(job, pool.submit(job)) for job in jobs]:
        expected = sign_page(fingerprinter, job.url, job.text, job.html, max_bytes=MAX_BYTES)
        assert future.result().signature == expected


def test_a_killed_worker_is_replaced_by_a_fork(pool: PagePool) -> None:
    zygote = pool.zygote_pid
    killed = pool.pids[0]
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: gone(killed), "the worker died")
    results = [pool.submit(PageJob(f"https://x.example/{n}", None, NEWS)) for n in range(6)]
    failed = [f for f in results if isinstance(f.exception(), WorkerDied)]
    assert len(failed) <= 1  # the page the dead worker was handed, if any
    assert all(f.result().signature is not None for f in results if f not in failed)
    wait_until(lambda: len(pool.pids) == 2, "the dead worker was replaced")
    assert killed not in pool.pids
    assert all(parent_of(pid) == zygote for pid in pool.pids)
    wait_until(lambda: killed not in descendants(zygote), "the zygote reaped the dead worker")


def test_without_its_zygote_a_replacement_starts_on_its_own(pool: PagePool) -> None:
    zygote = pool.zygote_pid
    assert zygote is not None
    os.kill(zygote, signal.SIGKILL)
    killed = pool.pids[0]
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: gone(killed), "the worker died")
    results = [pool.submit(PageJob(f"https://x.example/{n}", None, NEWS)) for n in range(6)]
    ok = [f.result() for f in results if f.exception() is None]
    assert len(ok) >= 5
    assert all(r.signature is not None for r in ok)
    wait_until(lambda: killed not in pool.pids and len(pool.pids) == 2, "a replacement started")
    fresh = [pid for pid in pool.pids if parent_of(pid) == os.getpid()]
    assert len(fresh) == 1  # the other worker is the zygote's orphan, still serving


def test_fork_workers_false_starts_every_worker_on_its_own() -> None:
    pool = PagePool(
        2, Config().make_fingerprinter(), max_bytes=MAX_BYTES, page_timeout=600, fork_workers=False
    )
    pool.start()
    try:
        assert pool.zygote_pid is None
        assert all(parent_of(pid) == os.getpid() for pid in pool.pids)
        assert pool.submit(PageJob("https://x.example/news", None, NEWS)).result().signature
    finally:
        pool.close()


def test_a_forked_worker_past_its_page_budget_reports_sigxcpu() -> None:
    """The worker's own RLIMIT_CPU ends it; its exit status comes through the zygote."""
    fingerprinter = SpinningFingerprinter()
    zygote = Zygote.start(Setup(fingerprinter, 1000, 1.0, 0), 120)
    try:
        worker = _Worker.fork(zygote, fingerprinter)
        try:
            worker.conn.send(PageJob("https://h.example/spin", SPIN, None))
            assert wait([worker.conn], timeout=300)  # end-of-file: the worker is gone
            assert worker.process.wait(timeout=60) == -signal.SIGXCPU
        finally:
            worker.kill()
    finally:
        zygote.close()


def test_the_zygote_and_its_workers_end_when_the_crawler_process_is_killed(
    tmp_path: Path,
) -> None:
    source = """
        import sys
        from simhash_filter.crawl.config import Config
        from simhash_filter.page.pool import PagePool

        pool = PagePool(2, Config().make_fingerprinter(), max_bytes=1000, page_timeout=60)
        pool.start()
        print(pool.zygote_pid, *pool.pids, flush=True)
        sys.stdin.read()  # until killed
        """
    with killed_script(tmp_path / "owner.py", source) as (owner, pids):
        assert len(pids) == 3
        assert set(pids) <= descendants(owner.pid)
    wait_until(lambda: all(gone(pid) for pid in pids), "the zygote and the workers ended")


def test_no_fork_from_a_process_with_threads() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        refusal = fork_refusal()
    finally:
        stop.set()
        thread.join()
    assert refusal is not None
    assert "threads" in refusal


@pytest.mark.parametrize("fork_workers", [True, False])
def test_workers_run_nicer_than_the_crawler_by_the_niceness(fork_workers: bool) -> None:
    """Forked or started on their own, and a replacement too: the crawler's event loop, the
    crawl's serial part, wins the CPU over the page work it feeds."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    pool = PagePool(
        2,
        Config().make_fingerprinter(),
        max_bytes=MAX_BYTES,
        page_timeout=600,
        niceness=7,
        fork_workers=fork_workers,
    )
    pool.start()
    try:
        expected = min(ours + 7, 19)
        assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids] == [expected] * 2
        killed = pool.pids[0]
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: gone(killed), "the worker died")
        for n in range(4):  # one of them finds the dead worker: it is replaced
            pool.submit(PageJob(f"https://x.example/{n}", None, NEWS)).exception()
        wait_until(lambda: killed not in pool.pids and len(pool.pids) == 2, "a replacement")
        assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids] == [expected] * 2
    finally:
        pool.close()


def test_niceness_out_of_range_is_refused() -> None:
    for niceness in (-1, 20):
        with pytest.raises(ValueError, match="niceness"):
            PagePool(
                1,
                Config().make_fingerprinter(),
                max_bytes=MAX_BYTES,
                page_timeout=60,
                niceness=niceness,
            )


def test_the_warm_up_builds_what_the_fallback_pass_needs_before_the_fork() -> None:
    """justext's stoplists (every language, built on the fallback pass's first use) are
    built by the warm-up the zygote runs before it forks, so no worker builds its own."""
    script = (
        "import trafilatura.external as external\n"
        "from simhash_filter.crawl.config import Config\n"
        "from simhash_filter.page.worker import _warm_up\n"
        "assert external.JT_STOPLIST is None\n"
        "_warm_up(Config().make_fingerprinter(), 2 * 1024 * 1024)\n"
        "assert external.JT_STOPLIST, 'the fallback pass was not warmed up'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
