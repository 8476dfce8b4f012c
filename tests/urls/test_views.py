"""The view-marker form of a URL (urls/views.py): a mirror's, print view's or AMP view's
likely canonical."""

from __future__ import annotations

import pytest

from simhash_filter.urls.views import has_view_marker, page_form, view_form


@pytest.mark.parametrize(
    ("url", "form"),
    [
        ("https://x.example/mirror/news/a/", "https://x.example/news/a/"),
        ("https://x.example/Mirror/news/a", "https://x.example/news/a"),
        ("https://x.example/news/a/amp/", "https://x.example/news/a/"),
        ("https://x.example/amp/news/a/?lang=de", "https://x.example/news/a/?lang=de"),
        ("https://x.example/print/news/a/", "https://x.example/news/a/"),
        ("https://x.example/mirror/", "https://x.example/"),
        ("https://x.example/news/a/", None),
        ("https://x.example/news/amplifier/", None),
        ("https://x.example/news/a/?print=1", None),
    ],
)
def test_view_form(url: str, form: str | None) -> None:
    assert view_form(url) == form
    assert has_view_marker(url) is (form is not None)


@pytest.mark.parametrize(
    ("url", "named", "form"),
    [
        ("https://x.example/news/a", "https://x.example/news/a/", "https://x.example/news/a/"),
        ("https://x.example/news/a/", "https://x.example/news/a", "https://x.example/news/a"),
        ("https://x.example/mirror/a", "https://x.example/b/", "https://x.example/a"),
        ("https://x.example/news/a", None, None),
        ("https://x.example/news/a", "https://x.example/news/a", None),
        ("https://x.example/news/a", "https://x.example/", None),  # another page
        ("https://x.example/news/a", "https://x.example/news/b/", None),
        ("https://x.example/news/a", "https://y.example/news/a/", None),  # another host
        ("https://x.example/news/a?p=1", "https://x.example/news/a/", None),  # another query
    ],
)
def test_page_form(url: str, named: str | None, form: str | None) -> None:
    """A view's page, else the page's own ``og:url`` when it differs by a trailing slash."""
    assert page_form(url, named) == form
