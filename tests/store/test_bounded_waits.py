"""Every wait of a write has a bound: a table lock held by another session, a peer
SIGSTOPped inside its check-and-add (on each write path and on SQLite), and a group that
times out is not retried page by page with the full wait each.

The faults are real: another session's ``LOCK TABLE``, a peer process stopped with SIGSTOP
while it holds its locks. Each test asserts conditions (which pages were checked while the
lock was held, who the warning names); the one time it measures is the bound itself, with
a wide margin (the behaviour it replaces waited several times the bound).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from simhash_filter.crawl.pages.group_commit import GroupCommit
from simhash_filter.store import FingerprintStore, PageRow, StoreBusy, StoreOptions, VerdictKind
from simhash_filter.store.faults import WaitBounds

SPEC = "bounded-waits-test"
ROOT = Path(__file__).resolve().parents[2]
RNG = random.Random(32)
A = RNG.getrandbits(64)
A_COPY = A ^ 1  # one bit away: shares every band key with A
B = RNG.getrandbits(64)  # an unrelated page


def psycopg_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def state(pid: int) -> str:
    """The process state letter of ``pid`` (``T``: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


PEER = """
import os, signal, sys
import simhash_filter.store.{module} as module
from simhash_filter.store import FingerprintStore, StoreOptions

original = module.{hook}

def stop_here(*args, **kwargs):
    print("stopping", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)  # frozen where the hook is: inside the write
    return original(*args, **kwargs)

module.{hook} = stop_here
store = FingerprintStore.open(
    sys.argv[1], StoreOptions(spec={spec!r}, write_path=sys.argv[2] or None)
)
verdict = store.check_and_add("https://peer.example/a", {fingerprint})
print(verdict.kind.value, flush=True)
"""


class StoppedPeer:
    """A peer crawler process frozen (SIGSTOP) inside its check-and-add of page A."""

    def __init__(self, url: str, write_path: str, module: str, hook: str) -> None:
        code = PEER.format(module=module, hook=hook, spec=SPEC, fingerprint=A)
        self._start(code, url, write_path)

    @classmethod
    def running(cls, code: str, url: str) -> StoppedPeer:
        """A peer running ``code`` (it prints "stopping", stops itself, then its verdict)."""
        peer = cls.__new__(cls)
        peer._start(code, url, "")
        return peer

    def _start(self, code: str, url: str, write_path: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), url, write_path],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "stopping"
        for _ in range(1000):  # the condition: the kernel says it is stopped
            if state(self.process.pid) == "T":
                break
            time.sleep(0.01)
        assert state(self.process.pid) == "T"

    def resume(self) -> str:
        """Let it finish; its verdict."""
        os.kill(self.process.pid, signal.SIGCONT)
        assert self.process.stdout is not None
        verdict = self.process.stdout.readline().strip()
        assert self.process.wait(timeout=60) == 0
        return verdict

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def peers() -> Iterator[list[StoppedPeer]]:
    made: list[StoppedPeer] = []
    try:
        yield made
    finally:
        for peer in made:
            peer.kill()


def in_thread(call: Any, bound: float) -> Any:
    """``call()`` in a thread that must end within ``bound`` seconds (a wait without a
    bound fails the test instead of hanging it); its result or its exception."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(bound)
    assert not thread.is_alive(), f"the call waited more than {bound} s"
    return outcome[0]


# -- PostgreSQL: a table lock held by another session -----------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("write_path", ["pg-function", "pg-pipeline"])
def test_a_table_lock_times_out_within_the_bound_naming_its_holder(
    pg_url: str, write_path: str
) -> None:
    store = FingerprintStore.open(
        pg_url, StoreOptions(spec=SPEC, write_path=write_path, bounds=WaitBounds(0.5))
    )
    try:
        assert store.check_and_add("https://x.example/b", B).kind is VerdictKind.NEW
        with psycopg.connect(psycopg_url(pg_url), application_name="table-locker") as locker:
            locker.execute("LOCK TABLE pages IN ACCESS EXCLUSIVE MODE")
            holder_pid = locker.info.backend_pid
            busy = in_thread(lambda: store.check_and_add("https://x.example/a", A), 30)
            assert isinstance(busy, StoreBusy), busy
            message = str(busy)
            assert "lock timeout" in message
            assert f"backend pid {holder_pid} ('table-locker'" in message
            assert "AccessExclusiveLock on pages" in message
            assert busy.whole_database  # a table lock: every write waits for it
            # a group commit meeting it: every page gets the error, none is tried alone
            commits = GroupCommit(lambda: store)
            rows = [PageRow(f"https://x.example/{n}", RNG.getrandbits(64)) for n in range(3)]
            results = in_thread(lambda: commits.add_rows(rows), 30)
            assert all(isinstance(result, StoreBusy) for result in results)
            assert len({id(result) for result in results}) == 1  # one error: one wait
            locker.rollback()
        # the lock is gone: the same page is checked, and the session's bound is intact
        assert store.check_and_add("https://x.example/a", A).kind is VerdictKind.NEW
    finally:
        store.close()


# -- a peer frozen inside its check-and-add ---------------------------------------------


@pytest.mark.postgres
def test_a_peer_stopped_in_its_transaction_holds_only_its_own_keys_for_the_bound(
    pg_url: str, peers: list[StoppedPeer]
) -> None:
    """pg-pipeline: a peer stopped between its two round trips holds its advisory locks;
    a copy of its page times out naming it, every other page is checked meanwhile."""
    FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, write_path="pg-pipeline")).close()
    peer = StoppedPeer(pg_url, "pg-pipeline", "pg_pipeline", "decide_batch")
    peers.append(peer)
    store = FingerprintStore.open(
        pg_url, StoreOptions(spec=SPEC, write_path="pg-pipeline", bounds=WaitBounds(0.5))
    )
    try:
        busy = in_thread(lambda: store.check_and_add("https://x.example/a-copy", A_COPY), 30)
        assert isinstance(busy, StoreBusy), busy
        assert f"'simhash-filter pid {peer.process.pid}'" in str(busy)  # names the peer
        assert "ExclusiveLock (advisory)" in str(busy)
        assert not busy.whole_database  # a page's own locks: other pages may go on
        # the group commit: the group times out on the copy, then each page is tried alone
        # with a short wait: the unrelated pages are checked while the peer is stopped
        commits = GroupCommit(lambda: store)
        rows = [PageRow("https://x.example/a-copy", A_COPY)] + [
            PageRow(f"https://x.example/other{n}", RNG.getrandbits(64)) for n in range(4)
        ]
        results = in_thread(lambda: commits.add_rows(rows), 30)
        assert isinstance(results[0], StoreBusy)
        assert [r.kind for r in results[1:]] == [VerdictKind.NEW] * 4
        assert state(peer.process.pid) == "T"  # ...all of that while it was stopped
        assert peer.resume() == "new"
        verdict = store.check_and_add("https://x.example/a-copy", A_COPY)
        assert verdict.kind is VerdictKind.DUPLICATE
        assert verdict.duplicate_of is not None
        assert verdict.duplicate_of.url == "https://peer.example/a"
    finally:
        store.close()


@pytest.mark.postgres
def test_a_peer_stopped_on_the_one_round_trip_path_holds_nothing(
    pg_url: str, peers: list[StoppedPeer]
) -> None:
    """pg-function: the check is one statement in autocommit, so a peer stopped as its
    verdict comes back holds no lock: a copy of its page is dropped at once."""
    FingerprintStore.open(pg_url, StoreOptions(spec=SPEC, write_path="pg-function")).close()
    peer = StoppedPeer(pg_url, "pg-function", "pg_function", "_verdict")
    peers.append(peer)
    store = FingerprintStore.open(
        pg_url, StoreOptions(spec=SPEC, write_path="pg-function", bounds=WaitBounds(0.5))
    )
    try:
        verdict = in_thread(lambda: store.check_and_add("https://x.example/a-copy", A_COPY), 30)
        assert verdict.kind is VerdictKind.DUPLICATE
        assert store.check_and_add("https://x.example/b", B).kind is VerdictKind.NEW
        assert state(peer.process.pid) == "T"
        assert peer.resume() == "new"
    finally:
        store.close()


def test_sqlite_a_stopped_peer_costs_one_bound_not_two_and_not_one_a_page(
    tmp_path: Path, peers: list[StoppedPeer], caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite: a peer stopped inside its write holds the writer lock and SQLite's write
    lock. The writer-lock wait and the busy wait share one bound; a group that times out
    is not tried again page by page (every page needs the one write lock); and the next
    group does not wait for the writer lock file again while its holder is stuck."""
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    bound = 2.0
    store = FingerprintStore.open(
        url, StoreOptions(spec=SPEC, bounds=WaitBounds(bound))
    )  # before the stop
    peer = StoppedPeer(url, "", "sqlalchemy_path", "decide_batch")
    peers.append(peer)
    calls: list[str] = []
    add_many = store.add_many

    def counted(rows: Any, **kwargs: Any) -> Any:
        rows = list(rows)
        if len(rows) == 1:  # a page tried alone
            calls.append(rows[0].url)
        return add_many(rows, **kwargs)

    store.add_many = counted  # type: ignore[method-assign]
    try:
        commits = GroupCommit(lambda: store)
        rows = [PageRow(f"https://x.example/{n}", RNG.getrandbits(64)) for n in range(3)]
        began = time.monotonic()
        results = in_thread(lambda: commits.add_rows(rows), 60)
        waited = time.monotonic() - began
        assert all(isinstance(r, StoreBusy) and r.whole_database for r in results), results
        assert "database is locked" in str(results[0])
        assert calls == []  # no page tried again alone
        # one bound, not the writer lock's and then SQLite's (2 x), nor 4 x (the batch,
        # then each of its 3 pages): the margin is wide for a loaded machine
        assert waited < 1.75 * bound, waited
        again = in_thread(lambda: commits.add_rows(rows), 60)  # the next group: still busy,
        assert all(isinstance(r, StoreBusy) for r in again)
        writer_lock = [r for r in caplog.records if "writer lock" in r.getMessage()]
        assert len(writer_lock) == 1  # ...without a second wait for the stuck lock file
        assert state(peer.process.pid) == "T"
        assert peer.resume() == "new"
        assert [r.kind for r in commits.add_rows(rows)] == [VerdictKind.NEW] * 3
    finally:
        store.close()


# -- the pieces, without a server ------------------------------------------------------


def test_session_options_bound_every_wait_and_keep_the_urls_own() -> None:
    from sqlalchemy.engine import make_url

    from simhash_filter.store.engine import server_connect_args
    from simhash_filter.store.faults import session_options

    bounds = WaitBounds(lock_timeout=2.5, outage_retry=1)
    assert session_options(bounds) == (
        "-c lock_timeout=2500 -c statement_timeout=10000 "
        "-c idle_in_transaction_session_timeout=10000"
    )
    assert session_options(WaitBounds()) is None  # no bound asked: the server's own
    url = make_url("postgresql+psycopg://u@h/d?options=-c%20lock_timeout%3D100")
    args = server_connect_args(url, bounds)
    assert args["options"].endswith("-c lock_timeout=100")  # the URL's own comes last: it wins
    assert args["application_name"].startswith("simhash-filter pid ")
    named = make_url("postgresql+psycopg://u@h/d?application_name=mine")
    assert "application_name" not in server_connect_args(named, bounds)
    with pytest.raises(ValueError, match="lock_timeout"):
        WaitBounds(lock_timeout=0)


@pytest.mark.parametrize(
    ("sqlstate", "message", "outage", "lock_timeout"),
    [
        (None, "connection failed: ... Connection refused", True, False),
        (None, "FATAL:  the database system is starting up", True, False),
        ("57P01", "terminating connection due to administrator command", True, False),
        ("57P03", "the database system is shutting down", True, False),
        ("08006", "server closed the connection unexpectedly", True, False),
        ("55P03", "canceling statement due to lock timeout", False, True),
        ("57014", "canceling statement due to statement timeout", False, True),
        ("23505", "duplicate key value violates unique constraint", False, False),
        ("42P01", 'relation "pages" does not exist', False, False),
    ],
)
def test_outages_and_lock_timeouts_are_told_apart(
    sqlstate: str | None, message: str, outage: bool, lock_timeout: bool
) -> None:
    from simhash_filter.store.faults import is_lock_timeout, is_outage

    error = Exception(message)
    error.sqlstate = sqlstate  # type: ignore[attr-defined]
    assert (is_outage(error), is_lock_timeout(error)) == (outage, lock_timeout)


SWAPPING_PEER = """
import os, signal, sys
from crawler.articles import ENGLISH_ARTICLES
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions
from simhash_filter.store.supersede import Superseder

original = Superseder._retire

def stop_here(*args, **kwargs):
    print("stopping", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)  # frozen inside the swap's transaction
    return original(*args, **kwargs)

Superseder._retire = stop_here
fingerprinter = Fingerprinter()
body = "\\n\\n".join(ENGLISH_ARTICLES[0].paragraphs)
canonical = "https://peer.example/bridge"

def row(url, edit):
    signature = fingerprinter.sign(body + edit)
    return PageRow(url, signature.fingerprint, signature.text_length, signature.sketch,
                   None, canonical)

store = FingerprintStore.open(sys.argv[1], StoreOptions(
    spec=fingerprinter.spec, rule=MatchRule(), write_path="pg-function"))
first, page = row(canonical + "?utm_source=rss", ""), row(canonical, " Share.")
store.check_and_add(first.url, first.fingerprint, text_length=first.text_length,
                    sketch=first.sketch, declared=canonical)
verdict = store.check_and_add(page.url, page.fingerprint, text_length=page.text_length,
                              sketch=page.sketch, declared=canonical)
swap = store.supersede(page, verdict.duplicate_of)
print("superseded" if swap is not None else "not superseded", flush=True)
"""


@pytest.mark.postgres
def test_a_peer_stopped_in_the_keep_policy_swap_delays_a_copy_one_bound(
    pg_url: str, peers: list[StoppedPeer]
) -> None:
    """pg-function, the keep policy's swap (store/supersede.py): several round trips in one
    transaction under the advisory locks of both pages' keys. A peer stopped inside it holds
    them: a copy of its cluster times out once, naming it, and every other page is checked
    meanwhile; once it goes on, the copy is dropped as a copy of the page the swap kept."""
    from crawler.articles import ENGLISH_ARTICLES
    from simhash_filter.core.fingerprint import Fingerprinter
    from simhash_filter.core.signature import MatchRule

    fingerprinter = Fingerprinter()
    FingerprintStore.open(pg_url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())).close()
    peer = StoppedPeer.running(SWAPPING_PEER, pg_url)
    peers.append(peer)
    store = FingerprintStore.open(
        pg_url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule(), bounds=WaitBounds(0.5))
    )
    body = "\n\n".join(ENGLISH_ARTICLES[0].paragraphs)
    copy = fingerprinter.sign(body + " Print.")
    other = fingerprinter.sign("\n\n".join(ENGLISH_ARTICLES[1].paragraphs))
    assert copy is not None
    assert other is not None

    def check(url: str, signature: Any) -> Any:
        return store.check_and_add(
            url, signature.fingerprint, text_length=signature.text_length, sketch=signature.sketch
        )

    try:
        busy = in_thread(lambda: check("https://x.example/print/bridge", copy), 30)
        assert isinstance(busy, StoreBusy), busy
        assert f"'simhash-filter pid {peer.process.pid}'" in str(busy)
        assert "(advisory)" in str(busy)
        assert not busy.whole_database
        assert check("https://x.example/other", other).kind is VerdictKind.NEW
        assert state(peer.process.pid) == "T"  # all of that while the peer was stopped
        assert peer.resume() == "superseded"
        verdict = check("https://x.example/print/bridge", copy)
        assert verdict.kind is VerdictKind.DUPLICATE
        assert verdict.duplicate_of is not None
        assert verdict.duplicate_of.url == "https://peer.example/bridge"
    finally:
        store.close()
