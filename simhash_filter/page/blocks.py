"""The blocks of a parsed page, hashed as :func:`~simhash_filter.core.template.block_hash`
hashes them: what the store counts per host to learn the host's template (core/template.py).

A block is one text node of the page (scripts and styles stripped): a menu item's link text,
a table cell, a paragraph without inline markup, a label; and the whole text of a paragraph,
list item or cell that holds inline markup (:data:`MIXED_TAGS`). trafilatura's lines of
such blocks hash alike (``- Sports`` and ``<li><a>Sports</a>``). Text nodes come from the one
pass that reads the visible text; every block element's ``text_content`` cost 1.6x more CPU
(measured on pages_en), the mixed ones alone 1.35x. A mixed element's text is serialized
(``tostring(method="text")``: the same text as ``text_content``, which evaluates an XPath
per element, in about half its CPU). Every block of the page
counts, not only those of the main text: a site's menu is learned from every page of the
site, including those whose extraction left it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from lxml import etree

from simhash_filter.core.template import MAX_BLOCK_CHARS, MAX_BLOCKS, block_hash

__all__ = ["MIXED_TAGS", "page_blocks"]

MIXED_TAGS = (
    "p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
    "figcaption",
)  # fmt: skip
"""Elements whose whole text is one of trafilatura's lines: hashed whole too when they hold
inline markup (a sidebar paragraph with a link is several text nodes, one line)."""


def _mixed(tree: Any) -> Iterator[str]:
    """The whole text of each element of :data:`MIXED_TAGS` that holds inline markup (what
    ``text_content`` gives: its text nodes, its own tail left out)."""
    for element in tree.iter(*MIXED_TAGS):
        if len(element):  # inline markup inside: its nodes alone do not make its line
            yield etree.tostring(element, method="text", encoding=str, with_tail=False)


def page_blocks(nodes: Iterable[str], tree: Any = None) -> tuple[int, ...]:
    """The distinct block hashes of a page's text nodes (and of its paragraphs, items and
    cells with inline markup, from ``tree``), at most
    :data:`~simhash_filter.core.template.MAX_BLOCKS`; a block longer than
    :data:`~simhash_filter.core.template.MAX_BLOCK_CHARS` is content, not template."""
    seen: set[int] = set()
    hashes: list[int] = []
    for node in chain(nodes, _mixed(tree) if tree is not None else ()):
        if len(node) < 2 or len(node) > MAX_BLOCK_CHARS or node.isspace():
            continue
        value = block_hash(node)
        if value is None or value in seen:
            continue
        seen.add(value)
        hashes.append(value)
        if len(hashes) >= MAX_BLOCKS:
            break
    return tuple(hashes)
