"""Listing pages: does a parsed page list several entries (a blog's home, a tag or category
archive, an author page, a section front) rather than show one?

A listing can show one of its entries whole (WordPress's excerpt of a post written without
spaces is the whole post; some themes show full posts on archives): its main text is then
mostly that entry, and the match rule alone would call the listing and the entry's own page
copies. The mark lets the rule tell them apart (``MatchRule.verify``: a listing and a page
that is not one are never copies).

An *entry* is what content systems wrap each post in: ``<article>`` (WordPress, Drupal,
Ghost, most Hugo and Jekyll themes, news fronts), or an element of class ``hentry`` (hAtom),
``h-entry`` (microformats2) or ``post`` (older WordPress themes), that has a heading and is
*top-level*: not inside another entry, not a reader comment, not in ``<aside>``, ``<nav>``,
``<footer>`` or a region named for comments, related or recommended posts; entries naming the
same post (``post-123``) count once. A page is a listing when its main entry (the one with the
most text) is one of a *loop*: other entries of the same tag, titled at the same heading
level, under the same parent or grandparent (a loop's items, bare or each in a wrapper), which
together hold most of the page's main text. An article followed by cards of other articles
is not a listing (its ``<h1>`` is not their ``<h3>``), nor is an article beside a column of
entries (the column holds a fraction of the main text). Of the 250 public article pages
(pages_en, pages_zh), none is marked (bench/history/canonical.md).
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

__all__ = ["is_listing"]

_ENTRY_CLASSES = frozenset({"hentry", "h-entry", "post"})
_SIDE_TAGS = frozenset({"aside", "nav", "footer"})
_SIDE_WORDS = ("comment", "related", "recomm")
"""Beginnings of the parts of a class or id (split at ``-`` and ``_``) that name a region of
comments or of other posts (``comments-area``, ``jp-relatedposts``, ``recommendations``)."""
_PARTS = re.compile(r"[-_]+")
_POST_ID = re.compile(r"^post-(\d+)$")
_CANDIDATES = etree.XPath("//@class[contains(., 'post') or contains(., 'entry')]/.. | //article")
"""A superset of the entries, found by libxml2 (a Python test of every element costs 20x
more); :func:`_is_entry` keeps the real ones. The ``class`` attributes are tested, not
every element (the same nodes as ``//*[contains(@class, ...)]``, in half the time; a test
pins the two alike)."""
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
LOOP_SHARE = 0.8
"""The share of a page's main text its loop of entries must hold for a listing: a listing's
main text is its entries (their titles, excerpts, bylines); an article page's sidebar column
of entries holds a fraction of it (at most 0.51 on the public pages, bench/history)."""


def _names(element: Any) -> list[str]:
    """The element's class tokens and id, lower-cased."""
    return [*str(element.get("class") or "").lower().split(), str(element.get("id") or "").lower()]


def _is_entry(element: Any) -> bool:
    """An element that wraps one post, by its tag or class, and is not a comment."""
    names = _names(element)
    if element.tag != "article" and not _ENTRY_CLASSES.intersection(names):
        return False
    return not any(part.startswith("comment") for name in names for part in _PARTS.split(name))


def _in_side_region(element: Any) -> bool:
    """True when an ancestor of ``element`` (below ``<body>``) is an aside, a navigation, a
    footer, or a region of comments or related posts."""
    for ancestor in element.iterancestors():
        if ancestor.tag in ("body", "html"):
            return False
        if ancestor.tag in _SIDE_TAGS:
            return True
        parts = (part for name in _names(ancestor) for part in _PARTS.split(name))
        if any(part.startswith(_SIDE_WORDS) for part in parts):
            return True
    return False


def _post_id(element: Any) -> str | None:
    """The post an entry names (WordPress's ``post-123`` class or id), or None."""
    for name in _names(element):
        if match := _POST_ID.match(name):
            return match.group(1)
    return None


def _top_entries(tree: Any) -> list[Any]:
    """The page's top-level entries with a heading, one per post, in document order."""
    entries = [e for e in _CANDIDATES(tree) if _is_entry(e)]
    marked = set(entries)
    top, posts = [], set()
    for entry in entries:
        if any(a in marked for a in entry.iterancestors()) or _in_side_region(entry):
            continue
        if next(entry.iter(*_HEADINGS), None) is None:
            continue
        post = _post_id(entry)
        if post is not None and post in posts:
            continue
        posts.add(post)
        top.append(entry)
    return top


_INVISIBLE = frozenset({"script", "style", "noscript", "template", "svg"})


def _text_length(element: Any) -> int:
    """Characters of the text a reader sees in ``element`` (scripts and styles left out)."""
    total = 0
    for node in element.iter():
        if node.text and node.tag not in _INVISIBLE:
            total += len(node.text.strip())
        if node.tail and node is not element:
            total += len(node.tail.strip())
    return total


def _heading(entry: Any) -> str:
    """The tag of an entry's first heading (``h2``; every top-level entry has one): a loop
    titles its items alike."""
    heading = next(entry.iter(*_HEADINGS), None)
    return "" if heading is None else str(heading.tag)


def _near(a: Any, b: Any) -> bool:
    """Two entries under one parent, or one grandparent below ``<body>`` (each item of a loop
    in its own wrapper, as Drupal's views rows)."""
    pa, pb = a.getparent(), b.getparent()
    if pa is None or pb is None:
        return False
    if pa is pb:
        return True
    ga: Any = pa.getparent()
    return ga is not None and ga is pb.getparent() and ga.tag not in ("body", "html")


def is_listing(tree: Any, main_text_length: int) -> bool:
    """True when the parsed page's main entry (the top-level entry with the most text) is one
    of a loop (another top-level entry of the same tag, titled by the same heading level,
    under its parent or grandparent), and the loop holds at least :data:`LOOP_SHARE` of the
    characters of the page's main text (``main_text_length``): the main text is the list,
    not an article beside a column of cards. See the module docstring."""
    top = _top_entries(tree) if tree is not None else []
    if len(top) < 2 or main_text_length <= 0:
        return False
    sizes = {id(entry): _text_length(entry) for entry in top}
    main = max(top, key=lambda entry: sizes[id(entry)])
    heading = _heading(main)
    loop = [
        other
        for other in top
        if other is not main
        and other.tag == main.tag
        and _heading(other) == heading
        and _near(main, other)
    ]
    if not loop:
        return False
    loop_length = sizes[id(main)] + sum(sizes[id(entry)] for entry in loop)
    return loop_length >= LOOP_SHARE * main_text_length
