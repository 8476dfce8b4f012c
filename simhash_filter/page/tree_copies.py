"""Two of trafilatura's tree copies left out where nothing reads what they keep.

trafilatura (``core._prepare_tree``) cleans a copy of the raw tree and keeps a second copy
of the cleaned tree as a backup; with the raw tree's own copy at the start of
``bare_extraction``, that is three copies of the page a pass. In the extraction the page
work runs (``fast``, no comments), the backup is only read by the comparison with external
extractors and the comments path, both off; in the ``precision`` pass the raw tree is not
read after the cleaning either (the baseline rescue and the recall escalation are for the
other focuses). :func:`install` replaces ``_prepare_tree`` with one that skips those copies
in those cases, and calls trafilatura's own otherwise.

That reasoning holds for one text of trafilatura: :func:`install` replaces nothing unless
``trafilatura/core.py`` hashes as reviewed (:data:`REVIEWED_CORE`); a new trafilatura keeps
its copies until it is reviewed again.
"""

from __future__ import annotations

import logging
from copy import copy
from typing import Any

from .reviewed import is_reviewed

__all__ = ["REVIEWED_CORE", "install", "installed", "uninstall"]

logger = logging.getLogger(__name__)

REVIEWED_CORE = "a123aa052752d3dd1d5a1177ad37f03574456d08df1bcd2ec87971cf3f077825"
"""sha256 of ``trafilatura/core.py`` as reviewed (trafilatura 2.3.1): the reasoning above reads
its ``_prepare_tree``, ``_extract_and_compare``, ``_recall_retry``, ``trafilatura_sequence``
and ``bare_extraction``. The file's digest rather than the functions' sources: ``inspect``
reading those costs far more at every process start than reading the file."""


def _core() -> Any:
    import trafilatura.core

    return trafilatura.core


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
    if not is_reviewed(core, REVIEWED_CORE):
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
