"""A page worker process: signs pages sent over a socket (``python -m simhash_filter.page.worker FD
LIFELINE``).

Started by :class:`~simhash_filter.page.pool.PagePool` as a fresh interpreter (never a fork of
the crawler, whose Twisted reactor and threads a fork would copy; nor a re-import of the
crawler's main script, as ``multiprocessing`` start methods do), or forked, set up, by the
zygote (:mod:`~simhash_filter.page.zygote`), which skips steps 1 and 2 but the answer. The
protocol, over the
inherited socket ``FD`` wrapped in a ``multiprocessing`` connection:

1. the crawler sends ``sys.path``, then ``(fingerprinter, max_bytes, page_budget, niceness)``;
2. the worker loads trafilatura and jieba's dictionary, and answers the fingerprint spec
   and the CPU seconds its start took;
3. for each :class:`~simhash_filter.page.work.PageJob` it receives, it answers a
   :class:`WorkerReply`; ``None`` asks it to end, and so does end-of-file (the crawler
   process is gone).

A worker never outlives its crawler, even in the middle of a page that holds the GIL in C
code: ``LIFELINE`` is the read end of a pipe whose write end only the crawler holds, set to
signal ``SIGIO`` (default action: terminate) when it closes, so the kernel ends the worker as
soon as the crawler process is gone, however it died (``PR_SET_PDEATHSIG`` would not do: it
fires when the *thread* that started the worker ends, and the pool starts workers from
short-lived threads). Where ``O_ASYNC`` is not available a thread watches the pipe instead.
A worker also enforces its own page budget: before each page ``RLIMIT_CPU`` is set to the
CPU time used so far plus ``page_budget`` seconds, so the kernel ends (``SIGXCPU``) a worker
whose page runs past it, with no core dump, whether or not the crawler is there to time it.

SIGINT is ignored: a Ctrl-C in a terminal reaches the whole process group, and the crawler
decides when its workers stop.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import math
import os
import resource
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from simhash_filter.core.canonical import PageHints
    from simhash_filter.core.fingerprint import Fingerprinter
    from simhash_filter.core.signature import PageSignature

__all__ = ["Setup", "WorkerReply", "answer_ready", "serve", "serve_pages", "set_up"]

_WARM_UP_TEXT = "Warm up the tokenizer and the sketch. 预热结巴分词的词典，全角标点。" * 4
"""Chinese with a full-width comma: it loads the segmenter and the NFKC table (core/nfkc.py)."""
_WARM_UP_HTML = "<html><body><article><p>" + "Warm up trafilatura. " * 20 + "</p></article>"


class WorkerReply(NamedTuple):
    """A worker's answer for one page."""

    signature: PageSignature | None
    error: str | None
    """The worker's traceback when the page work raised."""
    cpu_seconds: float
    capped: tuple[str, ...] = ()
    """The caps the page met (:class:`~simhash_filter.page.work.PageWork`)."""
    reason: str | None = None
    """``Type: message`` of the exception when the page work raised (one line)."""
    hints: PageHints | None = None
    """The page's canonical hints (:class:`~simhash_filter.page.work.PageWork`)."""
    main_text: str | None = None
    """The main text, when the job asked for it (:class:`~simhash_filter.page.work.PageWork`)."""


_PR_SET_DUMPABLE = 4


def die_with_parent(lifeline: int) -> None:
    """End this process as soon as the write end of the pipe ``lifeline`` closes (the crawler
    process is gone): ``SIGIO`` on the pipe (the kernel ends the process, GIL or not), or,
    without ``O_ASYNC``, a thread that waits for end-of-file."""
    signal.signal(signal.SIGIO, signal.SIG_DFL)
    o_async = getattr(os, "O_ASYNC", 0)
    if o_async and hasattr(fcntl, "F_SETOWN"):
        fcntl.fcntl(lifeline, fcntl.F_SETOWN, os.getpid())
        flags = fcntl.fcntl(lifeline, fcntl.F_GETFL)
        fcntl.fcntl(lifeline, fcntl.F_SETFL, flags | o_async | os.O_NONBLOCK)
        try:
            if os.read(lifeline, 1) == b"":  # closed before SIGIO was armed
                os._exit(0)
        except BlockingIOError:
            pass  # the crawler is there
        return

    def watch() -> None:
        while os.read(lifeline, 1):
            pass
        os._exit(0)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def limit_page_cpu(budget: float) -> None:
    """Let the kernel end this process when it uses ``budget`` more CPU seconds (rounded up
    to whole seconds) from now: ``RLIMIT_CPU``'s soft limit, whose ``SIGXCPU`` terminates."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(time.process_time() + budget)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _no_core_dumps() -> None:
    """A worker ended by ``SIGXCPU`` writes no core file (where the crawl runs)."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(OSError, AttributeError):  # Linux: not even to a core pipe
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


class Setup(NamedTuple):
    """What a worker signs pages with, as the crawler sent it (protocol step 1)."""

    fingerprinter: Fingerprinter
    max_bytes: int
    page_budget: float
    niceness: int
    """How much nicer than the crawler the worker runs (:func:`os.nice`): the crawler's event
    loop is the crawl's one serial part, so on a busy machine it should not wait for the
    page work's CPU."""


def set_up(conn: Connection) -> Setup | None:
    """Protocol steps 1 and 2: read the set-up, load the page work, answer the spec and the
    CPU seconds the start took; None when the crawler process is gone. Ignores SIGINT, turns
    core dumps off and lowers its priority (what a forked worker inherits too)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _no_core_dumps()
    try:
        sys.path[:] = conn.recv()
        setup = Setup(*conn.recv())
    except (EOFError, OSError):
        return None
    if setup.niceness:
        os.nice(setup.niceness)
    _warm_up(setup.fingerprinter, setup.max_bytes)
    return setup if answer_ready(conn, setup) else None


def answer_ready(conn: Connection, setup: Setup) -> bool:
    """Tell the crawler this worker is ready (its spec and CPU seconds so far); False when
    the crawler process is gone."""
    try:
        conn.send((setup.fingerprinter.spec, time.process_time()))
    except OSError:
        return False
    return True


def serve(conn: Connection) -> None:
    """The worker's loop: set up from the first messages, then sign pages until told to end."""
    setup = set_up(conn)
    if setup is not None:
        serve_pages(conn, setup)


def serve_pages(conn: Connection, setup: Setup) -> None:
    """Protocol step 3: sign pages until told to end (or the crawler process is gone)."""
    from .work import work_job

    fingerprinter, max_bytes, page_budget, _ = setup
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the crawler process is gone
            return
        if job is None:
            return
        limit_page_cpu(page_budget)
        started = time.process_time()
        try:
            work = work_job(fingerprinter, job, max_bytes=max_bytes)
            reply = WorkerReply(
                work.signature,
                None,
                time.process_time() - started,
                work.capped,
                hints=work.hints,
                main_text=work.main_text,
            )
        except Exception as exc:
            reply = WorkerReply(
                None,
                traceback.format_exc(),
                time.process_time() - started,
                reason=f"{type(exc).__name__}: {exc}",
            )
        del job
        try:
            conn.send(reply)
        except OSError:
            return


def _warm_up(fingerprinter: Fingerprinter, max_bytes: int) -> None:
    from .extract import warm_up_fallback
    from .work import sign_page

    fingerprinter.sign(_WARM_UP_TEXT)  # loads jieba's dictionary
    sign_page(fingerprinter, "", None, _WARM_UP_HTML, max_bytes=max_bytes)
    warm_up_fallback()


def main(argv: list[str] | None = None) -> int:
    """``python -m simhash_filter.page.worker FD LIFELINE``: serve on the inherited socket ``FD``
    while the pipe ``LIFELINE`` is open (:func:`die_with_parent`)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        die_with_parent(int(args[1]))
    conn = Connection(int(args[0]))
    try:
        serve(conn)
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    # run the module under its own name, so that what it pickles names simhash_filter.page.worker
    from simhash_filter.page.worker import main as _main

    sys.exit(_main())
