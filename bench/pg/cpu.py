"""Server CPU: the CPU time of the PostgreSQL backends serving one database, from /proc.

Backends are found by their process titles (``postgres: user database ...``) and their
utime + stime read from ``/proc/<pid>/stat``; Linux only.
"""

from __future__ import annotations

import os
import threading

__all__ = ["BackendCpu", "backend_pids", "cpu_seconds"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def backend_pids(database: str) -> list[int]:
    """Backends serving ``database`` (from their process titles)."""
    pids = []
    needle = f" {database} ".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                title = f.read()
        except OSError:
            continue
        if title.startswith(b"postgres: ") and needle in title:
            pids.append(int(entry.name))
    return pids


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


class BackendCpu:
    """CPU time of the backends of one database over a window, sampled every 50 ms (a
    backend that exits loses at most its last 50 ms; one that starts counts whole)."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = False

    def _sample(self) -> None:
        for pid in backend_pids(self.database):
            cpu = cpu_seconds(pid)
            if cpu is None:
                continue
            if pid not in self.first:
                self.first[pid] = cpu if not self._started else 0.0
            self.last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> BackendCpu:
        self._sample()
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)
