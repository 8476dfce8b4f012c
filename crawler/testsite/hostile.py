"""Hostile pages: page kinds that once cost a page's work far more than its size, each at
any size in bytes. The fuzz corpus of ``tests/test_hostile.py`` and the pages
``bench/bench_hostile.py`` times."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["KINDS", "WORDS", "hostile_page", "html_page"]

_MARKS = "\u0301\u0316\u0334\u0345\u05b0\u0323\u0300\u0327"
"""Combining marks of eight canonical classes, out of canonical order (NFKC sorts each run)."""
WORDS = "the crawler reads every page once and keeps only one copy of each article "


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head`` + ``unit`` repeated + ``tail``, about ``size`` bytes of UTF-8."""
    unit_bytes = len(unit.encode())
    fixed = len((head + tail).encode())
    return head + unit * max(1, (size - fixed) // unit_bytes) + tail


def html_page(body: str) -> str:
    """``body`` in a minimal HTML document with a title."""
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def _article(unit: str, size: int) -> str:
    return _repeat(unit, size, "<html><body><article>", "</article></body></html>")


def _deep(size: int) -> str:
    """Text nested 300 elements deep (past libxml2's depth limit of 255), then more text."""
    nest = 300
    head = "<html><body>" + "<div>" * nest + "<p>"
    tail = "</p>" + "</div>" * nest + "</body></html>"
    return _repeat(WORDS, size, head, tail)


def _marks_in_nav_han_in_article(size: int) -> str:
    half = size // 2
    nav = _repeat("a" + _MARKS * 4 + " ", half // 2, "<nav>", "</nav>")
    art = _repeat("丂", half, "<article><p>", "</p></article>")
    return html_page(nav + art)


KINDS: dict[str, Callable[[int], str]] = {
    "prose": lambda n: _article(f"<p>{WORDS * 4}</p>", n),
    "headings": lambda n: _article("<h2>head</h2>text ", n),
    "paragraphs": lambda n: _article("<p>para text here</p>", n),
    "links": lambda n: _repeat('<a href="/x">link</a> ', n, "<html><body><div>", "</div>"),
    "list-items": lambda n: _article("<li>item</li>", n),
    "table-cells": lambda n: _repeat("<td>cell</td>", n, "<html><body><table><tr>", "</table>"),
    "line-breaks": lambda n: _article("<br>text ", n),
    "marks": lambda n: _repeat(_MARKS, n, "<html><body><article><p>a", "</p></article>"),
    "marks-words": lambda n: _article("a" + _MARKS * 8 + " ", n),
    "han-unjoinable": lambda n: _repeat("丂", n, "<html><body><article><p>", "</p></article>"),
    "han-common": lambda n: _repeat("的", n, "<html><body><article><p>", "</p></article>"),
    "kana": lambda n: _repeat("あいうえお", n, "<html><body><article><p>", "</p></article>"),
    "marks-nav-han-article": _marks_in_nav_han_in_article,
    "deep": _deep,
    "machine-text": lambda n: _article("x://a@b.c](d( <a b ", n),
    "one-word": lambda n: _repeat("a", n, "<html><body><article><p>", "</p></article>"),
}
"""Hostile page kinds: size in bytes → the page's HTML."""


def hostile_page(kind: str, size: int) -> bytes:
    """The page of ``kind`` at about ``size`` bytes (at most ``size``), UTF-8."""
    return KINDS[kind](size).encode()[:size]
