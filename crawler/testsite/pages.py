"""The test site's pages: articles, their near-duplicates, broken input, robots.txt, a home page.

The home page links everything; on request the site also holds the generated clusters and
the boilerplate traps."""

from __future__ import annotations

import json
import random

from crawler.articles import (
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

from .generated import generated_article, generated_site, index_number
from .server import HTML_UTF8, Page
from .templates import (
    blog_template,
    forum_template,
    html_page,
    link_list,
    news_template,
    portal_template,
    print_template,
    zh_news_template,
    zh_portal_template,
)

__all__ = ["FORUM_THREADS", "HUGE_PAGE_BYTES", "SHORT_PARAGRAPH", "build_site"]

HUGE_PAGE_BYTES = 5 * 1024 * 1024

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


_LINKED_FROM_HOME = ("/portal/", "/zh/", "/broken/", "/forum/", "/syndicated/", "/private/")

FORUM_THREADS = 3
"""Threads of the forum that :func:`build_site` adds with ``boilerplate_traps=True``."""


def build_site(
    *,
    huge_page_bytes: int = HUGE_PAGE_BYTES,
    clusters: int = 0,
    seed: int = 0,
    boilerplate_traps: bool = False,
) -> dict[str, Page]:
    """Every resource of the test site by path (query strings are ignored when serving).

    ``clusters > 0`` adds :func:`generated_site`'s pages (``/gen/...``, linked from the home
    page through its index pages): hundreds of pages for distributed crawls and benchmarks.
    ``boilerplate_traps`` adds the pages of issue 13.E: ``/forum/thread-<n>.html``, different
    posts whose extracted text is the same moderation notice (:func:`forum_template`), and
    ``/syndicated/urban-beekeeping.html``, a portal article reposted in the news template
    beside teasers of three other stories (a copy across sites whose pages differ: their
    visible texts share under half their character 5-grams).
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
    if boilerplate_traps:
        for n in range(FORUM_THREADS):
            post = generated_article(n, seed=13)
            add(f"/forum/thread-{n}.html", forum_template(post, date=f"{n + 3} June 2024"))
        others = (LIBRARY, NIGHT_TRAINS, VOLCANO_DRONES)
        repost = news_template(URBAN_BEES, date="7 April 2024", more_stories=others)
        add(f"/syndicated/{URBAN_BEES.slug}.html", repost)
    add("/private/secret.html", html_page("Private", "<p>Robots must not read this.</p>"))
    pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /private/\n", "text/plain")

    links = [
        "/news/harbour-bridge.html",
        "/news/harbour-bridge.html?utm_source=rss",
        "/blog/2024/03/harbour-bridge-reopens/",
        "/news/harbour-bridge-short.html",
        *(p for p in pages if p.startswith(_LINKED_FROM_HOME)),
    ]
    if clusters > 0:
        generated, _groups = generated_site(clusters, seed=seed)
        pages.update(generated)
        links += sorted((p for p in generated if p.startswith("/gen/index-")), key=index_number)
    pages["/"] = Page(link_list("Site map", links).encode(), HTML_UTF8)
    return pages
