"""Two page texts compared passage by passage (the standard library's ``difflib``), for
``simhash-filter diff`` and the HTML report.

A *passage* is a sentence of the text: lines are cut after their sentences, so two texts
that hold the same sentences line up however their extractions broke the lines (one line a
paragraph in one, a whole page on one line in the other). Changed passages are paired and
compared again word by word, so a reader sees which words differ.
Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

__all__ = ["Passage", "Piece", "diff_texts", "passages", "text_similarity", "word_diff"]

Op = Literal["equal", "delete", "insert", "replace"]

_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s+|(?<=[。！？；])")
_WORDS = re.compile(r"\S+\s*|\s+")  # a word with the space after it
_MAX_PIECE = 2000  # characters: a sentence longer than this is cut into pieces this long


def passages(text: str) -> list[str]:
    """The sentences of the text's non-blank lines (a sentence longer than 2000 characters
    cut into pieces of 2000)."""
    found: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            found.extend(
                part[start : start + _MAX_PIECE] for start in range(0, len(part), _MAX_PIECE)
            )
    return found


@dataclass(frozen=True, slots=True)
class Passage:
    """One step of a diff: passages equal in both texts, only in A, only in B, or
    changed (A's replaced by B's)."""

    op: Op
    a: tuple[str, ...]
    b: tuple[str, ...]


def diff_texts(a: str, b: str) -> list[Passage]:
    """The passages of ``a`` and ``b`` aligned (``difflib.SequenceMatcher`` over
    passages, no junk heuristic: pages repeat their boilerplate lines)."""
    pa, pb = passages(a), passages(b)
    matcher = SequenceMatcher(None, pa, pb, autojunk=False)
    return [
        Passage(op, tuple(pa[i1:i2]), tuple(pb[j1:j2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
    ]


def text_similarity(steps: list[Passage]) -> float:
    """The share of passages the two texts have in common (difflib's ratio: 2 × equal
    passages / all passages), 1.0 for two empty texts."""
    equal = sum(len(step.a) for step in steps if step.op == "equal")
    total = sum(len(step.a) + len(step.b) for step in steps)
    return 1.0 if total == 0 else 2 * equal / total


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of text in a word diff: in both, only in A (``delete``) or only in B."""

    op: Literal["equal", "delete", "insert"]
    text: str


def word_diff(a: str, b: str) -> list[Piece]:
    """``a`` and ``b`` compared word by word (whitespace kept): what stays, what goes,
    what comes; neighbouring changed words form one run."""
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    pieces: list[Piece] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(Piece("equal", "".join(wa[i1:i2])))
            continue
        gone, new = "".join(wa[i1:i2]), "".join(wb[j1:j2])
        space = _common_trailing_space(gone, new) if gone and new else ""
        if gone:
            pieces.append(Piece("delete", gone[: len(gone) - len(space)]))
        if new:
            pieces.append(Piece("insert", new[: len(new) - len(space)]))
        if space:
            pieces.append(Piece("equal", space))
    return pieces


def _common_trailing_space(a: str, b: str) -> str:
    space_a, space_b = a[len(a.rstrip()) :], b[len(b.rstrip()) :]
    return space_a if space_a == space_b else ""
