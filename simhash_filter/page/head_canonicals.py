"""The canonical hints of a parsed page: ``<link rel="canonical">`` and ``og:url`` in its
``<head>``, resolved against ``<base href>`` or the page URL (:mod:`simhash_filter.core.canonical`).

Read from the tree the page work parses anyway (:func:`~simhash_filter.page.extract.extract_page`),
before extraction changes it: no second parse. Only the head counts, as for search
engines: a ``<link rel="canonical">`` in a page's body (a quoted snippet, a comment form)
is not the page's.
"""

from __future__ import annotations

from typing import Any

from simhash_filter.core.canonical import PageHints, one_hint, resolve_hint

__all__ = ["MAX_HEAD_ELEMENTS", "page_hints"]

MAX_HEAD_ELEMENTS = 2_000
"""Elements of ``<head>`` read at most (a hostile head of a million links costs no more)."""


def page_hints(tree: Any, page_url: str | None) -> PageHints | None:
    """The page's hints, or None when it has none (or no URL to resolve them against).
    Several ``<link rel="canonical">`` that disagree give no link hint."""
    if not page_url or tree is None:
        return None
    head = tree.find("head") if getattr(tree, "tag", None) == "html" else None
    if head is None:
        return None
    base: str | None = None
    links: list[str | None] = []
    og_urls: list[str | None] = []
    for count, element in enumerate(head.iter("link", "meta", "base")):
        if count >= MAX_HEAD_ELEMENTS:
            break
        get = element.get
        if element.tag == "base":
            base = base or get("href")
        elif element.tag == "link":
            if "canonical" in str(get("rel") or "").lower().split():
                links.append(get("href"))
        elif str(get("property") or get("name") or "").strip().lower() == "og:url":
            og_urls.append(get("content"))
    if not links and not og_urls:
        return None
    hints = PageHints(
        one_hint(resolve_hint(value, page_url, base) for value in links),
        one_hint(resolve_hint(value, page_url, base) for value in og_urls),
    )
    return hints if hints != PageHints() else None
