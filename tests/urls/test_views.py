"""The view-marker form of a URL (urls/views.py): a mirror's, print view's or AMP view's
likely canonical."""

from __future__ import annotations

import pytest

from simhash_filter.urls.views import has_view_marker, view_form


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
