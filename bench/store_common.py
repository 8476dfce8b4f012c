"""What the store benchmarks share (``bench_store`` and its index study, ``store_study``):
the spec their random fingerprints are stored under, timing percentiles, a log line and a
database's bytes on disk."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

SPEC = "bench;random-fingerprints"
"""The spec the store benchmarks' databases are made with (random fingerprints, no text)."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentiles(samples_ns: Sequence[int]) -> tuple[float, float]:
    """p50 and p99 in microseconds."""
    ordered = sorted(samples_ns)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return p50 / 1000, p99 / 1000


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
