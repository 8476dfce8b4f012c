"""Pages of made-up sites whose template misleads the extraction (issue 43): the shapes of the
real false drops, built here so the tests need no data set.

- *newspaper*: the story sits in a container trafilatura drops, its ``<article>`` holds the
  site's long "SECTIONS" list: the extraction of every story is the list;
- *blog*: short posts beside a long book-list sidebar inside the content, extracted instead
  of the post;
- *wiki*: ``action=info`` pages, a table of the template's labels with each article's values.

Each site has a ``furniture`` weight: paragraphs of footer text every page carries (the
visible text around the extraction, as a real site's). The text is deterministic made-up prose.
"""

from __future__ import annotations

import html
import random
import zlib

__all__ = ["blog_post", "filler_story", "prose", "story", "wiki_info"]

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def prose(seed: int, words: int) -> str:
    """Made-up sentences: ``words`` pseudo-words, the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    for n in range(words):
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))
        out.append(word.capitalize() if n % 12 == 0 else word)
        if n % 12 == 11:
            out[-1] += "."
    return " ".join(out) + "."


def _seed(site: str) -> int:
    return zlib.crc32(site.encode())


def _furniture(site: str, weight: int) -> str:
    return "".join(
        f"<p class='legal'>{html.escape(prose(_seed(site) % 1000 + 7 * n, 40))}</p>"
        for n in range(weight)
    )


def story(site: str, title: str, seed: int, *, sections: int = 24, furniture: int = 12) -> str:
    """A newspaper story whose extraction is the site's SECTIONS list (the story itself sits
    in a ``widget`` container, which trafilatura's passes drop)."""
    menu = "".join(
        f"<li>{html.escape(prose(_seed(site) % 997 + n, 5))} section</li>" for n in range(sections)
    )
    body = "".join(f"<p>{html.escape(prose(seed * 31 + n, 30))}</p>" for n in range(6))
    return f"""<html><head><title>{html.escape(title)}</title></head><body>
<header><div class="logo">{html.escape(site)}</div></header>
<article><h1>{html.escape(title)}</h1>
<div class="story-body widget">{body}</div>
<div class="sections"><h2>SECTIONS</h2><ul>{menu}</ul></div>
</article>
<footer>{_furniture(site, furniture)}</footer></body></html>"""


def filler_story(
    site: str, title: str, seed: int, *, sections: int = 24, furniture: int = 12
) -> str:
    """A story of the same site whose extraction is right (its text in the ``<article>``,
    the SECTIONS list beside it): the pages a template is learned from."""
    menu = "".join(
        f"<li>{html.escape(prose(_seed(site) % 997 + n, 5))} section</li>" for n in range(sections)
    )
    body = "".join(f"<p>{html.escape(prose(seed * 31 + n, 30))}</p>" for n in range(6))
    return f"""<html><head><title>{html.escape(title)}</title></head><body>
<header><div class="logo">{html.escape(site)}</div></header>
<article><h1>{html.escape(title)}</h1>{body}</article>
<div class="sections"><h2>SECTIONS</h2><ul>{menu}</ul></div>
<footer>{_furniture(site, furniture)}</footer></body></html>"""


def blog_post(site: str, title: str, seed: int, *, furniture: int = 12) -> str:
    """A short post beside the blog's long book list, both inside the content; the post's
    few lines are in a container the extraction drops, the book list is extracted."""
    books = "".join(f"<p>{html.escape(prose(_seed(site) % 991 + n, 16))}</p>" for n in range(8))
    return f"""<html><head><title>{html.escape(title)}</title></head><body>
<header><p>{html.escape(site)}</p></header>
<main><article><h1>{html.escape(title)}</h1>
<div class="entry-content share-widget"><p>{html.escape(prose(seed, 25))}</p></div>
<div class="books"><h2>Books I love</h2>{books}</div></article></main>
<footer>{_furniture(site, furniture)}</footer></body></html>"""


LABELS = [
    "Display title", "Default sort key", "Page length (in bytes)", "Page ID",
    "Page content language", "Page content model", "Indexing by robots",
    "Number of redirects to this page", "Counted as a content page", "Page protection",
    "Page creator", "Date of page creation", "Latest editor", "Date of latest edit",
    "Total number of edits", "Total number of distinct authors",
]  # fmt: skip


def wiki_info(site: str, article: str, seed: int, *, furniture: int = 12) -> str:
    """MediaWiki's ``action=info`` page of ``article``: the template's labels, its values."""
    rng = random.Random(seed)
    values = [
        article, article.upper(), str(rng.randint(1000, 90000)), str(rng.randint(1, 9999)),
        "en - English", "wikitext", "Allowed", "0", "Yes", "Edit: allow all users",
        f"User{rng.randint(1, 99)}", f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        f"User{rng.randint(1, 99)}", f"2024-1{rng.randint(0, 2)}-0{rng.randint(1, 9)}",
        str(rng.randint(2, 300)), str(rng.randint(1, 40)),
    ]  # fmt: skip
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td><td>{html.escape(value)}</td></tr>"
        for label, value in zip(LABELS, values, strict=True)
    )
    return f"""<html><head><title>Information for "{html.escape(article)}"</title></head>
<body><div id="content"><h1>Information for "{html.escape(article)}"</h1>
<h2>Basic information</h2><table class="wikitable">{rows}</table></div>
<footer>{_furniture(site, furniture)}</footer></body></html>"""
