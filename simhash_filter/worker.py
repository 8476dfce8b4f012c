"""A page worker process: signs pages sent over a socket (``python -m simhash_filter.worker FD``).

Started by :class:`~simhash_filter.pool.PagePool` as a fresh interpreter (never a fork of
the crawler, whose Twisted reactor and threads a fork would copy; nor a re-import of the
crawler's main script, as ``multiprocessing`` start methods do). The protocol, over the
inherited socket ``FD`` wrapped in a ``multiprocessing`` connection:

1. the crawler sends ``sys.path``, then ``(fingerprinter, max_bytes)``;
2. the worker loads trafilatura and jieba's dictionary, and answers the fingerprint spec
   and the CPU seconds its start took;
3. for each :class:`PageJob` it receives, it answers a :class:`WorkerReply`; ``None``
   asks it to end, and so does end-of-file (the crawler process is gone).

SIGINT is ignored: a Ctrl-C in a terminal reaches the whole process group, and the crawler
decides when its workers stop.
"""

from __future__ import annotations

import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .fingerprint import Fingerprinter
    from .signature import PageSignature

__all__ = ["PageJob", "WorkerReply", "serve"]

_WARM_UP_TEXT = "Warm up the tokenizer and the sketch. 预热结巴分词的词典。" * 4
_WARM_UP_HTML = "<html><body><article><p>" + "Warm up trafilatura. " * 20 + "</p></article>"


class PageJob(NamedTuple):
    """One page to sign, as it crosses to a worker."""

    url: str
    text: str | None
    html: bytes | str | None


class WorkerReply(NamedTuple):
    """A worker's answer for one page."""

    signature: PageSignature | None
    error: str | None
    """The worker's traceback when the page work raised."""
    cpu_seconds: float


def serve(conn: Connection) -> None:
    """The worker's loop: set up from the first messages, then sign pages until told to end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.path[:] = conn.recv()
        fingerprinter, max_bytes = conn.recv()
    except (EOFError, OSError):
        return
    from .pagework import sign_page

    _warm_up(fingerprinter, max_bytes)
    try:
        conn.send((fingerprinter.spec, time.process_time()))
    except OSError:  # the crawler process is gone
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the crawler process is gone
            return
        if job is None:
            return
        started = time.process_time()
        try:
            signature = sign_page(fingerprinter, job.url, job.text, job.html, max_bytes=max_bytes)
            reply = WorkerReply(signature, None, time.process_time() - started)
        except Exception:
            reply = WorkerReply(None, traceback.format_exc(), time.process_time() - started)
        del job
        try:
            conn.send(reply)
        except OSError:
            return


def _warm_up(fingerprinter: Fingerprinter, max_bytes: int) -> None:
    from .pagework import sign_page

    fingerprinter.sign(_WARM_UP_TEXT)  # loads jieba's dictionary
    sign_page(fingerprinter, "", None, _WARM_UP_HTML, max_bytes=max_bytes)


def main(argv: list[str] | None = None) -> int:
    """``python -m simhash_filter.worker FD``: serve on the inherited socket ``FD``."""
    args = sys.argv[1:] if argv is None else argv
    conn = Connection(int(args[0]))
    try:
        serve(conn)
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    # run the module under its own name, so that what it pickles names simhash_filter.worker
    from simhash_filter.worker import main as _main

    sys.exit(_main())
