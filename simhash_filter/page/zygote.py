"""The page workers' preloaded parent: one fresh interpreter imports the page work and loads
the dictionaries once, then forks each worker (``python -m simhash_filter.page.zygote FD
LIFELINE``).

A worker started as a fresh interpreter spends most of its start (~1 s CPU) importing
trafilatura, lxml, numpy and the segmenter and loading jieba's dictionary; every worker paid
it, and every replacement of a worker that died. :class:`~simhash_filter.page.pool.PagePool`
starts this process instead, as it would start a worker (a fresh interpreter, never a fork of
the crawler process with its reactor and threads), and asks it for each worker: a ``fork`` of
a process that holds one thread and has done nothing but load the page work and sign the
warm-up pages. The fork is the worker: the same :func:`~.worker.serve_pages` loop on its own
socket, with its own lifeline (:func:`~.worker.die_with_parent`) and page budget.

The protocol, over the inherited socket ``FD`` (a ``multiprocessing`` connection; file
descriptors travel beside it as ``SCM_RIGHTS``):

1. the crawler sends ``sys.path``, then ``(fingerprinter, max_bytes, page_budget, niceness)``,
   and the zygote answers as a worker does (:func:`~.worker.set_up`);
2. ``("fork", 0)`` with two descriptors (the worker's end of its socket, the read end of its
   lifeline): the zygote forks, answers ``("forked", pid)`` and sends a pidfd of the worker
   (the crawler signals and watches the worker through it, without a race with pid reuse),
   or ``("refused", reason)`` (then the crawler starts a fresh interpreter instead);
3. ``("reap", pid)`` once the crawler has seen the worker end: the zygote waits for it and
   answers its exit code as :attr:`subprocess.Popen.returncode` has it (``-SIGXCPU`` for a
   worker its page budget ended);
4. ``None`` or end-of-file: the zygote ends (its workers have their own lifelines).

The zygote forks only while it holds a single thread (a fork copies no other thread, and
with them any lock they held); OpenBLAS's thread pool is kept out by starting it with
``OPENBLAS_NUM_THREADS=1`` (the page work calls no BLAS routine). Linux only (pidfds).
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

from .spawn import spawn
from .worker import Setup, answer_ready, die_with_parent, serve_pages, set_up

__all__ = ["ForkedProcess", "Zygote", "ZygoteError", "can_fork", "fork_refusal"]

ANSWER_TIMEOUT = 30.0
"""Seconds the zygote may take to answer a fork or a reap."""
UNKNOWN_EXIT = 255
"""The exit code of a forked worker whose status was lost with its zygote."""


class ZygoteError(Exception):
    """The zygote could not start, refused a fork, or is gone."""


def can_fork() -> bool:
    """True where workers can be forked from a zygote (Linux: fork, pidfds)."""
    return (
        sys.platform == "linux"
        and hasattr(os, "fork")
        and hasattr(os, "pidfd_open")
        and hasattr(signal, "pidfd_send_signal")
    )


def fork_refusal() -> str | None:
    """Why this process must not fork a worker now (more than one thread), or None."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError as exc:
        return f"cannot count its threads: {exc}"
    return None if threads == 1 else f"it holds {threads} threads"


# -- the zygote process


def serve_forks(conn: Connection, lifeline: int) -> None:
    """The zygote's loop (see the module doc)."""
    setup = set_up(conn)
    if setup is None:
        return
    gc.freeze()  # the warm objects stay out of the collector: fewer pages copied a fork
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        while True:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return
            if request is None:
                return
            kind, pid = request
            if kind == "fork":
                _fork(conn, sock, lifeline, setup)
            elif kind == "reap":
                conn.send(_reap(pid))
    finally:
        sock.close()


def _fork(conn: Connection, sock: socket.socket, lifeline: int, setup: Setup) -> None:
    """Fork a worker on the descriptors that come with the request (the worker never
    returns from here)."""
    _, fds, _, _ = socket.recv_fds(sock, 1, 2)
    refusal = fork_refusal() if len(fds) == 2 else f"{len(fds)} descriptors, not 2"
    if refusal is not None:
        for fd in fds:
            os.close(fd)
        conn.send(("refused", refusal))
        return
    worker_fd, worker_lifeline = fds
    pid = os.fork()
    if pid == 0:  # the worker: never back into the zygote's loop
        code = 1
        try:
            sock.close()
            conn.close()
            os.close(lifeline)
            _worker(worker_fd, worker_lifeline, setup)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(worker_fd)
    os.close(worker_lifeline)
    pidfd = os.pidfd_open(pid)
    try:
        conn.send(("forked", pid))
        socket.send_fds(sock, [b"p"], [pidfd])
    finally:
        os.close(pidfd)


def _worker(fd: int, lifeline: int, setup: Setup) -> None:
    die_with_parent(lifeline)
    conn = Connection(fd)
    try:
        if answer_ready(conn, setup):
            serve_pages(conn, setup)
    finally:
        conn.close()


def _reap(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    """``python -m simhash_filter.page.zygote FD LIFELINE``."""
    args = sys.argv[1:] if argv is None else argv
    lifeline = int(args[1])
    die_with_parent(lifeline)
    conn = Connection(int(args[0]))
    try:
        serve_forks(conn, lifeline)
    finally:
        conn.close()
    return 0


# -- the crawler's side


class Zygote:
    """The crawler's handle on a running zygote; :meth:`fork` makes a worker."""

    def __init__(self, process: subprocess.Popen[bytes], conn: Connection, lifeline: int) -> None:
        self.process = process
        self.conn = conn
        self._sock = socket.socket(fileno=os.dup(conn.fileno()))
        self._lifeline = lifeline
        self._lock = threading.Lock()
        self.start_cpu_seconds = 0.0
        """CPU seconds the zygote took to load the page work."""

    @classmethod
    def start(cls, setup: Setup, timeout: float) -> Zygote:
        """Start a zygote and wait until it has loaded the page work (ZygoteError)."""
        spawned = spawn("simhash_filter.page.zygote", OPENBLAS_NUM_THREADS="1")
        zygote = cls(*spawned)
        try:
            zygote.conn.send(sys.path)
            zygote.conn.send(setup)
            if not wait([zygote.conn], timeout=timeout):
                raise ZygoteError(f"no answer in {timeout:g} s")
            spec, zygote.start_cpu_seconds = zygote.conn.recv()
        except (EOFError, OSError, ZygoteError) as exc:
            zygote.close()
            raise ZygoteError(f"the zygote did not start: {exc!r}") from exc
        except BaseException:
            zygote.close()
            raise
        if spec != setup.fingerprinter.spec:
            zygote.close()
            raise ZygoteError(f"the zygote signs under another spec: {spec!r}")
        return zygote

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self) -> tuple[ForkedProcess, Connection, int]:
        """A new worker: its process, the crawler's end of its socket and the write end of
        its lifeline (ZygoteError when the zygote refused or is gone)."""
        ours, theirs = socket.socketpair()
        lifeline_in, lifeline = os.pipe()
        try:
            with self._lock:
                self.conn.send(("fork", 0))
                socket.send_fds(self._sock, [b"f"], [theirs.fileno(), lifeline_in])
                kind, answer = self._answer()
                if kind != "forked":
                    raise ZygoteError(f"the zygote did not fork: {answer}")
                _, fds, _, _ = socket.recv_fds(self._sock, 1, 1)
        except (EOFError, OSError, ValueError, ZygoteError) as exc:
            ours.close()
            os.close(lifeline)
            raise ZygoteError(f"no worker forked: {exc!r}") from exc
        finally:
            theirs.close()
            os.close(lifeline_in)
        (pidfd,) = fds
        return ForkedProcess(answer, pidfd, self), Connection(ours.detach()), lifeline

    def reap(self, pid: int) -> int | None:
        """The exit code of a worker that ended (None when the zygote cannot tell)."""
        try:
            with self._lock:
                self.conn.send(("reap", pid))
                code: int | None = self._answer()
        except (EOFError, OSError, ValueError, ZygoteError):
            return None
        return code

    def _answer(self) -> Any:
        if not wait([self.conn], timeout=ANSWER_TIMEOUT):
            raise ZygoteError(f"no answer in {ANSWER_TIMEOUT:g} s")
        return self.conn.recv()

    def close(self) -> None:
        """Ask the zygote to end, then kill it when it has not (its workers go on)."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(ANSWER_TIMEOUT)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
        self._sock.close()
        self.conn.close()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1


class ForkedProcess:
    """A worker forked by a zygote, with what the pool uses of :class:`subprocess.Popen`."""

    def __init__(self, pid: int, pidfd: int, zygote: Zygote) -> None:
        self.pid = pid
        self._pidfd = pidfd
        self._zygote = zygote
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and _ended(self._pidfd, 0):
            self._reap()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not _ended(self._pidfd, timeout):
                raise subprocess.TimeoutExpired(f"page worker {self.pid}", timeout or 0)
            self._reap()
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _reap(self) -> None:
        code = self._zygote.reap(self.pid)
        self.returncode = UNKNOWN_EXIT if code is None else code
        os.close(self._pidfd)


def _ended(pidfd: int, timeout: float | None) -> bool:
    """True when the process of ``pidfd`` has ended (a pidfd reads as ready then)."""
    ready, _, _ = select.select([pidfd], [], [], timeout)
    return bool(ready)


if __name__ == "__main__":
    # run the module under its own name, so that what it pickles names simhash_filter.page
    from simhash_filter.page.zygote import main as _main

    sys.exit(_main())
