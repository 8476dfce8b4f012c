"""Generated near-duplicate clusters: hundreds of pages for distributed crawls and benchmarks.

Articles of pseudo-words, each published under 1 to 4 URLs (news, blog and print templates,
a tracking-parameter URL), linked in shuffled order from index pages.
"""

from __future__ import annotations

import functools
import itertools
import random

from crawler.articles import Article

from .server import Page
from .templates import blog_template, link_list, news_template, print_template

__all__ = ["GENERATED_CLUSTER_SIZES", "generated_article", "generated_site", "index_number"]

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
        pages[f"/gen/index-{n}.html"] = Page(
            link_list(f"Stories {n}", links[start : start + per_index]).encode()
        )
    return pages, groups


def index_number(path: str) -> int:
    """The number of a ``/gen/index-<n>.html`` page."""
    return int(path.rsplit("-", 1)[1].split(".")[0])
