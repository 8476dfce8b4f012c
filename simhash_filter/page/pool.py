"""``PagePool``: the page work (extraction, tokenization, signatures) in worker processes.

trafilatura and jieba are pure Python for the most part: in threads of the crawler process
they share its GIL with the reactor, so a CPU-bound crawl that fingerprints raw HTML uses
one core. The pool runs :func:`~simhash_filter.page.work.work_page` in ``size`` worker
processes instead (:mod:`simhash_filter.page.worker`); the store and its transactions stay in
the crawler process. ``simhash-filter import --jobs N`` uses the same pool.

- Workers are fresh interpreters (``python -m simhash_filter.page.worker``, as the ``spawn``
  start method starts them, never a ``fork`` of a process running the Twisted reactor and
  its threads, and without re-running the crawler's main script as ``multiprocessing``
  would). Each loads trafilatura and jieba's dictionary once, then signs one page at a
  time sent over its own socket. On Linux the pool starts one such interpreter first, the
  zygote (:mod:`~simhash_filter.page.zygote`), which loads them once and forks every
  worker (replacements too): the workers' start-up is paid once, not once a worker. When
  the zygote cannot start or fork, workers start as fresh interpreters of their own.
- Each worker has a thread in the crawler process that hands it pages from one queue and
  waits for its answer, so the pool knows which page each worker holds: a worker that
  dies, or holds a page past ``page_timeout`` seconds (then it is killed), fails that page
  alone (:class:`WorkerDied`, :class:`PageTimeout`) and is replaced.
- :meth:`PagePool.close` stops the workers (and fails pages still queued). A worker also
  ends by itself as soon as the crawler process is gone, in the middle of a page too (the
  kernel signals it when its lifeline pipe closes: :func:`~.worker.die_with_parent`),
  so not even a SIGKILLed crawler leaves workers behind; and it ends itself when a page takes
  more than ``page_timeout`` CPU seconds (``RLIMIT_CPU``), with or without the crawler.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING

from .spawn import spawn
from .work import PageJob
from .worker import Setup, WorkerReply
from .zygote import ForkedProcess, Zygote, ZygoteError, can_fork

if TYPE_CHECKING:
    from simhash_filter.core.canonical import PageHints
    from simhash_filter.core.fingerprint import Fingerprinter
    from simhash_filter.core.signature import PageSignature

__all__ = [
    "DEFAULT_PAGE_TIMEOUT",
    "DEFAULT_WORKER_NICENESS",
    "MAX_NICENESS",
    "PageFailed",
    "PageJob",
    "PagePool",
    "PageResult",
    "PageTimeout",
    "PageWorkError",
    "PoolClosed",
    "PoolNotStarted",
    "WorkerDied",
    "default_workers",
    "usable_cpus",
]

logger = logging.getLogger(__name__)

MAX_DEFAULT_WORKERS = 6
"""One crawl process feeds about 3-5 busy workers before it is itself the limit (its share of
a page, Scrapy's included, against the page work: see bench/README.md); more would sit idle
holding ~125 MB each."""
DEFAULT_PAGE_TIMEOUT = 30.0
"""Seconds of page work in a worker before it is killed (``SIMHASH_FILTER_PAGE_TIMEOUT``)."""
DEFAULT_WORKER_NICENESS = 10
"""How much nicer than the crawl process the page workers run (``SIMHASH_FILTER_WORKER_NICENESS``):
the crawl's event loop is its one serial part, and on 2 cores it lost CPU to the workers it
feeds (see bench/README.md)."""
MAX_NICENESS = 19
"""The most a process can lower its priority by (Linux: nice 19)."""
READY_TIMEOUT = 120.0
"""Seconds a new worker may take to import trafilatura and load jieba's dictionary."""
STOP_TIMEOUT = 10.0
"""Seconds a worker asked to stop may take before it is killed."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_workers(cpus: int | None = None) -> int:
    """``SIMHASH_FILTER_WORKERS`` when unset: one worker per usable CPU (at most
    :data:`MAX_DEFAULT_WORKERS`), and 0 (the thread path) on a single CPU, where a worker
    process only adds the cost of moving pages between processes."""
    cpus = usable_cpus() if cpus is None else cpus
    return 0 if cpus < 2 else min(cpus, MAX_DEFAULT_WORKERS)


class PageWorkError(Exception):
    """The page work failed for one page (the message says why)."""


class PageFailed(PageWorkError):
    """The page work raised in the worker (the message holds the worker's traceback)."""

    def __init__(self, reason: str, traceback: str) -> None:
        super().__init__(f"the page work failed in a worker:\n{traceback}")
        self.reason = reason
        """``Type: message`` of the exception (one line)."""


class WorkerDied(PageWorkError):
    """The worker holding the page died (it was killed, or crashed) before answering."""


class PageTimeout(PageWorkError):
    """The page took longer than the page timeout; its worker was killed."""


class PoolClosed(PageWorkError):
    """The pool was closed before the page's turn came."""


class PoolNotStarted(PoolClosed):
    """The pool's workers did not start (:meth:`PagePool.start` with ``wait=False``): the
    page was never handed to a worker, and can be signed elsewhere."""


@dataclass(frozen=True, slots=True)
class PageResult:
    """A worker's answer for one page, with where its time went."""

    signature: PageSignature | None
    cpu_seconds: float
    """CPU time the worker spent on the page."""
    busy_seconds: float
    """From handing the page to a worker to its answer (the page's time in the pool)."""
    wait_seconds: float
    """Time the page waited in the queue for a free worker."""
    capped: tuple[str, ...] = ()
    """The caps the page met (:class:`~simhash_filter.page.work.PageWork`)."""
    hints: PageHints | None = None
    """The page's canonical hints (:class:`~simhash_filter.page.work.PageWork`)."""
    main_text: str | None = None
    """The main text, when the job asked for it (``ADD_TEXT``)."""


class _Worker:
    """One worker process and the crawler's end of its socket."""

    def __init__(
        self, process: subprocess.Popen[bytes] | ForkedProcess, conn: Connection, lifeline: int
    ) -> None:
        self.process = process
        self.conn = conn
        self.lifeline = lifeline
        """The write end of the worker's lifeline pipe: closing it ends the worker."""
        self.start_cpu_seconds = 0.0

    @classmethod
    def start(cls, setup: Setup) -> _Worker:
        """Start a worker and wait until it is ready (WorkerDied when it cannot start)."""
        spawned = spawn("simhash_filter.page.worker")
        worker = cls(*spawned)
        worker._wait_ready(setup.fingerprinter, (sys.path, setup))
        return worker

    @classmethod
    def fork(cls, zygote: Zygote, fingerprinter: Fingerprinter) -> _Worker:
        """A worker forked by the zygote, once ready (ZygoteError when the zygote did not
        fork, WorkerDied when the fork did not answer)."""
        worker = cls(*zygote.fork())
        worker._wait_ready(fingerprinter, ())
        return worker

    def _wait_ready(self, fingerprinter: Fingerprinter, setup: tuple[object, ...]) -> None:
        """Send the set-up messages, wait for the worker's ready answer (WorkerDied)."""
        try:
            for message in setup:
                self.conn.send(message)
            if not wait([self.conn], timeout=READY_TIMEOUT):
                raise WorkerDied(f"no answer in {READY_TIMEOUT:g} s")
            spec, self.start_cpu_seconds = self.conn.recv()
        except (EOFError, OSError, WorkerDied) as exc:
            self.kill()
            raise WorkerDied(
                f"a page worker did not start (exit code {self.process.returncode}): {exc!r}"
            ) from exc
        except BaseException:
            self.kill()
            raise
        if spec != fingerprinter.spec:
            self.kill()
            raise WorkerDied(f"a page worker signs under another spec: {spec!r}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL (when still running) and reap."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        self.conn.close()
        if self.lifeline >= 0:
            os.close(self.lifeline)
            self.lifeline = -1

    def ask_to_stop(self) -> None:
        """Tell the worker to end after its page (it ends at once when idle)."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)

    def stop(self) -> None:
        """Ask the worker to end; kill it when it does not in :data:`STOP_TIMEOUT`."""
        self.ask_to_stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(STOP_TIMEOUT)
        self.kill()


class _Task:
    __slots__ = ("future", "job", "queued_at")

    def __init__(self, job: PageJob) -> None:
        self.job = job
        self.future: Future[PageResult] = Future()
        self.queued_at = time.monotonic()


@dataclass
class _Slot:
    """A worker and the thread that feeds it."""

    number: int
    worker: _Worker | None = None
    thread: threading.Thread | None = None


class PagePool:
    """Signs pages in ``size`` worker processes; :meth:`submit` returns a future."""

    def __init__(
        self,
        size: int,
        fingerprinter: Fingerprinter,
        *,
        max_bytes: int,
        page_timeout: float,
        niceness: int = 0,
        fork_workers: bool | None = None,
    ) -> None:
        """``niceness``: how much nicer than this process the workers run (0 to 19);
        ``fork_workers``: fork the workers from a zygote (default: where it can be)."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if not 0 < page_timeout < float("inf"):
            raise ValueError(f"page_timeout must be a number of seconds > 0, got {page_timeout}")
        if not 0 <= niceness <= MAX_NICENESS:
            raise ValueError(f"niceness must be between 0 and {MAX_NICENESS}, got {niceness}")
        self.size = size
        self.page_timeout = page_timeout
        self._setup = Setup(fingerprinter, max_bytes, page_timeout, niceness)
        """What each worker (or the zygote) is started with."""
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._slots = [_Slot(n) for n in range(size)]
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self.restarts = 0
        """Workers replaced after a death or a timeout."""
        self.start_cpu_seconds = 0.0
        """CPU seconds the workers (and their zygote) took to start (imports, jieba's
        dictionary)."""
        self._fork_workers = can_fork() if fork_workers is None else fork_workers
        self._zygote: Zygote | None = None
        self._in_work = 0
        self._starter: threading.Thread | None = None
        self.ready: Future[None] = Future()
        """Done when :meth:`start` is over; its exception when the workers did not start."""

    # -- lifecycle

    def start(self, *, wait: bool = True) -> None:
        """Start the workers (in parallel) and the threads that feed them; blocking, or
        with ``wait=False`` in a thread of its own: pages submitted meanwhile wait in the
        queue, :attr:`ready` says when the start is over, and when it failed they fail with
        :class:`PoolNotStarted` (a crawl need not wait ~0.5 s for its workers to start)."""
        if self._started:
            raise RuntimeError("the pool is already started")
        self._started = True
        if wait:
            try:
                self._start_all()
            except BaseException:
                self._close(PoolClosed, "the page pool was closed")
                raise
            self.ready.set_result(None)
            return
        self._starter = threading.Thread(
            target=self._start_in_background, name="simhash-filter-pool-start", daemon=True
        )
        self._starter.start()

    def _start_in_background(self) -> None:
        try:
            self._start_all()
        except BaseException as exc:
            self.ready.set_exception(exc)  # first: its callbacks stop sending pages here
            self._close(PoolNotStarted, f"the page workers did not start: {exc}")
            return
        self.ready.set_result(None)

    def _start_all(self) -> None:
        if self._fork_workers:
            self._start_zygote()
        starters = [
            threading.Thread(target=self._start_worker, args=(slot,), daemon=True)
            for slot in self._slots
        ]
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()
        if any(slot.worker is None for slot in self._slots):
            raise WorkerDied("the page workers did not start (see the log)")
        for slot in self._slots:
            slot.thread = threading.Thread(
                target=self._serve,
                args=(slot,),
                name=f"simhash-filter-pool-{slot.number}",
                daemon=True,
            )
            slot.thread.start()

    def _start_zygote(self) -> None:
        try:
            zygote = Zygote.start(self._setup, READY_TIMEOUT)
        except Exception:
            logger.warning(
                "Could not start the page workers' zygote: each worker starts on its own",
                exc_info=True,
            )
            return
        self._zygote = zygote
        self.start_cpu_seconds += zygote.start_cpu_seconds

    @property
    def zygote_pid(self) -> int | None:
        """The process id of the zygote the workers are forked from, or None."""
        return self._zygote.process.pid if self._zygote is not None else None

    def _new_worker(self) -> _Worker:
        zygote = self._zygote
        if zygote is not None and zygote.alive:
            try:
                return _Worker.fork(zygote, self._setup.fingerprinter)
            except ZygoteError:
                logger.warning(
                    "The page workers' zygote did not fork a worker: it starts on its own",
                    exc_info=True,
                )
        return _Worker.start(self._setup)

    def _start_worker(self, slot: _Slot) -> None:
        try:
            slot.worker = self._new_worker()
            with self._lock:
                self.start_cpu_seconds += slot.worker.start_cpu_seconds
        except Exception:
            logger.error("Could not start a near-duplicate page worker", exc_info=True)
            slot.worker = None

    def close(self) -> None:
        """Blocking: wait for a start still going on, fail the pages still queued, let the
        pages in work finish (a page timeout at most), stop the workers. Idempotent."""
        starter = self._starter
        if starter is not None and starter is not threading.current_thread():
            starter.join()  # bounded: each worker's start is (READY_TIMEOUT)
        self._close(PoolClosed, "the page pool was closed")

    def _close(self, queued_error: type[PoolClosed], message: str) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None and task.future.set_running_or_notify_cancel():
                task.future.set_exception(queued_error(message))
        for _ in self._slots:
            self._tasks.put(None)
        for slot in self._slots:
            if slot.thread is not None:
                slot.thread.join(self.page_timeout + STOP_TIMEOUT)
        workers = [slot.worker for slot in self._slots if slot.worker is not None]
        for slot in self._slots:
            slot.worker = None
        for worker in workers:  # all asked first, then each waited for
            worker.ask_to_stop()
        for worker in workers:
            worker.stop()
        zygote, self._zygote = self._zygote, None
        if zygote is not None:
            zygote.close()

    @property
    def _start_failed(self) -> bool:
        return self.ready.done() and self.ready.exception() is not None

    @property
    def in_work(self) -> int:
        """Pages handed to a worker and not answered yet."""
        return self._in_work

    @property
    def pids(self) -> list[int]:
        """The process ids of the running workers."""
        return [pid for slot in self._slots if slot.worker and (pid := slot.worker.pid) is not None]

    # -- pages

    def submit(self, job: PageJob) -> Future[PageResult]:
        """Queue a page; the future holds its :class:`PageResult` or a :class:`PageWorkError`."""
        task = _Task(job)
        with self._lock:
            if not self._closed and self._started:
                self._tasks.put(task)
                return task.future
        refusal = PoolNotStarted if self._start_failed else PoolClosed
        task.future.set_exception(refusal("the page pool is not running"))
        return task.future

    def _serve(self, slot: _Slot) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            if not task.future.set_running_or_notify_cancel():
                continue
            try:
                task.future.set_result(self._run(slot, task))
            except BaseException as exc:
                task.future.set_exception(exc)
            del task
            if slot.worker is None and not self._closed:
                self._replace(slot)

    def _replace(self, slot: _Slot) -> None:
        self._start_worker(slot)
        if slot.worker is not None:
            with self._lock:
                self.restarts += 1

    def _run(self, slot: _Slot, task: _Task) -> PageResult:
        if slot.worker is None:  # its replacement could not start: try once more
            self._replace(slot)
        worker = slot.worker
        if worker is None:
            raise WorkerDied("no page worker could be started (see the log)")
        handed_at = time.monotonic()
        try:
            worker.conn.send(task.job)
        except (OSError, ValueError) as exc:
            self._discard(slot)
            raise WorkerDied(f"the page worker (pid {worker.pid}) is gone: {exc}") from exc
        with self._lock:
            self._in_work += 1
        try:
            ready = wait([worker.conn], timeout=self.page_timeout)
        finally:
            with self._lock:
                self._in_work -= 1
        if ready:  # an answer, or end-of-file: the worker died
            with contextlib.suppress(EOFError, OSError):
                reply: WorkerReply = worker.conn.recv()
                if reply.error is not None:
                    raise PageFailed(reply.reason or "the page work failed", reply.error)
                return PageResult(
                    reply.signature,
                    reply.cpu_seconds,
                    time.monotonic() - handed_at,
                    handed_at - task.queued_at,
                    reply.capped,
                    reply.hints,
                    reply.main_text,
                )
        self._discard(slot)
        if not ready or worker.process.returncode == -signal.SIGXCPU:
            raise PageTimeout(
                f"the page work took more than {self.page_timeout:g} s "
                f"(SIMHASH_FILTER_PAGE_TIMEOUT); its worker (pid {worker.pid}) was replaced"
            )
        raise WorkerDied(
            f"the page worker (pid {worker.pid}) died with exit code "
            f"{worker.process.returncode} while it held the page; it was replaced"
        )

    @staticmethod
    def _discard(slot: _Slot) -> None:
        if slot.worker is not None:
            slot.worker.kill()
            slot.worker = None
