"""The test site's HTTP server: serves a mapping of path → :class:`Page` on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

__all__ = ["HTML_UTF8", "Page", "Resolver", "SiteServer"]

HTML_UTF8 = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Page:
    """One resource of the site; ``headers`` are extra response headers (``Link``,
    ``Location``), sent after ``Content-Type`` and ``Content-Length``."""

    body: bytes
    content_type: str = HTML_UTF8
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


Resolver = Callable[[str], "Page | None"]
"""A site as a function: the request target (path and query, as sent) → its page, or ``None``
(404). Sites whose query strings choose the content are served this way."""


class SiteServer:
    """Serves ``pages`` (path → :class:`Page`, the query string ignored; or a :data:`Resolver`
    given the whole request target) on ``127.0.0.1`` at an ephemeral port.

    Use as a context manager; :attr:`base_url` is ``http://127.0.0.1:<port>`` and
    :attr:`requested` lists every path asked for (query strings included), in order, and
    :attr:`hits` the same paths with the User-Agent that asked (which worker of a crawl).
    ``latency`` delays every response (benchmarks: a server that is not on loopback);
    :meth:`hold` keeps every response waiting (requests are still recorded) until
    :meth:`release` (tests: hold a crawl still until every worker is up); :meth:`hold_after`
    does so once a number of responses more were sent.
    """

    def __init__(
        self,
        pages: Mapping[str, Page] | Resolver,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
    ):
        self.pages = pages
        self.latency = latency  # seconds each response waits, as a distant server would
        self.requested: list[str] = []
        self.hits: list[tuple[str, str]] = []  # (path, User-Agent): which crawler asked
        self._serving = threading.Event()
        self._serving.set()
        self._quota: int | None = None  # responses to send before holding (hold_after)
        self._quota_lock = threading.Lock()
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, *, body: bool) -> None:
                server_self.requested.append(self.path)
                server_self.hits.append((self.path, self.headers.get("User-Agent", "")))
                server_self._take_quota()
                server_self._serving.wait()
                if server_self.latency > 0:
                    time.sleep(server_self.latency)
                page = server_self.resolve(self.path)
                if page is None:
                    page = Page(b"<html><body><h1>Not found</h1></body></html>", status=404)
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
                for name, value in page.headers:
                    self.send_header(name, value)
                self.end_headers()
                if body:
                    self.wfile.write(page.body)

            def do_GET(self) -> None:
                self._serve(body=True)

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    def resolve(self, target: str) -> Page | None:
        """The page served for a request target (path and query)."""
        if callable(self.pages):
            return self.pages(target)
        return self.pages.get(urlsplit(target).path)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return self.base_url + path

    def hold(self) -> None:
        """Answer no request until :meth:`release`."""
        self._serving.clear()

    def hold_after(self, count: int) -> None:
        """Answer the requests held now and ``count`` more, then hold every later one (as
        :meth:`hold`) until :meth:`release`."""
        with self._quota_lock:
            self._quota = count
            if count > 0:
                self._serving.set()
            else:
                self._serving.clear()

    def _take_quota(self) -> None:
        with self._quota_lock:
            if self._quota is None:
                return
            if self._quota <= 0:
                self._serving.clear()
            else:
                self._quota -= 1

    def release(self) -> None:
        """Answer the held requests and every new one (any :meth:`hold_after` quota ends)."""
        with self._quota_lock:
            self._quota = None
            self._serving.set()

    def start(self) -> SiteServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="test-site", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
