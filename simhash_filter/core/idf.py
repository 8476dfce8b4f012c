"""IDF tables from files: ``token weight`` lines, and jieba's bundled Chinese table.

This is I/O, so it lives outside the pure core; the loaders return an immutable
:class:`~simhash_filter.core.features.IdfTable` to hand to ``Fingerprinter(idf=...)``.

Tokens are normalized like page text (NFKC, case-folded), so that they match the
tokens the fingerprinter looks up. The table's name in the fingerprint spec is a
digest of its content unless a name is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from importlib import resources

from .features import IdfTable
from .text import normalize

__all__ = ["jieba_idf", "load_idf", "parse_idf_lines"]


def parse_idf_lines(lines: Iterable[str], *, source: str = "<lines>") -> dict[str, float]:
    """Token → weight from ``token weight`` lines (white space between them).

    Blank lines and lines starting with ``#`` are skipped. A token may contain
    spaces (a shingle): the weight is the last field. Tokens that are equal after
    normalization keep the smallest weight (the merged token is at least as common
    as its most common spelling). A malformed line, or a weight that is negative or
    not finite, raises ``ValueError`` naming ``source`` and the line number.
    """
    weights: dict[str, float] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            raise ValueError(f"{source}:{number}: expected 'token weight', got {line!r}")
        token, text = parts
        try:
            weight = float(text)
        except ValueError:
            raise ValueError(f"{source}:{number}: weight {text!r} is not a number") from None
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{source}:{number}: weight must be finite and >= 0, got {text!r}")
        token = normalize(token)
        if not token:
            raise ValueError(f"{source}:{number}: empty token in {line!r}")
        previous = weights.get(token)
        weights[token] = weight if previous is None else min(previous, weight)
    return weights


def _median(values: Iterable[float]) -> float:
    """The upper median, as jieba computes it (``sorted(values)[n // 2]``)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _table(weights: dict[str, float], default: float | None, name: str, source: str) -> IdfTable:
    if default is None:
        if not weights:
            raise ValueError(f"{source}: no 'token weight' lines, and no default given")
        default = _median(weights.values())
    return IdfTable(weights, default=default, name=name)


def load_idf(
    path: str | os.PathLike[str], *, default: float | None = None, name: str = ""
) -> IdfTable:
    """An :class:`IdfTable` from a UTF-8 file of ``token weight`` lines.

    Unseen tokens get ``default``, or the median weight of the file when it is None
    (jieba's convention).
    """
    source = os.fspath(path)
    with open(source, encoding="utf-8") as lines:
        weights = parse_idf_lines(lines, source=source)
    return _table(weights, default, name, source)


def jieba_idf(*, default: float | None = None, name: str = "") -> IdfTable:
    """jieba's bundled IDF table (``jieba/analyse/idf.txt``, about 270,000 words).

    The default for unseen tokens is the table's median, as in ``jieba.analyse``.
    Loading takes about a second: load it once and share the table.
    """
    resource = resources.files("jieba") / "analyse" / "idf.txt"
    with resource.open(encoding="utf-8") as lines:
        weights = parse_idf_lines(lines, source="jieba/analyse/idf.txt")
    return _table(weights, default, name, "jieba/analyse/idf.txt")
