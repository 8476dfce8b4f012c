"""Waiting on other processes in the tests: a condition, never a sleep, as the assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["gone", "wait_until"]


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
