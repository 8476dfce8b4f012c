"""A host's template: the blocks of text (menu items, sidebar paragraphs, table cells) that
recur on many pages of one host, learned as the crawl goes (DESIGN.md, invariant 9).

A *block* is the text of one paragraph, list item, heading or table cell; its hash
(:func:`block_hash`: 32 bits of MurmurHash3 of its text, case-folded, white space
collapsed, bullets and separators off its ends) is what the store counts per host, once a
page. The page work splits the
main text into the same blocks (:func:`main_blocks`: lines, table rows at their ``|``) and
leaves out those of the host's :class:`HostTemplate` (:func:`strip_template`), so two
articles whose extraction returned the site's menu are not signed by the menu. The text is
what counts, not the markup: ``- Sports`` (trafilatura's list item) and ``<li>Sports``
hash alike. Pure: no I/O.
"""

from __future__ import annotations

from typing import NamedTuple

import mmh3

__all__ = [
    "BLOCK_SEED",
    "DEFAULT_MIN_PAGES",
    "MAX_BLOCKS",
    "HostTemplate",
    "Stripped",
    "block_hash",
    "block_text",
    "main_blocks",
    "strip_template",
]

BLOCK_SEED = 0x7E4D1A7E
"""The seed of :func:`block_hash` (the hashes are stored: changing it forgets every host's
template)."""
DEFAULT_MIN_PAGES = 5
"""Distinct pages of a host a block recurs on to be template, by default
(``TEMPLATE_MIN_PAGES``; the command line's ``--min-pages``)."""
MAX_BLOCKS = 1000
"""Distinct blocks of a page counted at most (a page of 10,000 table cells teaches no more)."""
MAX_BLOCK_CHARS = 1000
"""Characters of a block at most: a longer one is content, never template (not counted)."""


_MARKS = "-*•·–—|#>:;,. \u00a0"
"""Characters stripped from a block's ends: list bullets (trafilatura's ``- ``), table bars,
separators."""


def block_key(text: str) -> str:
    """A block as it is hashed: case-folded, white space collapsed, bullets and separators off
    its ends ('' for a block of none). String methods only: a page has hundreds of
    blocks, hashed in the page work."""
    return " ".join(text.casefold().split()).strip(_MARKS)


def block_text(text: str) -> str:
    """A block as shown (``templates``): white space collapsed, bullets and separators off
    its ends, its case kept."""
    return " ".join(text.split()).strip(_MARKS)


def block_hash(text: str) -> int | None:
    """The 32-bit unsigned hash of a block, or None for an empty one."""
    key = block_key(text)
    return mmh3.hash(key, BLOCK_SEED, signed=False) if key else None


class HostTemplate(NamedTuple):
    """What a host's pages are known to share, as the page work receives it."""

    blocks: frozenset[int]
    """Hashes of the blocks that recur on at least ``TEMPLATE_MIN_PAGES`` pages of the host."""
    pages: int = 0
    """Pages of the host learned from (across every crawler of the store)."""
    known: bool = False
    """The host has been learned from long enough that its template is trusted
    (``pages`` reached ``TEMPLATE_MIN_PAGES``)."""
    blocks_wanted: bool = True
    """The page's own blocks are wanted (to learn from, and to tell whether the known
    template fits it); a known host's pages are sampled (their hashing costs CPU)."""


def _cells(line: str) -> list[str]:
    """A line's blocks: a table row (trafilatura's ``| a | b |``) its cells, else itself."""
    if "|" not in line:
        return [line]
    return [cell for cell in line.split("|") if cell.strip()]


def main_blocks(text: str) -> list[str]:
    """The blocks of an extracted main text: its lines, a table row's cells apart."""
    return [cell for line in text.splitlines() for cell in _cells(line)]


class Stripped(NamedTuple):
    """A main text with its template blocks left out."""

    text: str
    """The lines left (a table row keeps its cells that are not template)."""
    template_chars: int
    """Characters of the main text's blocks that are template."""
    chars: int
    """Characters of the main text's blocks in all."""

    @property
    def share(self) -> float:
        """The template blocks' share of the main text's characters (0 for no text)."""
        return self.template_chars / self.chars if self.chars else 0.0


def strip_template(text: str, template: frozenset[int]) -> Stripped:
    """``text`` without the blocks whose hash is in ``template`` (see the module docstring)."""
    kept: list[str] = []
    template_chars = chars = 0
    for line in text.splitlines():
        cells = _cells(line)
        left = []
        for cell in cells:
            size = len(cell.strip())
            chars += size
            if template and block_hash(cell) in template:
                template_chars += size
            else:
                left.append(cell)
        if len(left) == len(cells):
            kept.append(line)
        elif left and any(block_key(cell) for cell in left):
            kept.append(" | ".join(left))
    return Stripped("\n".join(kept), template_chars, chars)
