"""The loopback site of ``bench_crawl``: real pages, three near-duplicates of each, hubs.

Every page of ``pages_en/html/*.html.gz`` and ``pages_zh/original/*.html``, each also in
three near-duplicate variants (a syndication banner and another title, a reader comment
block, the last paragraph removed) under other URLs, plus hub pages linking them.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from crawler.testsite import Page

__all__ = ["HUB_SIZE", "build_bench_site", "hub_pages", "load_corpus", "variants"]

HUB_SIZE = 50
"""Links a hub page holds (besides the link to the next hub)."""


def load_corpus(data: Path) -> list[tuple[str, str, bytes]]:
    """(language, name, html bytes) for every page of the corpus."""
    pages = [
        ("en", p.name.split(".")[0][:16], gzip.decompress(p.read_bytes()))
        for p in sorted((data / "pages_en" / "html").glob("*.html.gz"))
    ]
    pages += [
        ("zh", p.stem[:16], p.read_bytes())
        for p in sorted((data / "pages_zh" / "original").glob("*.html"))
    ]
    return pages


_BODY = re.compile(rb"<body[^>]*>", re.I)
_END_BODY = re.compile(rb"</body>", re.I)
_TITLE = re.compile(rb"</title>", re.I)
_LAST_P = re.compile(rb"<p[ >](?:(?!<p[ >]).)*?</p>(?!.*<p[ >])", re.I | re.S)


def _insert_after_body(html: bytes, block: bytes) -> bytes:
    match = _BODY.search(html)
    return html[: match.end()] + block + html[match.end() :] if match else block + html


def _insert_before_end(html: bytes, block: bytes) -> bytes:
    matches = list(_END_BODY.finditer(html))
    return (
        html[: matches[-1].start()] + block + html[matches[-1].start() :]
        if matches
        else html + block
    )


def variants(html: bytes) -> list[bytes]:
    """Three near-duplicates of a page."""
    banner = (
        b'<div class="syndication"><p>Republished with permission. '
        b"Read the original on our partner site.</p></div>"
    )
    syndicated = _TITLE.sub(
        b" | Partner Network</title>", _insert_after_body(html, banner), count=1
    )
    comments = _insert_before_end(
        html,
        b'<section class="comments"><h3>2 comments</h3><ul><li><b>kim</b> Great read, thanks.</li>'
        b"<li><b>joe</b> I disagree with the second point.</li></ul></section>",
    )
    trimmed = _LAST_P.sub(b"", html, count=1)
    return [syndicated, comments, trimmed]


def build_bench_site(corpus: list[tuple[str, str, bytes]]) -> tuple[dict[str, Page], int]:
    pages: dict[str, Page] = {}
    for lang, name, html in corpus:
        pages[f"/{lang}/{name}/original.html"] = Page(html, "text/html")
        for n, variant in enumerate(variants(html), 1):
            pages[f"/{lang}/{name}/copy{n}.html"] = Page(variant, "text/html")
    paths = list(pages)
    pages.update(hub_pages(paths))
    return pages, len(paths)


def hub_pages(paths: list[str]) -> dict[str, Page]:
    """``/hub/<n>`` pages linking ``paths``, :data:`HUB_SIZE` each, each linking the next."""
    hubs = [paths[i : i + HUB_SIZE] for i in range(0, len(paths), HUB_SIZE)]
    pages = {}
    for h, chunk in enumerate(hubs):
        links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in chunk)
        if h + 1 < len(hubs):
            links += f'<li><a href="/hub/{h + 1}">next</a></li>'
        pages[f"/hub/{h}"] = Page(
            f"<html><body><ul>{links}</ul></body></html>".encode(), "text/html"
        )
    return pages
