"""The blocks of a parsed page, hashed as :func:`~simhash_filter.core.template.block_hash`
hashes them: what the store counts per host to learn the host's template (core/template.py).

A block is one text node of the page (scripts and styles stripped): a menu item's link text,
a table cell, a paragraph without inline markup, a label. trafilatura's lines of such blocks
hash alike (``- Sports`` and ``<li><a>Sports</a>``); a paragraph split by inline markup is
several nodes and never matches a line, so it is never left out of the main text as template
(the safe side). Text nodes come from the one pass that reads the visible text; elements and
their ``text_content`` cost 1.6x more CPU (measured on pages_en). Every block of the page
counts, not only those of the main text: a site's menu is learned from every page of the
site, including those whose extraction left it out.
"""

from __future__ import annotations

from collections.abc import Iterable

from simhash_filter.core.template import MAX_BLOCK_CHARS, MAX_BLOCKS, block_hash

__all__ = ["page_blocks"]


def page_blocks(nodes: Iterable[str]) -> tuple[int, ...]:
    """The distinct block hashes of a page's text nodes, in document order, at most
    :data:`~simhash_filter.core.template.MAX_BLOCKS`; a node longer than
    :data:`~simhash_filter.core.template.MAX_BLOCK_CHARS` is content, not template."""
    seen: set[int] = set()
    hashes: list[int] = []
    for node in nodes:
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
