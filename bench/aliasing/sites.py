"""The benchmark's view of a site: its requests, the content behind a URL, its canonicals.

``bench_canonical`` crawls each site with ``scrapy crawl site`` and then asks the site what
happened: which request targets it answered with which status (:meth:`BenchSite.hits_since`),
what content each target shows (:meth:`BenchSite.content_of`), which URL a content's
cluster should keep (:meth:`BenchSite.canonical`), and which contents a crawl can reach
(:meth:`BenchSite.reachable`; ``None`` when the crawl with the filter off decides it).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, unquote, urlsplit

from bench.aliasing.wordpress import HOME, STATE, classify
from crawler.testsite import SiteServer
from crawler.testsite.aliasing import AliasingSite, GroundTruth

__all__ = ["BenchSite", "GeneratedSite", "Hit", "WordPressSite", "target_of"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One request the site answered: its target (path and query) and status."""

    target: str
    status: int


def target_of(url: str) -> str:
    """The request target of a URL (path and query, percent-escapes decoded): the form the
    ground truth compares."""
    split = urlsplit(url)
    target = unquote(split.path or "/")
    return f"{target}?{unquote(split.query)}" if split.query else target


class BenchSite(Protocol):
    """A site the benchmark crawls."""

    name: str

    @property
    def start_url(self) -> str: ...

    def mark(self) -> int: ...
    def hits_since(self, mark: int) -> list[Hit]: ...
    def content_of(self, target: str) -> str | None: ...
    def canonical(self, content: str) -> str | None: ...
    def reachable(self) -> set[str] | None: ...


@dataclass
class GeneratedSite:
    """The generated aliasing site, served from this process (its log is the server's)."""

    site: AliasingSite
    name: str = "generated"
    server: SiteServer = field(init=False)
    truth: GroundTruth = field(init=False)

    def __post_init__(self) -> None:
        self.server = self.site.serve()
        self.truth = self.site.ground_truth()

    @property
    def start_url(self) -> str:
        return self.server.url("/")

    def mark(self) -> int:
        return len(self.server.requested)

    def hits_since(self, mark: int) -> list[Hit]:
        return [
            Hit(t, 404 if self.site.page(t) is None else 200) for t in self.server.requested[mark:]
        ]

    def content_of(self, target: str) -> str | None:
        return self.site.content_of(target)

    def canonical(self, content: str) -> str | None:
        return self.truth.canonical.get(content)

    def reachable(self) -> set[str] | None:
        return set(self.truth.reachable)

    def hint(self, content: str) -> str:
        """Where ``content`` declares its canonical, and which (``plan()``'s choice)."""
        c = self.site.contents.get(content)
        return "unknown" if c is None else f"hint {c.hint} -> {c.declared}"

    def close(self) -> None:
        self.server.stop()


@dataclass
class WordPressSite:
    """The WordPress site of ``bench/aliasing/wordpress.sh``: requests from nginx's access log,
    the content of a URL from fetching it once (no redirects followed) and classifying it."""

    home: str = HOME
    state: Path = STATE
    name: str = "wordpress"
    agent: str = field(default_factory=lambda: f"simhash-filter-bench/{uuid.uuid4().hex[:12]}")
    _contents: dict[str, str | None] = field(default_factory=dict)
    _canonicals: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        truth = json.loads((self.state / "truth.json").read_text())
        self._canonicals = {f"post/{p['id']}": target_of(p["permalink"]) for p in truth["posts"]}

    @property
    def start_url(self) -> str:
        return self.home + "/"

    @property
    def log(self) -> Path:
        return self.state / "logs" / "access.log"

    def mark(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def crawl_settings(self) -> dict[str, str]:
        """A user agent of this process's own: other crawls of the shared site (other
        benchmarks, other engineers) write to the same access log, and :meth:`hits_since`
        counts only the requests that carry it."""
        return {"USER_AGENT": self.agent}

    def hits_since(self, mark: int) -> list[Hit]:
        with self.log.open("rb") as handle:
            handle.seek(mark)
            lines = handle.read().decode("utf-8", "replace").splitlines()
        hits = []
        for line in lines:
            parts = line.split("\t")
            if len(parts) >= 5 and parts[2] in {"GET", "HEAD"} and parts[4] == self.agent:
                hits.append(Hit(parts[3], int(parts[1])))
        return hits

    def content_of(self, target: str) -> str | None:
        if target not in self._contents:
            self._contents[target] = self._fetch(target)
        return self._contents[target]

    def _fetch(self, target: str) -> str | None:
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            url = self.home + quote(target, safe="/?&=%;:+,@!$'()*~")
            with opener.open(url, timeout=30) as response:
                if "html" not in response.headers.get("Content-Type", ""):
                    return "file/" + target
                return classify(response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError:
            return None  # a redirect or an error: no content of its own

    def canonical(self, content: str) -> str | None:
        return self._canonicals.get(content)

    def reachable(self) -> set[str] | None:
        return None

    def close(self) -> None:
        pass
