"""Two of trafilatura's tree copies left out where nothing reads what they keep.

trafilatura (``core._prepare_tree``) cleans a copy of the raw tree and keeps a second copy
of the cleaned tree as a backup; with the raw tree's own copy at the start of
``bare_extraction``, that is three copies of the page a pass. In the extraction the page
work runs (``fast``, no comments), the backup is only read by the comparison with external
extractors and the comments path, both off; in the ``precision`` pass the raw tree is not
read after the cleaning either (the baseline rescue and the recall escalation are for the
other focuses). :func:`install` replaces ``_prepare_tree`` with one that skips those copies
in those cases, and calls trafilatura's own otherwise.

That reasoning holds for one text of trafilatura's functions: :func:`install` replaces
nothing unless the source of every function it read hashes as reviewed
(:data:`REVIEWED_SOURCES`); a new trafilatura keeps its copies until it is reviewed again.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from copy import copy
from typing import Any

__all__ = ["REVIEWED_SOURCES", "install", "installed", "source_digest", "uninstall"]

logger = logging.getLogger(__name__)

REVIEWED_SOURCES = {
    "_prepare_tree": "9595f0642825c2c7ca61f5f311b0070b1cfaaca7009a7d916bce8eeff9b93e34",
    "_extract_and_compare": "f7d056c2118222e8ffb17e32d4796ccbddc452936d7177e27c53fb6d39b8f6e6",
    "_recall_retry": "59594c39714f57be4b7184b9302d676f444c3afdbb41c05575538cac0abab25c",
    "trafilatura_sequence": "f03dc4d2946dacbd0e023ca1c51fdf329e0fdc0be342fd0f14924396ec646e05",
    "bare_extraction": "2e57adb3062086f9695046cf58b1a8825143322fe74e74739791dff6d8da9fea",
}
"""sha256 of the source of each ``trafilatura.core`` function the reasoning above reads, as
reviewed (trafilatura 2.3.1)."""


def source_digest(function: Any) -> str:
    """sha256 of a function's source text."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def _core() -> Any:
    import trafilatura.core

    return trafilatura.core


def _reviewed(core: Any) -> bool:
    try:
        return all(
            source_digest(getattr(core, name)) == digest
            for name, digest in REVIEWED_SOURCES.items()
        )
    except (AttributeError, OSError, TypeError):  # a function gone, or no source to read
        return False


class _PrepareTree:
    """``trafilatura.core._prepare_tree`` without the copies nothing reads."""

    def __init__(self, original: Any, core: Any) -> None:
        self.original = original
        self.core = core

    def __call__(self, tree: Any, options: Any, url: str | None) -> tuple[Any, Any]:
        if not options.fast or options.comments:
            return self.original(tree, options, url)  # type: ignore[no-any-return]
        raw = tree if options.focus == "precision" else copy(tree)
        cleaned = self.core.tree_cleaning(raw, options)
        return self.core.convert_tags(cleaned, options, url), None  # no backup: never read


def install() -> bool:
    """Replace ``trafilatura.core._prepare_tree`` when trafilatura is the reviewed one;
    True when the replacement is in place. Idempotent."""
    core = _core()
    if isinstance(core._prepare_tree, _PrepareTree):
        return True
    if not _reviewed(core):
        logger.debug("trafilatura.core differs from the reviewed text: its copies stay")
        return False
    core._prepare_tree = _PrepareTree(core._prepare_tree, core)
    return True


def uninstall() -> None:
    """Put trafilatura's own ``_prepare_tree`` back."""
    core = _core()
    if isinstance(core._prepare_tree, _PrepareTree):
        core._prepare_tree = core._prepare_tree.original


def installed() -> bool:
    """True when the replacement is in place."""
    return isinstance(_core()._prepare_tree, _PrepareTree)
