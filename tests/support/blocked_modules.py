"""Make modules unimportable in a subprocess, as on a machine where they are not installed.

:func:`blocking_path` writes a ``sitecustomize.py`` that puts a finder first on
``sys.meta_path``; a folder with it on ``PYTHONPATH`` makes ``import psycopg`` (and its
submodules) raise ``ModuleNotFoundError`` in that interpreter, whatever is installed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["blocking_path"]

_SITECUSTOMIZE = """\
import sys

BLOCKED = {blocked!r}


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""


def blocking_path(folder: Path, modules: Iterable[str]) -> Path:
    """``folder``, holding a ``sitecustomize.py`` that blocks ``modules`` (top-level names):
    put it on a subprocess's ``PYTHONPATH``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(blocked=frozenset(modules)), encoding="utf-8"
    )
    return folder
