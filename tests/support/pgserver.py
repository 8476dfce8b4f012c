"""A throw-away PostgreSQL server for tests that stop and start one.

Stopping the shared server on 127.0.0.1:5432 would break every other test and benchmark
using it at that moment; :class:`PrivateServer` runs its own cluster (``initdb`` into a
temporary folder, a port of its own, loopback only, trust authentication) and removes it
afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["PrivateServer", "postgres_bin"]


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's ``bin`` folder (Debian layout), or None."""
    root = Path("/usr/lib/postgresql")
    versions = sorted(
        (p for p in root.iterdir() if (p / "bin" / "initdb").exists()),
        key=lambda p: [int(x) for x in p.name.split(".") if x.isdigit()],
    ) if root.is_dir() else []  # fmt: skip
    return versions[-1] / "bin" if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    """A PostgreSQL cluster of its own: :meth:`start`, :meth:`stop`, :meth:`url`.

    Run as root, the server runs as the ``postgres`` user (PostgreSQL refuses root).
    """

    def __init__(self) -> None:
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL installation under /usr/lib/postgresql")
        self.bin = bin_dir
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="sf-pgserver-"))
        self.data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, program: str, *args: str, check: bool = True) -> int:
        command = [str(self.bin / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, timeout=120, cwd=self.folder)
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.decode(errors='replace')}")
        return done.returncode

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL of one of the server's databases."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: disconnect the clients) and wait until it is down."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status", check=False) == 0

    def close(self) -> None:
        """Stop the server if it runs and remove its files."""
        if self.data.exists() and self.running():
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PrivateServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
