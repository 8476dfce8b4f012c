"""Canonical hints: the URL a page names as its canonical one, and which hints to believe.

Three sources, as search engines read them: ``<link rel="canonical" href>`` in the page,
the HTTP header ``Link: <url>; rel="canonical"`` (RFC 8288), and ``<meta property="og:url">``,
a weak hint (social-card markup, often the canonical, sometimes not). Each value is resolved
against the page's URL (an HTML value against ``<base href>`` when the page has one) and
normalized: an absolute http(s) URL with a host, no user name or password, no fragment, at
most :data:`MAX_HINT_CHARS` characters; anything else (``javascript:``, ``mailto:``, a
``data:`` URL, a bare ``#``, control characters, a bad port) is no hint at all.

A hint is evidence, never a verdict: the content check decides whether two pages are copies
(docs/keep.md). Pure: no I/O, no global state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit, urlunsplit

__all__ = [
    "MAX_HINT_CHARS",
    "PageHints",
    "declared_canonical",
    "link_header_canonical",
    "one_hint",
    "resolve_hint",
]

MAX_HINT_CHARS = 2048
"""Longer hints are rejected (browsers and search engines cap URLs near this length)."""

_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f<>\"\\^`{|}]")
_HOST = re.compile(r"^[a-z0-9._~-]+$")
_IPV6 = re.compile(r"^[0-9a-f:.]+$")
_LINK_VALUE = re.compile(r"<([^>]*)>([^,<]*)")
_REL_PARAM = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^;\s,]+))', re.IGNORECASE)


class PageHints(NamedTuple):
    """The canonical hints a page's HTML gave, each already resolved (None: none, or
    several that disagree)."""

    link: str | None = None
    """``<link rel="canonical">``."""
    og_url: str | None = None
    """``<meta property="og:url">`` (weak)."""


def _host(hostname: str) -> str | None:
    """The host as it goes into a normalized URL (IDNA, lower case), or None."""
    if ":" in hostname:  # an IPv6 literal (urlsplit took its brackets off)
        return f"[{hostname.lower()}]" if _IPV6.match(hostname.lower()) else None
    try:
        ascii_host = hostname.encode("idna").decode("ascii") if not hostname.isascii() else hostname
    except UnicodeError:
        return None
    ascii_host = ascii_host.lower().rstrip(".")
    return ascii_host if ascii_host and _HOST.match(ascii_host) else None


def resolve_hint(value: object, page_url: str, base: object = None) -> str | None:
    """``value`` as an absolute, normalized http(s) URL, resolved against ``base`` (a
    ``<base href>``, itself resolved against the page) or else ``page_url``; None when it is
    not a usable hint (see the module doc)."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > MAX_HINT_CHARS or _BAD_CHARS.search(value):
        return None
    against = page_url
    if isinstance(base, str) and base.strip():
        resolved_base = resolve_hint(base, page_url)
        if resolved_base is not None:
            against = resolved_base
    try:
        parts = urlsplit(urljoin(against, value))
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _SCHEMES or parts.username or parts.password:
        return None
    host = _host(parts.hostname or "")
    if host is None or (port is not None and not 0 < port < 65536):
        return None
    scheme = parts.scheme.lower()
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    url = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    return url if len(url) <= MAX_HINT_CHARS else None


def one_hint(values: Iterable[str | None]) -> str | None:
    """The one URL ``values`` agree on (Nones ignored), or None when they name several
    (conflicting hints are no hint: a search engine ignores them too)."""
    distinct = {value for value in values if value is not None}
    return distinct.pop() if len(distinct) == 1 else None


def link_header_canonical(headers: Iterable[str | bytes], page_url: str) -> str | None:
    """The ``rel="canonical"`` target of HTTP ``Link`` header values, resolved against the
    page URL (RFC 8288), or None (no such link, or several that disagree). Values that
    are not text are skipped."""
    targets: list[str | None] = []
    for header in headers:
        if isinstance(header, bytes):
            header = header.decode("latin-1")
        if not isinstance(header, str) or len(header) > 16 * MAX_HINT_CHARS:
            continue
        for target, params in _LINK_VALUE.findall(header):
            for quoted, token in _REL_PARAM.findall(params):
                if "canonical" in (quoted or token).lower().split():
                    targets.append(resolve_hint(target, page_url))
    return one_hint(targets)


def declared_canonical(
    *, link: str | None = None, header: str | None = None, og_url: str | None = None
) -> str | None:
    """The canonical a page declares: the strong hints (``<link rel="canonical">``, the
    ``Link`` header or an item's own field) when they agree, else, when it has no strong
    hint at all, its ``og:url``. Strong hints that disagree declare nothing."""
    if link is None and header is None:
        return og_url
    return one_hint((link, header))
