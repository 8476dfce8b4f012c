"""Canonical hints: resolving and normalizing a hint, the Link header, which hint wins."""

from __future__ import annotations

import pytest

from simhash_filter.core.canonical import (
    MAX_HINT_CHARS,
    declared_canonical,
    link_header_canonical,
    one_hint,
    resolve_hint,
)

PAGE = "https://News.Example.com/2024/story.html?utm_source=x#top"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://news.example.com/story", "https://news.example.com/story"),
        ("/story", "https://news.example.com/story"),
        ("story-2.html", "https://news.example.com/2024/story-2.html"),
        ("../about", "https://news.example.com/about"),
        ("//cdn.example.org/a", "https://cdn.example.org/a"),
        ("  https://news.example.com/a#section  ", "https://news.example.com/a"),
        ("HTTPS://NEWS.EXAMPLE.COM:443/A", "https://news.example.com/A"),
        ("http://news.example.com:8080/a", "http://news.example.com:8080/a"),
        ("http://news.example.com", "http://news.example.com/"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example/x"),
        ("http://[::1]:8000/a", "http://[::1]:8000/a"),
        ("?page=1", "https://news.example.com/2024/story.html?page=1"),
    ],
)
def test_hints_resolve_against_the_page(value: str, expected: str) -> None:
    assert resolve_hint(value, PAGE) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "javascript:alert(1)",
        "mailto:editor@example.com",
        "data:text/html,<p>hi</p>",
        "ftp://files.example.com/a",
        "https://user:secret@news.example.com/a",
        "https://news.example.com:99999/a",
        "https://news.example.com:port/a",
        "https://exa mple.com/a",
        "https://news.example.com/a\x00b",
        "https://news.example.com/<script>",
        "http://[zz::1]/a",
        "http:///nohost",
        "https://" + "a" * MAX_HINT_CHARS + ".com/",
        None,
        42,
        ["https://news.example.com/a"],
    ],
)
def test_garbage_is_no_hint(value: object) -> None:
    assert resolve_hint(value, PAGE) is None


def test_base_href_resolves_relative_hints_and_a_bad_base_is_ignored() -> None:
    assert resolve_hint("a.html", PAGE, base="/news/") == "https://news.example.com/news/a.html"
    assert resolve_hint("a.html", PAGE, base="javascript:void(0)") == (
        "https://news.example.com/2024/a.html"
    )


def test_the_link_header_names_the_canonical() -> None:
    headers = [
        b'<https://news.example.com/story>; rel="canonical"',
        '</amp/story>; rel="amphtml", <https://cdn.example/x.css>; rel=preload',
    ]
    assert link_header_canonical(headers, PAGE) == "https://news.example.com/story"
    relative = ['</story>; rel=canonical; title="x"']
    assert link_header_canonical(relative, PAGE) == "https://news.example.com/story"
    several_rels = ['</story>; REL="alternate Canonical"']
    assert link_header_canonical(several_rels, PAGE) == "https://news.example.com/story"


def test_link_headers_without_one_canonical_give_none() -> None:
    assert link_header_canonical([], PAGE) is None
    assert link_header_canonical(['</a>; rel="next"'], PAGE) is None
    conflicting = ['</a>; rel="canonical"', '</b>; rel="canonical"']
    assert link_header_canonical(conflicting, PAGE) is None
    assert link_header_canonical(['<javascript:x>; rel="canonical"'], PAGE) is None
    assert link_header_canonical(["garbage without brackets; rel=canonical"], PAGE) is None
    agreeing = ['</a>; rel="canonical"', '<https://news.example.com/a>; rel="canonical"']
    assert link_header_canonical(agreeing, PAGE) == "https://news.example.com/a"


def test_strong_hints_must_agree_and_og_url_is_weak() -> None:
    a, b, og = "https://x.example/a", "https://x.example/b", "https://x.example/og"
    assert declared_canonical(link=a, header=a, og_url=og) == a
    assert declared_canonical(link=a, og_url=og) == a
    assert declared_canonical(header=b, og_url=og) == b
    assert declared_canonical(og_url=og) == og
    assert declared_canonical(link=a, header=b, og_url=og) is None  # conflict: nothing
    assert declared_canonical() is None
    assert one_hint([None, a, None, a]) == a
    assert one_hint([a, b]) is None
