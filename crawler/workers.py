"""Run this project's ``scrapy crawl`` as worker processes, each in a folder of its own.

Several crawlers of one distributed crawl on one machine: the tests and the benchmarks
start them this way.

:func:`start_worker` starts one in the background, in a folder of its own (items, stats and
log there), and returns a :class:`Worker` to wait for or to kill. The project runs from
its checkout: the worker's ``PYTHONPATH`` starts with the repository.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PROJECT_ROOT",
    "CrawlResult",
    "Worker",
    "descendants",
    "project_env",
    "start_worker",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The checkout holding the ``crawler`` project (``scrapy.cfg``)."""


@dataclass
class CrawlResult:
    """What a finished ``scrapy`` process left: exit code, final stats, items, log."""

    returncode: int
    stats: dict[str, Any]
    items: list[dict[str, Any]]
    log: str

    def stat(self, key: str) -> Any:
        """A stats value, 0 when the crawl never set it."""
        return self.stats.get(key, 0)


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


def project_env(
    settings_module: str | None = "crawler.settings", pythonpath: Sequence[Path] = ()
) -> dict[str, str]:
    """The environment of a ``scrapy`` process of this project: the checkout (and
    ``pythonpath``) on ``PYTHONPATH``; ``SCRAPY_SETTINGS_MODULE`` set, or unset for a project
    found through its own ``scrapy.cfg``."""
    env = dict(os.environ)
    paths = [str(PROJECT_ROOT), *map(str, pythonpath), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    if settings_module:
        env["SCRAPY_SETTINGS_MODULE"] = settings_module
    else:
        env.pop("SCRAPY_SETTINGS_MODULE", None)
    return env


def crawl_command(start_url: str, settings: Mapping[str, object] = {}) -> list[str]:
    """The command line of ``scrapy crawl site`` from ``start_url`` with ``settings``
    (``-s KEY=VALUE`` each), run by this interpreter."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={start_url}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return command


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
            env=project_env(settings_module),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    return Worker(name, workdir, process)


def descendants(pid: int) -> set[int]:
    """The pids of every process below ``pid`` (children, their children, ...), read from
    /proc: the page workers of a crawl process, for RSS sampling and orphan checks."""
    children: dict[int, set[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, set()).add(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found
