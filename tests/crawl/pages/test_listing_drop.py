"""A blog archive that shows one long post whole is not a copy of that post (bench_canonical's
WordPress drops, bench/history/canonical.md).

WordPress lists posts on its home, category, tag and author archives as 55-"word" excerpts,
counted by white space under a locale such as en_US. A post with fewer than 55 space-separated
words (Chinese text, or any post written without spaces) is shown *whole* on every archive
that lists it, beside nine short excerpts of other posts. When that post is long, the archive's
main text is mostly the post: their character-5-gram Jaccard similarity is the post's share of
the archive (0.78 for post 352 and /page/2/ on the bench site, sketch estimate 0.816; 0.70 for
/tag/topic-0/ and post 363, estimate 0.746), at or above the match rule's 0.7, so whichever of
the two pages comes second is dropped as a copy of the other. Neither is a copy: the post is
one document, the archive a list of ten. Dropping the post loses the post (its permalink, its
item); dropping the archive loses the list (and, with the middleware, every link only it has).

The pages are made here (twentytwentyone's markup, a deterministic made-up text), so the test
needs no data set. The filter marks the archive a listing (page/listing.py) and the match rule
never calls a listing and a page that is not one copies: both are kept, the match counted
under ``listing``; two listings that are copies are still dropped.
"""

from __future__ import annotations

import html

import pytest
from support.helpers import filter_stats, make_pipeline, run
from support.template_site import prose

from simhash_filter.crawl.pages.pipeline import NearDuplicate

SITE = "http://blog.example"


def _paragraphs(text: str, size: int = 300) -> list[str]:
    """``text`` cut into paragraphs of about ``size`` characters, at spaces."""
    paragraphs, current = [], ""
    for word in text.split(" "):
        current = f"{current} {word}" if current else word
        if len(current) >= size:
            paragraphs.append(current)
            current = ""
    return paragraphs + ([current] if current else [])


def _frame(title: str, body_class: str, main: str) -> str:
    """A twentytwentyone page around ``main``: header, navigation, footer."""
    return f"""<!doctype html>
<html lang="en-US"><head><meta charset="UTF-8">
<title>{html.escape(title)} &#8211; Harbour Herald</title></head>
<body class="{body_class} wp-embed-responsive is-light-theme">
<div id="page" class="site"><header id="masthead" class="site-header">
<p class="site-title"><a href="{SITE}/">Harbour Herald</a></p>
<nav id="site-navigation" class="primary-navigation"><ul>
<li><a href="{SITE}/category/world/">World</a></li>
<li><a href="{SITE}/category/sport/">Sport</a></li>
<li><a href="{SITE}/about/">About</a></li></ul></nav></header>
<div id="content" class="site-content"><div id="primary" class="content-area">
<main id="main" class="site-main">
{main}
</main></div></div>
<footer id="colophon" class="site-footer"><div class="site-info">
<div class="site-name"><a href="{SITE}/">Harbour Herald</a></div>
<div class="powered-by">Proudly powered by WordPress.</div></div></footer></div>
</body></html>"""


def _entry(post_id: int, title: str, paragraphs: list[str], *, heading: str) -> str:
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    link = f'<a href="{SITE}/2024/11/post-{post_id}/">{html.escape(title)}</a>'
    title_html = (
        f'<h1 class="entry-title">{html.escape(title)}</h1>'
        if heading == "h1"
        else f'<h2 class="entry-title default-max-width">{link}</h2>'
    )
    classes = f"post-{post_id} post type-post status-publish entry"
    return f"""<article id="post-{post_id}" class="{classes}">
<header class="entry-header alignwide">{title_html}</header>
<div class="entry-content">
{body}
</div>
<footer class="entry-footer default-max-width"><div class="posted-by">
<span class="posted-on">Published <time class="entry-date published">November 2, 2024</time></span>
<span class="byline">By <a href="{SITE}/author/editor/" rel="author">editor</a></span></div>
<div class="post-taxonomies"><span class="cat-links">Categorized as
<a href="{SITE}/category/world/" rel="category tag">World</a></span></div></footer>
</article>"""


LONG_ID = 352
LONG_POST = _paragraphs(prose(LONG_ID, 2000))  # ~11,500 characters, like post 352's 12,921
"""The long post. On the bench site it is Chinese with no spaces, fewer than 55 "words" to
WordPress, so its excerpt is the whole post; the words here are made up and spaced, so the
archive below shows it whole directly."""


def _excerpt(post_id: int) -> str:
    """WordPress's excerpt of an ordinary post: its first 55 words and "Continue reading"."""
    words = prose(post_id, 400).split(" ")[:55]
    return " ".join(words) + f"\u2026 Continue reading Post {post_id}"


def single_post_page() -> str:
    """``/2024/11/post-352/``: the post alone (body class ``single postid-352``)."""
    return _frame(
        f"Post {LONG_ID}",
        f"post-template-default single single-post postid-{LONG_ID}",
        _entry(LONG_ID, f"Post {LONG_ID}", LONG_POST, heading="h1"),
    )


def archive_page() -> str:
    """``/page/2/``: ten posts, nine as 55-word excerpts, the long one whole (its "excerpt")."""
    ids = [328, LONG_ID, 268, 292, 316, 340, 256, 364, 280, 304]
    entries = [
        _entry(i, f"Post {i}", LONG_POST if i == LONG_ID else [_excerpt(i)], heading="h2")
        for i in ids
    ]
    header = '<header class="page-header alignwide"><h1 class="page-title">Page 2</h1></header>'
    return _frame("Page 2", "home blog paged paged-2 hfeed", header + "\n".join(entries))


POST_URL = f"{SITE}/2024/11/post-{LONG_ID}/"
ARCHIVE_URL = f"{SITE}/page/2/"


def test_a_post_is_not_dropped_as_a_copy_of_an_archive_that_lists_it(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url)
    try:
        run(pipeline.process_item({"url": ARCHIVE_URL, "html": archive_page()}))
        run(pipeline.process_item({"url": POST_URL, "html": single_post_page()}))
        assert filter_stats(pipeline) == {"kept": 2, "listing": 1}
    finally:
        run(pipeline.close_spider())


def test_an_archive_is_not_dropped_as_a_copy_of_one_post_it_lists(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url)
    try:
        run(pipeline.process_item({"url": POST_URL, "html": single_post_page()}))
        run(pipeline.process_item({"url": ARCHIVE_URL, "html": archive_page()}))
        assert filter_stats(pipeline) == {"kept": 2, "listing": 1}
    finally:
        run(pipeline.close_spider())


def test_the_same_archive_under_another_url_is_still_a_copy(sqlite_url: str) -> None:
    """The control: the author archive that lists what the home lists is a real copy."""
    pipeline = make_pipeline(sqlite_url)
    try:
        run(pipeline.process_item({"url": ARCHIVE_URL, "html": archive_page()}))
        with pytest.raises(NearDuplicate, match="page/2"):
            run(
                pipeline.process_item(
                    {"url": f"{SITE}/author/editor/page/2/", "html": archive_page()}
                )
            )
        assert filter_stats(pipeline) == {"kept": 1, "dropped": 1}
    finally:
        run(pipeline.close_spider())
