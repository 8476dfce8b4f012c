"""Run several ``scrapy crawl`` workers at once (distributed crawls, fault tests, benchmarks).

:func:`run_scrapy` in :mod:`support.crawl` runs one crawl to its end; :func:`start_worker`
starts one in the background and returns a :class:`Worker` to wait for or to kill.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .crawl import REPO_ROOT, CrawlResult


@dataclass
class Worker:
    """A ``scrapy`` subprocess writing its items, stats and log into ``workdir``."""

    name: str
    workdir: Path
    process: subprocess.Popen[bytes]
    _result: CrawlResult | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.workdir / "scrapy.log"

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as when a machine dies (a frozen worker too)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: the worker holds whatever it holds and does nothing until :meth:`thaw`."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: a frozen worker carries on where it stopped."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)

    def wait(self, timeout: float = 300) -> CrawlResult:
        """Wait for the crawl to end; its return code, stats, items and log."""
        if self._result is None:
            try:
                returncode = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
            stats_path = self.workdir / "stats.json"
            items_path = self.workdir / "items.jsonl"
            stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
            items = []
            if items_path.exists():
                for line in items_path.read_text().splitlines():
                    if line.strip():
                        with contextlib.suppress(ValueError):  # a killed worker's last line
                            items.append(json.loads(line))
            log = self.log_path.read_text() if self.log_path.exists() else ""
            stderr = self.workdir / "stderr.txt"
            if stderr.exists():
                log += stderr.read_text()
            self._result = CrawlResult(returncode, stats, items, log)
        return self._result


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


def worker_env(settings_module: str = "crawler.settings") -> dict[str, str]:
    """The environment of a worker: the repository on PYTHONPATH, the settings module."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env["SCRAPY_SETTINGS_MODULE"] = settings_module
    return env


def start_worker(
    name: str,
    args: Sequence[str],
    *,
    workdir: Path,
    settings: Mapping[str, object] = {},
    settings_module: str = "crawler.settings",
) -> Worker:
    """Start ``scrapy <args>`` in ``workdir`` (created): items to ``items.jsonl`` (JSON lines,
    flushed per item), stats to ``stats.json``, log to ``scrapy.log``; the User-Agent is
    ``worker-<name>`` so the test site can tell the workers apart."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "scrapy", *args]
    command += ["-o", f"{workdir / 'items.jsonl'}:jsonlines"]
    command += ["-s", f"STATS_FILE={workdir / 'stats.json'}"]
    command += ["-s", f"LOG_FILE={workdir / 'scrapy.log'}"]
    command += ["-s", f"USER_AGENT=worker-{name}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    with (workdir / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=worker_env(settings_module),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    return Worker(name, workdir, process)
