"""A loopback site whose pages are reachable under many URLs, and whose parameters sometimes
select content: the request side's end-to-end tests crawl it.

Every article lives at ``/news/<slug>`` and is linked from the listing pages under its
aliases: tracking parameters (``?utm_source=``), a session (``;jsessionid=``), a comment-reply
parameter (``?replytocom=``: learnable), a print view (``/print/news/<slug>``: learnable
prefix) and an AMP view (``/news/<slug>/amp``: learnable suffix). Parameters that select
content are there too: ``/item?id=<k>`` (a different article per id) and ``/list?page=<k>``
(a different listing per page). ``/moved/<slug>?utm_source=mail`` redirects to
``/moved/<slug>``, linked nowhere else (the redirect target must not count as seen).
The texts are generated from a fixed seed: different articles share no passage.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["AliasSite", "ViewSite", "alias_site", "article_text"]

_SYLLABLES = "ka lo mi nu pe ra si to va ze bri cho dra fle gru hal jin kor lum mar nev ost".split()


def _words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(n)]


def article_text(seed: int) -> str:
    """Five paragraphs of made-up words, different for every seed."""
    rng = random.Random(seed)
    return "\n".join(" ".join(_words(rng, 60)) + "." for _ in range(5))


def _page(title: str, text: str, links: list[str]) -> bytes:
    paragraphs = "".join(f"<p>{escape(p)}</p>" for p in text.split("\n") if p)
    anchors = "".join(f'<li><a href="{escape(href)}">{escape(href)}</a></li>' for href in links)
    return (
        f"<html><head><title>{escape(title)}</title></head><body>"
        f"<nav><ul>{anchors}</ul></nav><article><h1>{escape(title)}</h1>{paragraphs}</article>"
        "</body></html>"
    ).encode()


@dataclass
class AliasSite:
    """The site's content (module doc) and what it served."""

    articles: int = 12
    per_list: int = 3
    items: int = 6
    requested: list[str] = field(default_factory=list)
    base_url: str = ""

    def slugs(self) -> list[str]:
        return [f"story-{k}" for k in range(self.articles)]

    def aliases(self, slug: str, k: int) -> list[str]:
        return [
            f"/news/{slug}",
            f"/news/{slug}?utm_source=feed&utm_medium=rss",
            f"/news/{slug};jsessionid=A1B2C3D4E5F6A7B8C9D0",
            f"/news/{slug}?replytocom={k + 1}",
            f"/news/{slug}?replytocom={k + 100}",
            f"/print/news/{slug}",
            f"/news/{slug}/amp",
        ]

    def respond(self, target: str) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, headers) for a request target (path and query)."""
        parts = urlsplit(target)
        path = parts.path.split(";")[0]
        query = parse_qs(parts.query)
        if path in ("/", "/list"):
            return 200, self._listing(int(query.get("page", ["1"])[0])), {}
        if path.startswith("/print/"):
            path = path[len("/print") :]
        if path.endswith("/amp"):
            path = path[: -len("/amp")]
        if path.startswith("/moved/"):
            if "utm_source" in query:
                return 301, b"", {"Location": path}
            return 200, _page("moved", article_text(10_000), []), {}
        if path == "/item":
            k = int(query.get("id", ["0"])[0])
            return 200, _page(f"item {k}", article_text(20_000 + k), []), {}
        if path.startswith("/news/story-"):
            k = int(path.rsplit("-", 1)[1])
            if 0 <= k < self.articles:
                return 200, _page(f"story {k}", article_text(k), []), {}
        return 404, b"<html><body>not found</body></html>", {}

    def _listing(self, page: int) -> bytes:
        slugs = self.slugs()[(page - 1) * self.per_list : page * self.per_list]
        links = [alias for k, slug in enumerate(slugs) for alias in self.aliases(slug, k)]
        if page * self.per_list < self.articles:
            links.append(f"/list?page={page + 1}")
        if page == 1:
            links += [f"/item?id={k}" for k in range(self.items)]
            links.append("/moved/story-x?utm_source=mail")
        return _page(f"listing {page}", "", links)


@contextmanager
def alias_site(site: AliasSite | None = None) -> Iterator[AliasSite]:
    """Serve an :class:`AliasSite` on 127.0.0.1 for the duration of the block."""
    site = site or AliasSite()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            with lock:
                site.requested.append(self.path)
            status, body, headers = site.respond(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class ViewSite(AliasSite):
    """Documents ``/doc/<k>`` with a ``?view=`` parameter that changes nothing on the first
    ``same_until`` documents and selects another text on the others: a rule learned on the
    first ones is wrong on the rest. One document per listing page, so the crawl reaches
    the documents one after another."""

    views: dict[int, list[str]] = field(default_factory=dict)
    same_until: int = 3

    def text_of(self, k: int, view: str | None) -> str:
        if view is None or k < self.same_until:
            return article_text(100 + k)
        return article_text(100_000 + 1000 * k + sum(map(ord, view)))

    def respond(self, target: str) -> tuple[int, bytes, dict[str, str]]:
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        if parts.path in ("/", "/list"):
            page = int(query.get("page", ["0"])[0])
            links = [f"/doc/{page}"] + [f"/doc/{page}?view={v}" for v in self.views.get(page, [])]
            if page + 1 < self.articles:
                links.append(f"/list?page={page + 1}")
            return 200, _page(f"listing {page}", "", links), {}
        if parts.path.startswith("/doc/"):
            k = int(parts.path.rsplit("/", 1)[1])
            view = query.get("view", [None])[0]
            return 200, _page(f"doc {k} {view}", self.text_of(k, view), []), {}
        return 404, b"<html><body>not found</body></html>", {}

    def distinct_texts(self) -> set[str]:
        """Every different text the site serves."""
        texts = set()
        for k in range(self.articles):
            texts.add(self.text_of(k, None))
            texts.update(self.text_of(k, view) for view in self.views.get(k, []))
        return texts
