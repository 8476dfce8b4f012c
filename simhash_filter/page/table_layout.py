"""A table-layout page's article without its layout's other cells.

A page laid out in a ``<table>`` (a portal of the 2000s: the site's menu, its ads and the
article each in a cell) comes out of trafilatura's fast passes as table rows, the article one
cell among the site's furniture: on the public pages a Chinese news page's 1,650-character
article came back inside 2,500 characters of its portal's menus and song adverts, an English
one's 2,000 inside 3,260. Its copies in other templates are then 0.64-0.70 alike, under the
match rule's 0.7. trafilatura's fallback comparison (readability, then justext: its pass
without ``fast``) finds the article cell on both public pages (0.97 and 0.99 alike to the
hand-extracted article).

So when most of the main text is table rows (:data:`TABLE_SHARE`) and trafilatura's own test
calls the extracted body table-dominated (:func:`tables_over_paragraphs`), that pass runs
too, and its text is kept only as a *part* of the first: prose, nearly all of its character
5-grams in the first text (:data:`MIN_CONTAINED`), and holding the first text's longest block
(the article cell). The page's text can only lose cells, never gain text the fast pass did
not return, and never lose its article. The second test is trafilatura's own for letting
readability's text replace its extraction (``external._prefer_readability``): of the 41 public
pages mostly in table rows (old Chinese portals, whose fallback mostly returns the same text)
it keeps 5, the one the fallback changes among them, so few pages pay the slower pass. Pure
functions of the text and the extracted body; the pass itself runs in ``extract.py``.
Measured in bench/history/templates.md.
"""

from __future__ import annotations

from typing import Any

from simhash_filter.core.template import main_blocks

__all__ = [
    "MIN_CONTAINED",
    "TABLE_SHARE",
    "is_table_layout",
    "keeps_article",
    "table_share",
    "tables_over_paragraphs",
]

TABLE_SHARE = 0.5
"""Share of the main text's characters in table rows (trafilatura's ``| a | b |`` lines) at
which the page may be laid out in a table: 40 of the 250 public pages (old Chinese portals
mostly), 4 of them also table-dominated (:func:`tables_over_paragraphs`)."""
MIN_CONTAINED = 0.9
"""Share of the fallback text's character 5-grams (and of the first text's longest block's)
that must be in the other text: the fallback's text is a part of the first one, holding its
article cell (both public pages: 1.00)."""
_GRAM = 5


def table_share(text: str) -> float:
    """The share of ``text``'s characters in table rows (lines starting with ``|``)."""
    lines = text.splitlines()
    total = sum(len(line) for line in lines)
    rows = sum(len(line) for line in lines if line.lstrip().startswith("|"))
    return rows / total if total else 0.0


def is_table_layout(text: str) -> bool:
    """Whether a fast pass's text is mostly table rows (:data:`TABLE_SHARE`)."""
    return table_share(text) >= TABLE_SHARE


def tables_over_paragraphs(body: Any) -> bool:
    """trafilatura's "structurally deficient" extraction (``external._prefer_readability``):
    its extracted ``body`` has no paragraph text, or more ``<table>`` than ``<p>`` elements.
    None (no body) is not."""
    if body is None:
        return False
    return not body.xpath(".//p//text()") or len(body.findall(".//table")) > len(
        body.findall(".//p")
    )


def _grams(text: str) -> set[str]:
    """The character 5-grams of ``text`` case-folded, table bars and white space collapsed."""
    flat = " ".join(text.casefold().replace("|", " ").split())
    return {flat[i : i + _GRAM] for i in range(len(flat) - _GRAM + 1)}


def _contained(part: str, whole: set[str]) -> bool:
    """Whether :data:`MIN_CONTAINED` of ``part``'s 5-grams are in ``whole``."""
    grams = _grams(part)
    return bool(grams) and len(grams & whole) >= MIN_CONTAINED * len(grams)


def keeps_article(first: str, fallback: str) -> bool:
    """Whether the fallback pass's text may stand for the first one's: a part of it
    (:data:`MIN_CONTAINED` of its 5-grams in the first text) that holds the first text's
    longest block (a table cell, or a line)."""
    if not fallback.strip():
        return False
    blocks = main_blocks(first)
    longest = max(blocks, key=len) if blocks else ""
    return _contained(fallback, _grams(first)) and _contained(longest, _grams(fallback))
