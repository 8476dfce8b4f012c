"""The test site's page templates: a newspaper, print, blog, portal, forum and Chinese layouts.

A regional newspaper, its print version, a blog that reposts it with comments, a heavy
portal template shared by many articles, a forum, and two Chinese layouts.

Each template wraps an :class:`~crawler.articles.Article` in the navigation, sidebars and
footer of a real site, so that the main-text extractor has something to tell apart.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from crawler.articles import Article

__all__ = [
    "FORUM_NOTICE",
    "blog_template",
    "forum_template",
    "html_page",
    "link_list",
    "news_template",
    "portal_template",
    "print_template",
    "zh_news_template",
    "zh_portal_template",
]


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


def link_list(title: str, links: Iterable[str]) -> str:
    """A page that is a heading and a list of links (the home page, index pages)."""
    items = "\n".join(f'  <li><a href="{_e(link)}">{_e(link)}</a></li>' for link in links)
    return html_page(title, f"<h1>{_e(title)}</h1>\n<ul>\n{items}\n</ul>")


# -- templates ---------------------------------------------------------------------------


_NEWS_SECTIONS = ("World", "Business", "Harbour", "Sport", "Culture", "Weather", "Opinion")


def news_template(
    article: Article,
    *,
    date: str,
    paragraphs: Iterable[str] | None = None,
    print_link: str | None = None,
    more_stories: Iterable[Article] = (),
) -> str:
    """ "The Harbour Courier": a regional newspaper layout; ``more_stories`` adds a sidebar
    with the first paragraphs of other articles."""
    nav = " ".join(f'<a href="/#{s.lower()}">{s}</a>' for s in _NEWS_SECTIONS)
    tools = f'<a class="print" href="{print_link}">Print this article</a>' if print_link else ""
    teasers = "\n".join(
        f"    <li><h3>{_e(other.title)}</h3><p>{_e(' '.join(other.paragraphs[:3]))}</p></li>"
        for other in more_stories
    )
    more = (
        f'  <aside class="more-stories"><h2>More from the Courier</h2><ul>\n{teasers}\n'
        "  </ul></aside>\n"
        if teasers
        else ""
    )
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
{more}</main>
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


FORUM_NOTICE = (
    "Posts on the Riverside Community Forum are written by its members. The views expressed "
    "in them are their own and do not necessarily reflect the views of the forum or of its "
    "volunteer moderators. Posts are checked after publication, not before; to report a post "
    "that breaks the house rules, use the report button below it or write to the moderators, "
    "who answer every message within two working days. Please be kind to one another."
)


def forum_template(article: Article, *, date: str, author: str = "river_walker") -> str:
    """ "Riverside Community Forum": a thread of one post, whose body sits in a comment
    container (as forum software marks posts up) below a moderation notice in ``<article>``.

    A boilerplate trap: the extractor keeps the notice and leaves the post out as a reader
    comment, so every thread of the forum has the same main text, :data:`FORUM_NOTICE`.
    """
    body = f"""<div class="forum-header"><a href="/">Riverside Community Forum</a>
  <ul class="forum-nav"><li><a href="/#latest">Latest</a></li>
  <li><a href="/#categories">Categories</a></li><li><a href="/#members">Members</a></li></ul>
</div>
<div class="thread">
  <div class="thread-title">{_e(article.title)}</div>
  <div class="comment">
    <div class="comment-meta">Posted by {_e(author)} on {_e(date)}</div>
    <div class="comment-body">
{_paragraphs(article.paragraphs)}
    </div>
    <div class="comment-actions"><a href="/#reply">Reply</a> <a href="/#report">Report</a></div>
  </div>
</div>
<article class="notice"><p>{_e(FORUM_NOTICE)}</p></article>
<div class="forum-footer">Riverside Community Forum. Run by volunteers since 2009.</div>"""
    return html_page(f"{article.title} - Riverside Community Forum", body)
