"""One measured cell (a variant at a process count) and its percentiles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cell", "percentile"]


@dataclass
class Cell:
    """One variant at one process count."""

    variant: str
    procs: int
    pages: int = 0
    calls: int = 0
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def row(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "procs": self.procs,
            "pages": self.pages,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "pages_per_s": round(self.rate, 1),
            "calls_per_s": round(self.calls / self.seconds, 1) if self.seconds else 0.0,
            "client_cpu_ms_per_page": round(1000 * self.client_cpu / max(1, self.pages), 3),
            "server_cpu_ms_per_page": round(1000 * self.server_cpu / max(1, self.pages), 3),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            **self.extra,
        }


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
