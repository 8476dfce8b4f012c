"""The terms a stored text is found by in the database's text index, and the groups of a
passage's terms that find it (``near --text`` on a paragraph: store/passage_index.py).

Pure functions (no I/O). A term is a word of letters and digits, case-folded after NFKC,
or, in a run of CJK characters (which has no spaces between words), each two neighbouring
characters (a run of one: the character). Bigrams need no dictionary and find a Chinese
passage as surely as words an English one; every term of a passage cut from a text is a
term of that text, but for the passage's first and last (a word or a run cut in two), so
those are left out of the query. A group is a handful of a passage's terms from one stretch
of it, the longest first (a long word is a rare one): a text holding the stretch holds
every term of its group, so one group matched is a candidate, checked afterwards by the
real overlap (core/sketch.py's ``contained_share``).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["GROUPS", "GROUP_TERMS", "MAX_TERM", "query_groups", "terms", "text_terms"]

MAX_TERM = 32
"""Characters of a term at most (a longer word is cut: the same cut in the text and the query)."""
GROUPS = 4
"""Stretches a passage's terms are split into: each one's group alone finds its text."""
GROUP_TERMS = 8
"""Terms of a group at most."""

_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # Hangul syllables
)
_WORD = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile(rf"([{_CJK}]+)")


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats included (see the module doc)."""
    if not (text.isascii() or unicodedata.is_normalized("NFKC", text)):
        text = unicodedata.normalize("NFKC", text)
    found: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if word.isascii():  # (most words: no CJK run to look for)
            found.append(word[:MAX_TERM])
            continue
        for n, part in enumerate(_CJK_RUN.split(word)):  # odd parts: the CJK runs
            if not part:
                continue
            if n % 2 == 0:
                found.append(part[:MAX_TERM])
            elif len(part) == 1:
                found.append(part)
            else:
                found.extend([part[i : i + 2] for i in range(len(part) - 1)])
    return found


def text_terms(text: str) -> list[str]:
    """The distinct terms of a stored text, in first-seen order: what the index holds."""
    return list(dict.fromkeys(terms(text)))


def query_groups(passage: str) -> list[list[str]]:
    """Up to :data:`GROUPS` groups of up to :data:`GROUP_TERMS` distinct terms each, one a
    stretch of ``passage`` (its first and last term left out when it has more than two),
    the longest terms of the stretch (of equal lengths, evenly spaced); none for a passage
    without terms."""
    found = terms(passage)
    if len(found) > 2:
        found = found[1:-1]
    distinct = list(dict.fromkeys(found))
    if not distinct:
        return []
    count = min(GROUPS, max(1, len(distinct) // GROUP_TERMS))
    size = -(-len(found) // count)
    groups: list[list[str]] = []
    for start in range(0, len(found), size):
        stretch = list(dict.fromkeys(found[start : start + size]))
        step = -(-len(stretch) // GROUP_TERMS)  # ties of length: evenly spaced
        order = sorted(range(len(stretch)), key=lambda i: (-len(stretch[i]), i % step, i))
        group = [stretch[i] for i in sorted(order[:GROUP_TERMS])]  # (in passage order)
        if group and group not in groups:
            groups.append(group)
    return groups
