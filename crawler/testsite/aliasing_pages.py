"""The pages of the aliasing site (:mod:`crawler.testsite.aliasing`): templates and links.

Every page links to its variants the way real sites do: share buttons with ``utm_*`` and
``fbclid``, an ad link with ``gclid``, a print link, the AMP view, comment-reply links, the
language switcher, listing pagination, "related" boxes whose links carry another case, no
trailing slash, ``index.html`` or a session id, and a mirror section.
"""

from __future__ import annotations

import hashlib
import html
from typing import TYPE_CHECKING

from .server import Page

if TYPE_CHECKING:
    from .aliasing import AliasingSite, ArticlePlan, Content, Text, View

__all__ = ["related_link", "render"]

SITE_NAME = "The Coastal Courier"
NAV = (("/", "Home"), ("/blog/", "Blog"), ("/news/", "News archive"), ("/docs/", "Documents"))


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _links(links: list[tuple[str, str]], css: str) -> str:
    items = "".join(f'<li><a href="{_e(href)}">{_e(label)}</a></li>' for href, label in links)
    return f'<ul class="{css}">{items}</ul>'


def _body(text: Text) -> str:
    return "\n".join(f"<p>{_e(p)}</p>" for p in text.paragraphs)


def _token(*parts: object) -> str:
    """A stable session or click id for a link (as a server would mint one)."""
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def related_link(plan: ArticlePlan, source: str) -> str:
    """The form a "related" box links an article in: case, no slash, ``index.html`` or a
    session id minted for the linking page ``source``."""
    url = f"/news/{plan.slug}/"
    return (
        f"/News/{plan.slug}/",
        f"/news/{plan.slug}",
        f"{url}index.html",
        f"{url}?sid={_token('sid', source, plan.index)}",
        f"{url};jsessionid={_token('j', source, plan.index).upper()}",
        f"{url}?PHPSESSID={_token('php', source, plan.index)}",
    )[plan.index % 6]


def _hints(site: AliasingSite, content: Content, kind: str) -> tuple[str, list[tuple[str, str]]]:
    """The ``<head>`` lines and response headers declaring the canonical of a view."""
    base = site.base_url
    declared = content.declared
    if kind == "mirror" or declared is None:
        return "", []
    if kind == "amp" or content.hint == "link":
        return f'<link rel="canonical" href="{_e(base + declared)}">\n', []
    if content.hint == "header":
        return "", [("Link", f'<{base}{declared}>; rel="canonical"')]
    return f'<meta property="og:url" content="{_e(base + declared)}">\n', []


def _document(title: str, body: str, *, head: str = "", lang: str = "en") -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_e(title)}</title>\n{head}</head>\n<body>\n{body}\n</body>\n</html>\n"
    ).encode()


def _frame(title: str, main: str, *, head: str = "", lang: str = "en", aside: str = "") -> bytes:
    """The site's full template: masthead, navigation, main column, sidebar, footer."""
    nav = _links(list(NAV), "nav")
    footer = (
        '<footer><p>© The Coastal Courier. <a href="/news/index.html">All news</a> · '
        '<a href="/mirror/">Mirror</a> · <a href="/index.html">Front page</a></p>'
        "<p>Independent local journalism since 1911. Subscribe for unlimited access.</p></footer>"
    )
    body = (
        f'<header><a class="logo" href="/">{SITE_NAME}</a>{nav}</header>\n'
        f"<main>{main}</main>\n<aside>{aside}<h3>About us</h3><p>News from the harbour towns "
        f"and the valleys behind them.</p></aside>\n{footer}"
    )
    return _document(f"{title} | {SITE_NAME}", body, head=head, lang=lang)


def render(site: AliasingSite, view: View, target: str) -> Page:
    """The response for ``view`` of request ``target``."""
    content = site.contents[view.content]
    head, headers = _hints(site, content, view.kind)
    kind, _, rest = view.content.partition("/")
    if kind == "article":
        body = _article(site, view, target, head)
    elif kind == "note":
        body = _note(site, int(rest), head)
    elif kind == "doc":
        body = _doc(site, int(rest), view.kind, head)
    elif kind == "listing":
        body = _listing(site, int(rest), head)
    else:
        body = _index(site, view.content, head)
    return Page(body, headers=tuple(headers))


def _article(site: AliasingSite, view: View, target: str, head: str) -> bytes:
    index, _, lang = view.content.removeprefix("article/").partition("/")
    plan = site.plans[int(index)]
    text = site.corpus.articles[plan.index]
    if lang == "de" and plan.translation is not None:
        text = site.corpus.translations[plan.translation]
    url = f"/news/{plan.slug}/"
    main = f"<article><h1>{_e(text.title)}</h1>\n{_body(text)}</article>"
    if view.kind == "print":
        back = f'<p class="noprint"><a href="{_e(url)}">Back to the article</a></p>'
        return _document(text.title, main + back, head=head, lang=text.lang)
    if view.kind in {"amp", "mirror"}:
        home = "/mirror/" if view.kind == "mirror" else "/"
        links = _links([(url, "Original article"), (home, "Home")], "amp-nav")
        return _document(text.title, links + main, head=head, lang=text.lang)
    return _frame(
        text.title,
        main + _article_tools(site, plan, lang == "de") + _comments(plan, url),
        head=head,
        lang=text.lang,
        aside=_related(site, plan, view.content),
    )


def _article_tools(site: AliasingSite, plan: ArticlePlan, german: bool) -> str:
    """Share buttons, print and AMP links and the language switcher of an article."""
    url = f"/news/{plan.slug}/"
    here = f"{url}?lang=de&" if german else f"{url}?"
    tools = [
        (f"{here}utm_source=twitter&utm_medium=social&utm_campaign=share", "Share on X"),
        (f"{here}fbclid=IwAR{_token('fb', plan.index, german)}", "Share on Facebook"),
    ]
    if plan.gclid and not german:
        tools.append((f"{url}?gclid=Cj0K{_token('g', plan.index)}", "Sponsored: read this"))
    if plan.print_view == "path" and not german:
        tools.append((f"/print{url}", "Print"))
    elif plan.print_view == "param" and not german:
        tools.append((f"{url}?print=1", "Print"))
    if plan.amp_view == "suffix" and not german:
        tools.append((f"{url}amp/", "AMP"))
    elif plan.amp_view == "prefix" and not german:
        tools.append((f"/amp{url}", "AMP"))
    if plan.translation is not None:
        tools.append((f"{url}?lang=en" if german else f"{url}?lang=de", "English / Deutsch"))
    return _links(tools, "tools")


def _comments(plan: ArticlePlan, url: str) -> str:
    if not plan.replies:
        return ""
    names = ("Ana", "Bram", "Chen", "Dara")
    items = "".join(
        f"<li><b>{names[(plan.index + k) % 4]}</b> Thanks for the report. "
        f'<a href="{_e(url)}?replytocom={1000 + 10 * plan.index + k}#respond">Reply</a></li>'
        for k in range(plan.replies)
    )
    return f'<section class="comments"><h3>{plan.replies} comments</h3><ol>{items}</ol></section>'


def _related(site: AliasingSite, plan: ArticlePlan, source: str) -> str:
    count = len(site.plans)
    others = [site.plans[(plan.index + step) % count] for step in (1, 7)]
    links = [
        (related_link(other, source), site.corpus.articles[other.index].title)
        for other in others
        if other.index != plan.index
    ]
    return "<h3>Related</h3>" + _links(links, "related")


def _note(site: AliasingSite, n: int, head: str) -> bytes:
    text = site.corpus.notes[n]
    note = f"/?p={site.note_id(n)}"
    tools = [
        (f"{note}&utm_source=twitter&utm_medium=social", "Share"),
        (f"{note}&replytocom={5000 + n}#respond", "Reply to Ana"),
    ]
    main = f"<article><h1>{_e(text.title)}</h1>\n{_body(text)}</article>" + _links(tools, "tools")
    return _frame(text.title, main, head=head, lang=text.lang)


def _doc(site: AliasingSite, n: int, kind: str, head: str) -> bytes:
    text = site.corpus.docs[n]
    doc = f"/view.php?id={n + 1}"
    main = f"<article><h1>{_e(text.title)}</h1>\n{_body(text)}</article>"
    if kind == "print":
        return _document(text.title, main, head=head, lang=text.lang)
    tools = [(f"{doc}&print=1", "Printable version"), (f"{doc}&sid={_token('doc', n)}", "Save")]
    return _frame(text.title, main + _links(tools, "tools"), head=head, lang=text.lang)


def _teaser(site: AliasingSite, plan: ArticlePlan, href: str) -> str:
    text = site.corpus.articles[plan.index]
    first = text.paragraphs[0][:160] if text.paragraphs else ""
    return f'<li><h2><a href="{_e(href)}">{_e(text.title)}</a></h2><p>{_e(first)}</p></li>'


def _listing(site: AliasingSite, k: int, head: str) -> bytes:
    """Blog page ``k``: ten teasers and the pagination (page 1 linked as ``?page=1`` too)."""
    size = site.per_listing
    plans = site.plans[(k - 1) * size : k * size]
    teasers = "".join(_teaser(site, p, f"/news/{p.slug}/") for p in plans)
    pages = sorted({1, k - 1, k + 1, site.listings} & set(range(1, site.listings + 1)))
    pagination = [(f"/blog/?page={n}", str(n)) for n in pages if n != k]
    main = f"<h1>Blog, page {k}</h1><ul class='teasers'>{teasers}</ul>" + _links(
        pagination, "pagination"
    )
    return _frame(f"Blog page {k}", main, head=head)


def _index(site: AliasingSite, content: str, head: str) -> bytes:
    """The home page, the news archive, the documents index and the mirror index."""
    if content == "home":
        latest = "".join(_teaser(site, p, f"/news/{p.slug}/") for p in site.plans[:5])
        notes = [
            (f"/?p={site.note_id(n)}", site.corpus.notes[n].title)
            for n in range(len(site.corpus.notes))
        ]
        newsletter = [("/?utm_source=newsletter&utm_medium=email", "This week's newsletter")]
        main = (
            f"<h1>{SITE_NAME}</h1><ul class='teasers'>{latest}</ul><h2>Notes</h2>"
            + _links(notes, "notes")
            + _links(newsletter, "newsletter")
        )
        return _frame("Front page", main, head=head)
    if content == "archive":
        picks = [p for p in site.plans if p.index % 8 == 0]
        teasers = "".join(_teaser(site, p, f"/news/{p.slug}/index.html") for p in picks)
        return _frame("News archive", f"<h1>News archive</h1><ul>{teasers}</ul>", head=head)
    if content == "docs":
        docs = [(f"/view.php?id={n + 1}", d.title) for n, d in enumerate(site.corpus.docs)]
        return _frame("Documents", "<h1>Documents</h1>" + _links(docs, "docs"), head=head)
    mirrored = [p for p in site.plans if p.mirrored]
    teasers = "".join(_teaser(site, p, f"/mirror/news/{p.slug}/") for p in mirrored)
    return _document("Mirror", f"<h1>Mirror of {SITE_NAME}</h1><ul>{teasers}</ul>", head=head)
