"""The listing detector (page/listing.py) on small pages made here, in the markup of real
content systems: a WordPress archive (one post shown whole), a Drupal view of teasers, a Hugo
theme's list, a Ghost feed, an old theme's ``div.post`` loop, a theme that titles archive
entries with ``<h1>``: listings. An article with reader comments, with a block of related
posts, with sibling cards of other articles, beside a column of entries, or wrapped twice:
not listings. And the mark reaches the sketch through the page work."""

from __future__ import annotations

import random

import pytest

from simhash_filter import Fingerprinter
from simhash_filter.core.signature import decode_sketch
from simhash_filter.page.extract import extract_page, parse_bounded
from simhash_filter.page.listing import is_listing
from simhash_filter.page.work import work_page

_SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in ("a", "e", "i", "o", "u", "ou")]


def prose(seed: int, words: int) -> str:
    """Made-up sentences, the same for the same seed."""
    rng = random.Random(seed)
    out = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(words)]
    return ". ".join(" ".join(out[i : i + 12]).capitalize() for i in range(0, words, 12)) + "."


def paragraphs(seed: int, count: int) -> str:
    return "\n".join(f"<p>{prose(seed * 100 + n, 60)}</p>" for n in range(count))


def page(main: str, *, aside: str = "") -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Harbour Herald</title></head><body class="home blog has-sidebar">
<header class="site-header"><p class="site-title"><a href="/">Harbour Herald</a></p>
<nav><ul><li><a href="/world/">World</a></li><li><a href="/sport/">Sport</a></li></ul></nav>
</header><div id="content" class="site-content content-sidebar-wrap">
<main id="main" class="site-main">{main}</main>{aside}</div>
<footer class="site-footer"><p>Proudly powered by a CMS.</p></footer></body></html>"""


def wordpress_entry(post_id: int, body: str, heading: str = "h2") -> str:
    return f"""<article id="post-{post_id}" class="post-{post_id} post type-post hentry entry">
<header class="entry-header"><{heading} class="entry-title"><a href="/p/{post_id}/">Post {post_id}
</a></{heading}></header><div class="entry-content">{body}</div>
<footer class="entry-footer">Published November 2, 2024 by editor</footer></article>"""


def excerpt(seed: int) -> str:
    return f"<p>{prose(seed, 55)}\u2026 Continue reading</p>"


def wordpress_archive(heading: str = "h2") -> str:
    """A WordPress home page 2: nine excerpts and one long post shown whole."""
    entries = [
        wordpress_entry(n, paragraphs(n, 25) if n == 352 else excerpt(n), heading)
        for n in (328, 352, 268, 292, 316, 340, 256, 364, 280, 304)
    ]
    header = '<header class="page-header"><h1 class="page-title">Page 2</h1></header>'
    return page(header + "\n".join(entries))


def drupal_view() -> str:
    rows = "\n".join(
        f"""<div class="views-row"><article role="article" class="node node--type-article
node--promoted node--view-mode-teaser"><h2 class="node__title"><a href="/node/{n}">Story {n}
</a></h2><div class="node__content"><div class="field field--name-body">{paragraphs(n, 2)}
</div></div></article></div>"""
        for n in range(1, 7)
    )
    return page(
        f'<h1 class="page-title">Frontpage</h1><div class="views-element-container">'
        f'<div class="view view-frontpage"><div class="view-content">{rows}</div></div></div>'
    )


def hugo_list() -> str:
    entries = "\n".join(
        f"""<article class="post-entry"><header class="entry-header"><h2>Note {n}</h2></header>
<div class="entry-content"><p>{prose(n, 50)}</p></div>
<footer class="entry-footer"><span>March {n}, 2024</span></footer>
<a class="entry-link" href="/posts/note-{n}/">Note {n}</a></article>"""
        for n in range(1, 9)
    )
    return page(f'<header class="page-header"><h1>Posts</h1></header>{entries}')


def ghost_feed() -> str:
    cards = "\n".join(
        f"""<article class="post-card post tag-news"><a class="post-card-content-link"
href="/story-{n}/"><header class="post-card-header"><h2 class="post-card-title">Story {n}</h2>
</header><div class="post-card-excerpt">{prose(n, 40)}</div></a></article>"""
        for n in range(1, 9)
    )
    return page(f'<div class="post-feed">{cards}</div>')


def old_theme_loop() -> str:
    posts = "\n".join(
        f'<div class="post" id="post-{n}"><h2><a href="/?p={n}">Entry {n}</a></h2>'
        f'<div class="entry">{paragraphs(n, 2)}</div></div>'
        for n in range(1, 6)
    )
    return page(posts)


def single_post(extra_main: str = "", aside: str = "") -> str:
    return page(wordpress_entry(352, paragraphs(352, 25), heading="h1") + extra_main, aside=aside)


def comments() -> str:
    items = "\n".join(
        f"""<li id="comment-{n}" class="comment even thread-even depth-1">
<article id="div-comment-{n}" class="comment-body"><footer class="comment-meta">
<b class="fn">reader{n}</b> says:</footer><div class="comment-content"><p>{prose(n, 30)}</p>
</div></article></li>"""
        for n in range(1, 6)
    )
    return f"""<div id="comments" class="comments-area"><h2 class="comments-title">5 thoughts
</h2><ol class="comment-list">{items}</ol></div>"""


def cards(heading: str = "h3", n: int = 4, css: str = "card") -> str:
    return "\n".join(
        f'<article class="{css}"><{heading}><a href="/c/{i}/">Other story {i}</a></{heading}>'
        f"<p>{prose(900 + i, 20)}</p></article>"
        for i in range(n)
    )


def column_of_entries() -> str:
    """A right-hand column of entry blocks, each with an h2 (a news site's sidebar)."""
    return f'<div class="right-col">{cards("h2", 3, "story-list")}</div>'


def main_text_length(html: str) -> int:
    extracted = extract_page(html, visible=False)
    assert extracted.text is not None
    return len(extracted.text)


def listing(html: str) -> bool:
    return is_listing(parse_bounded(html), main_text_length(html))


@pytest.mark.parametrize(
    "html",
    [
        wordpress_archive(),
        wordpress_archive(heading="h1"),
        drupal_view(),
        hugo_list(),
        ghost_feed(),
        old_theme_loop(),
    ],
    ids=["wordpress", "wordpress-h1-titles", "drupal", "hugo", "ghost", "div-post"],
)
def test_a_listing_is_marked(html: str) -> None:
    assert listing(html)
    assert extract_page(html).listing


@pytest.mark.parametrize(
    "html",
    [
        single_post(),
        single_post(comments()),
        single_post(f'<section class="related-posts"><h2>Related</h2>{cards("h2")}</section>'),
        single_post(f'<div id="jp-relatedposts">{cards("h2")}</div>'),
        single_post(cards("h3")),
        single_post(aside=f"<aside>{cards('h2')}</aside>"),
        page(f"<div class='story'><h1>Report</h1>{paragraphs(9, 6)}</div>{column_of_entries()}"),
        page(
            f"<div class='entry-wrap'>{wordpress_entry(352, paragraphs(352, 4))}</div>"
            f"<div class='related-posts'>{cards('h2', 3)}</div>"
        ),
        page(
            f"<div class='entry-wrap'>{wordpress_entry(352, paragraphs(352, 4))}</div>"
            f"<section class='comments'>{cards('h2', 3, 'comment js-comment')}</section>"
        ),
        page(
            f'<div id="post-5" class="post-5 post hentry"><h2>Five</h2>{paragraphs(5, 20)}</div>'
            '<div class="post post-5 hentry"><h2>One response</h2><p>Thanks!</p></div>'
        ),
    ],
    ids=[
        "article",
        "with-comments",
        "related-posts",
        "jetpack-related",
        "sibling-cards",
        "aside-cards",
        "column-of-entries",
        "related-beside-an-h2-post",
        "drupal-comments",
        "one-post-twice",
    ],
)
def test_an_article_is_not_marked(html: str) -> None:
    """Related posts: a block of article cards after an article (in a region named for them,
    or as bare siblings titled below the article's h1) is the article's, not a list."""
    assert not listing(html)
    assert not extract_page(html).listing


def test_a_page_with_one_entry_or_none_is_not_a_listing() -> None:
    assert not listing(page(wordpress_entry(7, paragraphs(7, 10))))
    assert not listing(page(paragraphs(8, 10)))
    assert not is_listing(parse_bounded(wordpress_archive()), 0)
    assert not is_listing(None, 100)


def test_the_mark_reaches_the_sketch_through_the_page_work() -> None:
    fp = Fingerprinter()
    archive = work_page(fp, "http://h.example/page/2/", None, wordpress_archive(), max_bytes=10**7)
    post = work_page(fp, "http://h.example/p/352/", None, single_post(), max_bytes=10**7)
    assert archive.signature is not None
    assert post.signature is not None
    assert decode_sketch(archive.signature.sketch).listing
    assert not decode_sketch(post.signature.sketch).listing
    # an item's own text is not the extracted text: no mark
    given = work_page(fp, "http://h.example/x", prose(1, 300), wordpress_archive(), max_bytes=10**7)
    assert given.signature is not None
    assert not decode_sketch(given.signature.sketch).listing


_EVERY_ELEMENT = "//article | //*[contains(@class, 'post') or contains(@class, 'entry')]"


@pytest.mark.parametrize(
    "html",
    [
        wordpress_archive(),
        drupal_view(),
        old_theme_loop(),
        single_post(comments()),
        "<html class='post-root'><body class='entry'><article class='x'><p>a</p></article>"
        "<div class='Post'>b</div><div id='post'>c</div><p class='repost entryway'>d</p>"
        "<span class=''>e</span><article>f<div class='post'>g</div></article></body></html>",
    ],
)
def test_the_candidates_are_those_of_a_test_of_every_element(html: str) -> None:
    """``_CANDIDATES`` tests the ``class`` attributes only: the same nodes, in the same
    order, as the test of every element it replaced."""
    from lxml import etree

    from simhash_filter.page.listing import _CANDIDATES

    tree = parse_bounded(html)
    expected = etree.XPath(_EVERY_ELEMENT)(tree)
    assert expected
    assert _CANDIDATES(tree) == expected
