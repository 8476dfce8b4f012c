"""A text of the same NFKC form that passes NFKC's quick check: NFKC at a tenth of its cost on
Chinese text (:func:`.text.fold`).

CPython's NFKC first runs a quick check over the text and returns it as it is when it passes;
one character that fails the check (a full-width comma, an ellipsis, a no-break space) sends
the whole text through decomposition and recomposition, ~100 ns a character on Chinese text
against ~1.5 ns for the check. A Chinese page fails it at its first full-width comma.

:func:`replace_compatibility` replaces every character whose compatibility decomposition is
made of starters only (combining class 0) with its NFKC form, by one regular-expression split
over the text; NFKC of the result (:func:`.text.fold`) passes its quick check on nearly every
page. The replacement cannot change the result: NFKC is the canonical composition of the
NFKD form, and NFKD decomposes each character by itself, then reorders only runs of
non-starters. A character ``c`` whose decomposition holds no non-starter, and the string
``NFKC(c)`` (whose decomposition is the same), give the same decomposed sequence in any
context, and no reordering crosses a starter, so ``NFKD(x + c + y) == NFKD(x + NFKC(c) + y)``
for every ``x`` and ``y``, and so NFKC too. The characters replaced are starters themselves
and become starters, so the runs of combining marks are the same before and after; but the
replacement may turn a text in NFKC, and :func:`.text.cap_non_starters` leaves a text in NFKC
as it is, so the cap runs first (:func:`.text.fold`). Only the Basic Multilingual Plane's
characters are replaced (the table is made on first use from ``unicodedata``, ~10 ms); the
rest are left to NFKC itself.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

__all__ = ["compatibility_replacements", "replace_compatibility"]


@cache
def compatibility_replacements() -> tuple[re.Pattern[str], dict[str, str]]:
    """The pattern of the BMP characters :func:`replace_compatibility` replaces (one group: a
    split keeps them), and each one's NFKC form. A memo of a constant of ``unicodedata``."""
    normalize, combining, decomposition = (
        unicodedata.normalize,
        unicodedata.combining,
        unicodedata.decomposition,
    )
    table: dict[str, str] = {}
    for code in range(0x10000):
        ch = chr(code)
        if not decomposition(ch) or combining(ch):
            continue  # no decomposition: NFKC leaves the character as it is, or composes it
        decomposed = normalize("NFKD", ch)
        composed = normalize("NFKC", ch)
        if composed != ch and not any(combining(d) for d in decomposed + composed):
            table[ch] = composed
    ranges: list[list[str]] = []
    for ch in sorted(table):  # one range a run of consecutive code points
        if ranges and ord(ch) == ord(ranges[-1][1]) + 1:
            ranges[-1][1] = ch
        else:
            ranges.append([ch, ch])
    members = "".join(f"\\u{ord(a):04x}-\\u{ord(b):04x}" for a, b in ranges)
    return re.compile(f"([{members}])"), table


def replace_compatibility(text: str) -> str:
    """``text`` with every character of :func:`compatibility_replacements` in its NFKC form:
    another text of the same NFKC form (see the module doc), and of the same runs of
    combining marks (cap them first: it leaves a text in NFKC as it is)."""
    pattern, table = compatibility_replacements()
    parts = pattern.split(text)
    if len(parts) == 1:
        return text
    parts[1::2] = map(table.__getitem__, parts[1::2])  # no Python frame a character
    return "".join(parts)
