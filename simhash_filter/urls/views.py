"""A page's other views named by a path segment: ``/print/``, ``/amp/``, ``/mirror/``,
``/mobile/`` (issue 42).

A URL with such a segment is likely a view of the page at the URL without it, whether or
not it declares that page its canonical (a mirror often declares none). The crawl uses
:func:`view_form` as the likely canonical of a page that declares none and that no learned
rule maps (canonical first holds the view while that URL is checked); the request side
orders such URLs after the others (``SIMHASH_FILTER_VARIANTS_LAST``). Pure: no I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["MARKERS", "has_view_marker", "page_form", "view_form"]

MARKERS = frozenset({"print", "amp", "mirror", "mobile"})
"""Path segments that name another view of a page (compared case-folded)."""


def has_view_marker(url: str) -> bool:
    """True when one of ``url``'s path segments is a view marker."""
    return any(segment.casefold() in MARKERS for segment in urlsplit(url).path.split("/"))


def view_form(url: str) -> str | None:
    """``url`` without its view-marker path segments (``/mirror/news/a/`` → ``/news/a/``,
    ``/news/a/amp/`` → ``/news/a/``), or None when it has none."""
    split = urlsplit(url)
    segments = split.path.split("/")
    kept = [s for s in segments if s.casefold() not in MARKERS]
    if len(kept) == len(segments):
        return None
    path = "/".join(kept)
    if split.path.endswith("/") and not path.endswith("/"):
        path += "/"
    return urlunsplit(split._replace(path=path if path.startswith("/") else "/" + path))


def page_form(url: str, named: str | None = None) -> str | None:
    """The URL of the page ``url`` is likely another view of, or None: :func:`view_form`,
    else ``named`` (the page's weak hint, ``og:url``) when it is ``url`` up to a trailing
    slash (``/a`` naming ``/a/``: the same page under the site's own form, which a weak hint
    alone does not make a canonical to wait for). Both URLs in one canonical form."""
    viewed = view_form(url)
    if viewed is not None or named is None or named == url:
        return viewed
    split, other = urlsplit(url), urlsplit(named)
    same = (other.scheme, other.netloc, other.query) == (split.scheme, split.netloc, split.query)
    return named if same and other.path.rstrip("/") == split.path.rstrip("/") else None
