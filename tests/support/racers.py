"""Processes that race on one index: each runs a script, prints ``ready``, waits for a line on
stdin so that all start writing together, prints its results, and ends with ``done``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def checkout_env() -> dict[str, str]:
    """The environment with this checkout first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def spawn(script: str, *args: object) -> subprocess.Popen[str]:
    """``python -c script args...`` with pipes, on this checkout."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )


def race(procs: list[subprocess.Popen[str]], *, timeout: float = 300) -> list[str]:
    """Start ``procs`` together once all are ready; every line they printed before
    ``done`` (each must exit 0 after ``done``). Kills what is left on the way out."""
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr
        for proc in procs:  # start them together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    lines: list[str] = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        printed = out.splitlines()
        assert printed[-1] == "done", err
        lines += printed[:-1]
    return lines
