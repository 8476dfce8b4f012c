"""Waiting on other processes in the tests: a condition, never a sleep, as the assertion."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["gone", "killed_script", "wait_until"]


def gone(pid: int) -> bool:
    """True when ``pid`` has exited (no such process, or a zombie awaiting its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in {"Z", "X"}


def wait_until(condition: Callable[[], bool], what: str, limit: float = 120.0) -> None:
    """Wait for a condition another process or thread makes true (``limit`` only guards a
    hang: the test asserts the condition, not the time)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


@contextmanager
def killed_script(path: Path, source: str) -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    """Run the Python ``source`` (dedented) as the script ``path`` for the length of the
    block, then SIGKILL it (no clean-up runs in it); yields the process and the pids the
    script prints on its first line (its page workers)."""
    path.write_text(textwrap.dedent(source))
    process = subprocess.Popen(
        [sys.executable, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield process, [int(p) for p in process.stdout.readline().split()]
    finally:
        process.kill()
        process.wait()
