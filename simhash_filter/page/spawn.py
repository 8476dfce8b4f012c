"""A fresh interpreter running one of the page work's modules, with a socket and a lifeline.

Both a worker started on its own (:mod:`.pool`) and the zygote that forks workers
(:mod:`.zygote`) start this way: ``python -m MODULE FD LIFELINE``, the package's parent first on
``PYTHONPATH``, the child's end of a socket pair (a ``multiprocessing`` connection) and the
read end of a pipe passed to it. The parent keeps the pipe's write end: closing it, or dying,
ends the child (:func:`~.worker.die_with_parent`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import NamedTuple

__all__ = ["Spawned", "spawn"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


class Spawned(NamedTuple):
    """A started child: its process, the parent's end of its socket, its lifeline's write end."""

    process: subprocess.Popen[bytes]
    conn: Connection
    lifeline: int


def spawn(module: str, **env: str) -> Spawned:
    """Start ``python -m module`` (``env``: variables set for it besides this process's)."""
    ours, theirs = socket.socketpair()
    lifeline_in, lifeline = os.pipe()  # not inheritable: only this process holds the end
    child_env = dict(os.environ, **env)
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PACKAGE_PARENT, child_env.get("PYTHONPATH", "")) if p
    )
    fds = (theirs.fileno(), lifeline_in)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", module, *map(str, fds)],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            env=child_env,
        )
    except BaseException:
        os.close(lifeline)
        ours.close()
        raise
    finally:
        theirs.close()
        os.close(lifeline_in)
    return Spawned(process, Connection(ours.detach()), lifeline)
