"""Crawl workers in the tests: freeze them (SIGSTOP/SIGCONT), never leave one behind.

:mod:`crawler.workers` starts them; freezing holds a crawl still at a chosen point, and a
:class:`WorkerGroup` kills what it started, frozen or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from crawler.workers import Worker, start_worker

__all__ = ["Worker", "WorkerGroup", "frozen", "start_worker"]


@contextlib.contextmanager
def frozen(workers: Iterable[Worker]) -> Iterator[None]:
    """Freeze ``workers`` (SIGSTOP) for the block; thaw them (SIGCONT) on the way out,
    whatever happens inside, so that no test leaves a stopped process behind."""
    workers = list(workers)
    try:
        for worker in workers:
            worker.freeze()
        yield
    finally:
        for worker in workers:
            worker.thaw()


class WorkerGroup:
    """Starts workers and kills (SIGCONT, then SIGKILL) those still running on exit: a
    failing test leaves no crawl behind, frozen or not."""

    def __init__(self) -> None:
        self.workers: list[Worker] = []

    def start(self, name: str, args: Sequence[str], **kwargs: Any) -> Worker:
        """:func:`start_worker`, remembered for clean-up."""
        worker = start_worker(name, args, **kwargs)
        self.workers.append(worker)
        return worker

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for worker in self.workers:
            worker.thaw()
            worker.kill()
