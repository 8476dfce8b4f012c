"""Whether an installed trafilatura module is the text a replacement of its internals was
reviewed against: the sha256 of its source file (``inspect`` would read the functions'
sources, but a change elsewhere in the module can change what they call)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["is_reviewed", "source_digest"]


def source_digest(module: Any) -> str:
    """sha256 of ``module``'s source file."""
    return hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()


def is_reviewed(module: Any, digest: str) -> bool:
    """True when ``module``'s source file hashes to ``digest`` (False when it has none)."""
    try:
        return source_digest(module) == digest
    except (AttributeError, OSError, TypeError):  # no source file to read
        return False
