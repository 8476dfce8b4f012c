"""A throw-away Redis server for tests that restart one: the shared one on 6379 is never
touched. ``persistent`` keeps its data across a restart (``appendonly yes``), else a
restart loses everything (``--save ""``, no AOF), as a cache-configured Redis does."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis

__all__ = ["PrivateRedis"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateRedis:
    """A ``redis-server`` of its own on loopback: :meth:`start`, :meth:`restart`, :meth:`url`."""

    def __init__(self, *, persistent: bool) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("no redis-server on PATH")
        self.binary = binary
        self.persistent = persistent
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="sf-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
            if self.persistent
            else ["--appendonly", "no", "--save", ""]
        )
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.folder), *persistence],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url(), socket_connect_timeout=1)
        for _ in range(500):
            try:
                if client.ping():
                    return
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError("the private redis-server did not answer")

    def stop(self) -> None:
        """Stop the server (SIGTERM: an AOF is written out first) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
