"""Server counters over a window: what a run cost PostgreSQL beyond CPU.

WAL records, full-page images and bytes (``pg_stat_wal``, the whole cluster), blocks one
database read from outside shared_buffers and found in them (``pg_stat_database``) and
checkpoints started (``pg_stat_bgwriter``). A backend reports its counters when it goes
idle or exits, so :meth:`ServerCounters.stop` waits until the database's backends have
exited (the workers have closed their connections) before reading them. The counters are
read on a connection to another database, so reading them adds nothing to the window.
"""

from __future__ import annotations

import time
from typing import Any

from .cpu import backend_pids

WAL = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"
BLOCKS = "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = %s"
CHECKPOINTS = "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
NAMES = ("wal_records", "wal_fpi", "wal_bytes", "blks_read", "blks_hit", "checkpoints")
BACKENDS_GONE_SECONDS = 30.0


class ServerCounters:
    """The counters of :data:`NAMES` between :meth:`start` and :meth:`stop`."""

    def __init__(self, admin_url: str, database: str) -> None:
        self.admin_url = admin_url
        self.database = database
        self.first: dict[str, int] = {}

    def _read(self) -> dict[str, int]:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            wal = conn.execute(WAL).fetchone()
            blocks = conn.execute(BLOCKS, (self.database,)).fetchone()
            checkpoints = conn.execute(CHECKPOINTS).fetchone()
        values: list[Any] = [*(wal or (0, 0, 0)), *(blocks or (0, 0)), *(checkpoints or (0,))]
        return {name: int(v) for name, v in zip(NAMES, values, strict=True)}

    def start(self) -> None:
        self.first = self._read()

    def stop(self) -> dict[str, int]:
        """The counters' growth since :meth:`start`, once the database's backends have
        exited (or after :data:`BACKENDS_GONE_SECONDS`, the figures then maybe short)."""
        deadline = time.monotonic() + BACKENDS_GONE_SECONDS
        while backend_pids(self.database) and time.monotonic() < deadline:
            time.sleep(0.05)
        last = self._read()
        return {name: last[name] - self.first[name] for name in NAMES}


def per_call(delta: dict[str, int], calls: int) -> dict[str, float]:
    """The counters a call (a check, a near() or a page added); checkpoints stay a count."""
    return {
        name: round(value / max(calls, 1), 2)
        for name, value in delta.items()
        if name != "checkpoints"
    }
