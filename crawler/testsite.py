"""A loopback web site with near-duplicates, for the demo, the end-to-end tests and benchmarks.

:func:`build_site` returns every page as bytes (with its ``Content-Type``), and
:class:`SiteServer` serves any such mapping on ``127.0.0.1`` at an ephemeral port from a
thread. Nothing touches the network beyond loopback, so the demo runs on a machine with no
internet. The pages look like real sites: each template has navigation, sidebars and a
footer around the article, and:

- ``harbour-bridge`` appears five times: the original news page, the same page under a URL
  with a tracking parameter, a print version with a changed date (linked only from the other
  four, and itself linking to ``/print/help.html``), a blog repost with a reader comment
  block, and a news page with one paragraph removed;
- four distinct articles share one heavy portal template;
- a Chinese article in UTF-8, and the same article, GBK-encoded (``charset=gbk`` in the header
  and the ``<meta>``), in another template with a changed date; a second, distinct Chinese
  article;
- broken input: an empty page, random bytes served as ``text/html``, a 5 MB page (an article
  followed by a huge inline JSON blob), a photo gallery page with no main text;
- ``robots.txt`` disallowing ``/private/`` (linked from the home page).
"""

from __future__ import annotations

import functools
import html
import itertools
import json
import random
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

from .articles import (
    HARBOUR_BRIDGE,
    HIGH_SPEED_RAIL_ZH,
    LIBRARY,
    NIGHT_TRAINS,
    SOURDOUGH,
    URBAN_BEES,
    VOLCANO_DRONES,
    WASTE_SORTING_ZH,
    Article,
)

__all__ = [
    "HUGE_PAGE_BYTES",
    "Page",
    "SiteServer",
    "build_site",
    "generated_article",
    "generated_site",
    "html_page",
]

HUGE_PAGE_BYTES = 5 * 1024 * 1024
HTML_UTF8 = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Page:
    """One resource of the site."""

    body: bytes
    content_type: str = HTML_UTF8
    status: int = 200


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _paragraphs(paragraphs: Iterable[str]) -> str:
    return "\n".join(f"      <p>{_e(p)}</p>" for p in paragraphs)


def html_page(
    title: str, body: str, *, lang: str = "en", charset: str = "utf-8", head: str = ""
) -> str:
    """A complete HTML document around ``body``."""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{lang}">\n<head>\n  <meta charset="{charset}">\n'
        f'  <meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"  <title>{_e(title)}</title>\n"
        '  <link rel="stylesheet" href="/static/site.css">\n'
        f"{head}</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


# -- templates ---------------------------------------------------------------------------

_NEWS_SECTIONS = ("World", "Business", "Harbour", "Sport", "Culture", "Weather", "Opinion")


def news_template(
    article: Article,
    *,
    date: str,
    paragraphs: Iterable[str] | None = None,
    print_link: str | None = None,
) -> str:
    """ "The Harbour Courier": a regional newspaper layout."""
    nav = " ".join(f'<a href="/#{s.lower()}">{s}</a>' for s in _NEWS_SECTIONS)
    tools = f'<a class="print" href="{print_link}">Print this article</a>' if print_link else ""
    body = f"""<header class="masthead"><a href="/">The Harbour Courier</a>
  <nav class="sections">{nav}</nav>
  <form class="search"><input name="q" placeholder="Search the Courier"></form>
</header>
<main>
  <article class="story">
    <h1>{_e(article.title)}</h1>
    <p class="byline">By our local affairs reporter, published {_e(date)}</p>
    <div class="story-body">
{_paragraphs(paragraphs if paragraphs is not None else article.paragraphs)}
    </div>
    <div class="tools">{tools} <a href="/#share">Share</a></div>
  </article>
  <aside class="most-read"><h2>Most read</h2><ol>
    <li><a href="/#a">Council approves new ferry timetable</a></li>
    <li><a href="/#b">Storm warning for the weekend</a></li>
    <li><a href="/#c">Fishing quotas: what changes this year</a></li>
  </ol></aside>
</main>
<footer><p>The Harbour Courier, 4 Quay Street. Contact the newsroom. Privacy. Terms.</p>
<p>Copyright the Harbour Courier. All rights reserved.</p></footer>"""
    return html_page(f"{article.title} | The Harbour Courier", body)


def print_template(article: Article, *, date: str) -> str:
    """A bare printer-friendly page; links to a help page only found here."""
    body = f"""<div class="print-header">The Harbour Courier, printer-friendly version
  <a href="/print/help.html">Printing help</a></div>
<article>
<h1>{_e(article.title)}</h1>
<p class="date">{_e(date)}</p>
{_paragraphs(article.paragraphs)}
</article>
<p class="print-footer">Printed from the Harbour Courier website.</p>"""
    return html_page(f"{article.title} (print)", body)


_COMMENTS = (
    ("Margaret", "I crossed it this morning with my dog, lovely to have it back."),
    ("dockside_dave", "Fourteen million though. Somebody should answer for that overspend."),
    ("Ines R.", "Does anyone know if the cycle lane is open in both directions yet?"),
)


def blog_template(
    article: Article, *, date: str, comments: bool = False, print_link: str | None = None
) -> str:
    """ "Notes from the Estuary": a personal blog that reposts local news, with comments."""
    comment_block = ""
    if comments:
        items = "\n".join(
            f'    <li class="comment"><p class="comment-author">{_e(who)}</p>'
            f'<p class="comment-text">{_e(what)}</p></li>'
            for who, what in _COMMENTS
        )
        comment_block = f"""  <section id="comments" class="comments"><h2>3 comments</h2>
  <ol class="comment-list">
{items}
  </ol>
  <form class="comment-form"><textarea name="comment"></textarea>
  <button>Post comment</button></form></section>"""
    print_html = f'<li><a href="{print_link}">Print</a></li>' if print_link else ""
    body = f"""<div class="blog-header"><a href="/">Notes from the Estuary</a>
  <span>A blog about our town</span></div>
<div class="layout">
  <div class="post">
    <h1 class="entry-title">{_e(article.title)}</h1>
    <div class="entry-meta">Posted on {_e(date)} in Local news</div>
    <div class="entry-content">
{_paragraphs(article.paragraphs)}
    </div>
{comment_block}
  </div>
  <div class="sidebar"><ul class="share">{print_html}</ul><h3>Blogroll</h3><ul>
    <li><a href="/#x">Estuary birds</a></li><li><a href="/#y">Old town walks</a></li>
  </ul><h3>Archives</h3><ul><li><a href="/#m">March 2024</a></li></ul></div>
</div>
<div class="blog-footer">Powered by a small blogging engine.</div>"""
    return html_page(f"{article.title} - Notes from the Estuary", body)


_PORTAL_MENU = [
    "Home",
    "News",
    "City",
    "Life",
    "Environment",
    "Science",
    "Technology",
    "Transport",
    "Food",
    "Travel",
    "Education",
    "Health",
    "Housing",
    "Jobs",
    "Events",
    "Weather",
    "Traffic",
    "Opinion",
    "Letters",
    "Photos",
    "Video",
    "Podcasts",
    "Newsletters",
    "Archive",
    "Subscribe",
    "Contact",
    "Advertise",
    "Careers",
    "Help",
]

_PORTAL_ABOUT = (
    "City Portal is an independent online magazine about life in the city and the region "
    "around it. Our small team of editors and contributors covers local politics, the "
    "environment, science, transport, food and culture, with a focus on the people who make "
    "the city what it is. We are funded by our readers and by a limited number of carefully "
    "chosen advertisers, and we never sell personal data. If you have a story to tell, a "
    "correction to suggest or a question about our work, write to the editors at any time; "
    "every message is read by a person."
)
_PORTAL_LEGAL = (
    "All content on this website is protected by copyright unless stated otherwise. Articles "
    "may be quoted for the purposes of criticism, review or news reporting with a link to the "
    "original. This site uses cookies to remember your preferences and to measure how many "
    "people read each article; by continuing to browse you agree to their use as described in "
    "our cookie policy. Advertising partners may use their own cookies. City Portal is a "
    "registered trading name of City Portal Media Limited."
)


def portal_template(
    article: Article | None, *, date: str, extra: str = "", gallery: bool = False
) -> str:
    """ "City Portal": one heavy template (mega menu, long sidebar and footer) for many articles."""
    menu = "\n".join(f'    <li><a href="/#{w.lower()}">{w}</a></li>' for w in _PORTAL_MENU)
    trending = "\n".join(
        f'    <li><a href="/#t{i}">{_e(t)}</a></li>'
        for i, t in enumerate(
            (
                "Ten walks along the old canal",
                "Where to find the best noodles this winter",
                "The tram extension: a timeline",
                "Meet the city's last clockmaker",
                "Photos: the lantern festival",
            )
        )
    )
    if article is not None:
        main = f"""  <article class="entry">
    <h1>{_e(article.title)}</h1>
    <div class="meta">City Portal staff | {_e(date)} | 6 min read</div>
{_paragraphs(article.paragraphs)}
  </article>"""
        title = f"{article.title} - City Portal"
    else:
        figures = "\n".join(
            f'    <figure><img src="/static/lantern-{i}.jpg" alt="Lantern {i}">'
            f"<figcaption>Lantern {i}</figcaption></figure>"
            for i in range(1, 13)
        )
        main = f"""  <section class="gallery"><h1>Photos: the lantern festival</h1>
{figures}
  </section>"""
        title = "Photos: the lantern festival - City Portal"
    body = f"""<div class="cookie-banner">We use cookies. <a href="/#cookies">Learn more</a>
  <button>Accept</button></div>
<header><a class="logo" href="/">City Portal</a>
  <nav class="mega-menu"><ul>
{menu}
  </ul></nav></header>
<div class="page">
{main}
  <aside class="sidebar">
    <section class="about"><h2>About City Portal</h2><p>{_PORTAL_ABOUT}</p></section>
    <section class="trending"><h2>Trending</h2><ul>
{trending}
    </ul></section>
    <section class="newsletter"><h2>Newsletter</h2>
      <p>The week in the city, every Friday morning. Free, and easy to cancel.</p>
      <form><input type="email" name="email"><button>Sign up</button></form></section>
  </aside>
</div>
<footer class="site-footer"><p>{_PORTAL_LEGAL}</p>
  <p><a href="/#about">About</a> <a href="/#privacy">Privacy</a> <a href="/#terms">Terms</a></p>
</footer>
{extra}"""
    return html_page(title, body)


def zh_news_template(article: Article, *, date: str, charset: str = "utf-8") -> str:
    """ "城市日报": a Chinese newspaper layout."""
    body = f"""<div class="top"><a href="/">城市日报</a>
  <ul class="nav"><li><a href="/#1">首页</a></li><li><a href="/#2">本地</a></li>
  <li><a href="/#3">财经</a></li><li><a href="/#4">文化</a></li></ul></div>
<div class="content">
  <h1>{_e(article.title)}</h1>
  <div class="info">来源：城市日报　发布时间：{_e(date)}</div>
  <div class="article">
{_paragraphs(article.paragraphs)}
  </div>
</div>
<div class="footer">城市日报版权所有　未经授权禁止转载</div>"""
    return html_page(article.title, body, lang="zh-CN", charset=charset)


def zh_portal_template(article: Article, *, date: str, charset: str = "utf-8") -> str:
    """ "山水网": a Chinese portal that reposts articles."""
    body = f"""<div class="header"><a href="/">山水网</a> 资讯 | 旅游 | 美食 | 论坛</div>
<div class="main">
  <div class="crumb">当前位置：首页 &gt; 资讯 &gt; 正文</div>
  <h1 class="title">{_e(article.title)}</h1>
  <div class="source">{_e(date)}　转载自城市日报</div>
  <div id="text">
{_paragraphs(article.paragraphs)}
  </div>
  <div class="related"><h3>相关阅读</h3><ul><li><a href="/#r1">周末去哪儿</a></li>
  <li><a href="/#r2">本市天气预报</a></li></ul></div>
</div>
<div class="copyright">山水网　客服热线　广告服务　关于我们</div>"""
    return html_page(f"{article.title}_山水网", body, lang="zh-CN", charset=charset)


# -- the site --------------------------------------------------------------------------


SHORT_PARAGRAPH = 8  # the harbour article's one-sentence paragraph, left out of one variant


def _without(article: Article, index: int) -> tuple[str, ...]:
    return article.paragraphs[:index] + article.paragraphs[index + 1 :]


def _huge_extra(size: int) -> str:
    """An inline JSON blob (as single-page apps embed their state) of about ``size`` bytes."""
    rng = random.Random(7)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
    ]
    record = {f"k{i}": " ".join(rng.choice(words) for _ in range(12)) for i in range(40)}
    chunk = json.dumps(record)
    count = max(1, size // (len(chunk) + 1))
    blob = "[" + ",".join([chunk] * count) + "]"
    return f'<script type="application/json" id="app-state">{blob}</script>'


def build_site(
    *, huge_page_bytes: int = HUGE_PAGE_BYTES, clusters: int = 0, seed: int = 0
) -> dict[str, Page]:
    """Every resource of the test site by path (query strings are ignored when serving).

    ``clusters > 0`` adds :func:`generated_site`'s pages (``/gen/...``, linked from the home
    page through its index pages): hundreds of pages for distributed crawls and benchmarks.
    """
    pages: dict[str, Page] = {}

    def add(path: str, text: str, *, charset: str = "utf-8") -> None:
        content_type = "text/html" if charset == "utf-8" else f"text/html; charset={charset}"
        if charset == "utf-8":
            content_type = HTML_UTF8
        pages[path] = Page(text.encode(charset), content_type)

    a = HARBOUR_BRIDGE
    print_url = "/print/harbour-bridge.html"
    add("/news/harbour-bridge.html", news_template(a, date="12 March 2024", print_link=print_url))
    add(print_url, print_template(a, date="Wednesday 13 March 2024"))
    add(
        "/print/help.html",
        html_page("Printing help", "<h1>Printing help</h1><p>Use your browser's print menu.</p>"),
    )
    add(
        "/blog/2024/03/harbour-bridge-reopens/",
        blog_template(a, date="March 13, 2024", comments=True, print_link=print_url),
    )
    add(
        "/news/harbour-bridge-short.html",
        news_template(
            a, date="12 March 2024", paragraphs=_without(a, SHORT_PARAGRAPH), print_link=print_url
        ),
    )
    for article in (URBAN_BEES, VOLCANO_DRONES, LIBRARY, NIGHT_TRAINS):
        add(f"/portal/{article.slug}.html", portal_template(article, date="5 April 2024"))
    add("/portal/lantern-photos.html", portal_template(None, date="6 April 2024"))

    z = WASTE_SORTING_ZH
    add(f"/zh/{z.slug}.html", zh_news_template(z, date="2024年3月12日 08:30"))
    add(
        f"/zh/gbk/{z.slug}.html",
        zh_portal_template(z, date="2024-03-13 10:05", charset="gbk"),
        charset="gbk",
    )
    r = HIGH_SPEED_RAIL_ZH
    add(f"/zh/{r.slug}.html", zh_news_template(r, date="2024年4月2日 17:45"))

    pages["/broken/empty.html"] = Page(b"")
    pages["/broken/binary.html"] = Page(random.Random(3).randbytes(20_000), "text/html")
    big = portal_template(SOURDOUGH, date="8 April 2024")
    big = big.replace("</body>", _huge_extra(huge_page_bytes) + "\n</body>")
    add(f"/broken/{SOURDOUGH.slug}-huge.html", big)
    add("/private/secret.html", html_page("Private", "<p>Robots must not read this.</p>"))
    pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /private/\n", "text/plain")

    links = [
        "/news/harbour-bridge.html",
        "/news/harbour-bridge.html?utm_source=rss",
        "/blog/2024/03/harbour-bridge-reopens/",
        "/news/harbour-bridge-short.html",
        *(p for p in pages if p.startswith(("/portal/", "/zh/", "/broken/", "/private/"))),
    ]
    if clusters > 0:
        generated, _groups = generated_site(clusters, seed=seed)
        pages.update(generated)
        links += sorted((p for p in generated if p.startswith("/gen/index-")), key=_index_no)
    items = "\n".join(f'  <li><a href="{_e(link)}">{_e(link)}</a></li>' for link in links)
    pages["/"] = Page(
        html_page("Site map", f"<h1>Site map</h1>\n<ul>\n{items}\n</ul>").encode(), HTML_UTF8
    )
    return pages


# -- generated clusters (distributed crawls and benchmarks: hundreds of pages) ------------

GENERATED_CLUSTER_SIZES = (1, 2, 3, 4)
"""Cluster ``i`` of :func:`generated_site` has ``GENERATED_CLUSTER_SIZES[i % 4]`` pages."""

_SYLLABLES = tuple(
    c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou", "ei")
)


@functools.cache
def _vocabulary(seed: int, size: int = 6000) -> tuple[str, ...]:
    rng = random.Random(f"vocabulary-{seed}")
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return tuple(sorted(words))


_ZIPF = tuple(itertools.accumulate(1.0 / rank for rank in range(1, 1501)))


def generated_article(index: int, *, seed: int = 0) -> Article:
    """Article ``index`` of a deterministic series: about 600 pseudo-words in 9 paragraphs,
    each article with its own Zipf-distributed choice of words, so two articles of the
    series land far apart (their simhashes differ in about 30 bits) while a date line or a
    template's extra words move an article's simhash by a bit or two."""
    rng = random.Random(f"article-{seed}-{index}")
    words = rng.sample(_vocabulary(seed), len(_ZIPF))

    def sentence(count: int) -> str:
        text = " ".join(rng.choices(words, cum_weights=_ZIPF, k=count))
        return text[0].upper() + text[1:] + "."

    paragraphs = tuple(
        " ".join(sentence(rng.randint(10, 18)) for _ in range(rng.randint(4, 5))) for _ in range(9)
    )
    title = sentence(6)[:-1]
    return Article(f"story-{index}", title, paragraphs)


def generated_site(
    clusters: int, *, seed: int = 0, per_index: int = 25
) -> tuple[dict[str, Page], list[list[str]]]:
    """``clusters`` generated articles, each under 1 to 4 URLs (news, blog, print templates
    and the news page under a ``?ref=feed`` URL), linked in shuffled order from index pages
    ``/gen/index-<n>.html`` of ``per_index`` links: ``(pages, clusters as path lists)``.

    The members of a cluster are near-duplicates (same article, other template or date);
    pages of two clusters are far apart. Paths with a query string are served by their path.
    """
    pages: dict[str, Page] = {}
    groups: list[list[str]] = []
    for i in range(clusters):
        article = generated_article(i, seed=seed)
        size = GENERATED_CLUSTER_SIZES[i % len(GENERATED_CLUSTER_SIZES)]
        base = f"/gen/{article.slug}"
        print_path = f"{base}/print.html" if size >= 3 else None
        members = [f"{base}/news.html"]
        pages[members[0]] = Page(
            news_template(article, date="2 May 2024", print_link=print_path).encode()
        )
        if size >= 2:
            members.append(f"{base}/blog/")
            pages[members[-1]] = Page(blog_template(article, date="May 3, 2024").encode())
        if print_path is not None:
            members.append(print_path)
            pages[print_path] = Page(print_template(article, date="Friday 3 May 2024").encode())
        if size >= 4:
            members.append(f"{base}/news.html?ref=feed")
        groups.append(members)
    links = [path for group in groups for path in group]
    random.Random(f"links-{seed}").shuffle(links)
    for n, start in enumerate(range(0, len(links), per_index)):
        items = "\n".join(
            f'  <li><a href="{_e(link)}">{_e(link)}</a></li>'
            for link in links[start : start + per_index]
        )
        pages[f"/gen/index-{n}.html"] = Page(
            html_page(f"Stories {n}", f"<h1>Stories {n}</h1>\n<ul>\n{items}\n</ul>").encode()
        )
    return pages, groups


def _index_no(path: str) -> int:
    return int(path.rsplit("-", 1)[1].split(".")[0])


# -- the server ------------------------------------------------------------------------


class SiteServer:
    """Serves ``pages`` (path → :class:`Page`) on ``127.0.0.1`` at an ephemeral port.

    Use as a context manager; :attr:`base_url` is ``http://127.0.0.1:<port>`` and
    :attr:`requested` lists every path asked for (query strings included), in order, and
    :attr:`hits` the same paths with the User-Agent that asked (which worker of a crawl).
    ``latency`` delays every response (benchmarks: a server that is not on loopback).
    """

    def __init__(
        self,
        pages: Mapping[str, Page],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
    ):
        self.pages = pages
        self.latency = latency  # seconds each response waits, as a distant server would
        self.requested: list[str] = []
        self.hits: list[tuple[str, str]] = []  # (path, User-Agent): which crawler asked
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, *, body: bool) -> None:
                server_self.requested.append(self.path)
                server_self.hits.append((self.path, self.headers.get("User-Agent", "")))
                if server_self.latency > 0:
                    time.sleep(server_self.latency)
                page = server_self.pages.get(urlsplit(self.path).path)
                if page is None:
                    page = Page(b"<html><body><h1>Not found</h1></body></html>", status=404)
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
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

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return self.base_url + path

    def start(self) -> SiteServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="test-site", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
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
