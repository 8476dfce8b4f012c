"""A generated site with the URL aliasing of real CMSs and servers, and its ground truth.

Issue 29 measures a request filter that skips URLs predicted to be copies. Such a filter is
only safe if it never skips the one way to a page, so this site mixes aliases that do not
change the content with parameters that do, and names the content behind every URL.

Aliases (same content): tracking parameters (``utm_*``, ``fbclid``, ``gclid``), session
parameters (``sid``, ``PHPSESSID``, the ``;jsessionid=`` path parameter), ``?replytocom=N``
comment-reply links, print views (``/print/...``, ``?print=1``), AMP views (``/amp/`` prefix
or suffix), a ``/mirror/`` section, case (the server is case-insensitive), ``index.html``,
the trailing slash, and ``?lang=en`` / ``?page=1`` (the default value of a content parameter).

Parameters that choose the content: ``/?p=ID`` (notes that have no other URL), ``/blog/?page=K``
(listings), ``?lang=de`` (another text), ``/view.php?id=N`` (documents with no other URL).

Canonical hints: most pages declare their canonical in ``<link rel="canonical">``, some only in
an HTTP ``Link: <...>; rel="canonical"`` header, some only as ``og:url``, some not at all; and
some declare a wrong one: the home page (every 10th article), another article (every 25th),
the English article on half of the German translations.

:class:`AliasingSite` resolves any request target (path and query) to a :class:`View` (the
content id and how it is rendered), renders it (``site.page`` is a :class:`SiteServer`
resolver), and :meth:`AliasingSite.ground_truth` walks every link from the home page.
"""

from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from .aliasing_pages import render
from .generated import generated_article
from .server import Page, SiteServer

__all__ = [
    "AliasingCorpus",
    "AliasingSite",
    "ArticlePlan",
    "Content",
    "GroundTruth",
    "Text",
    "View",
    "generated_corpus",
]

PER_LISTING = 10
"""Articles on one ``/blog/`` listing page."""


@dataclass(frozen=True, slots=True)
class Text:
    """An article text: a title and its paragraphs."""

    title: str
    paragraphs: tuple[str, ...]
    lang: str = "en"


@dataclass(frozen=True, slots=True)
class AliasingCorpus:
    """The texts of a site: ``articles`` under ``/news/<slug>/`` with every alias kind,
    ``notes`` only at ``/?p=<id>``, ``docs`` only at ``/view.php?id=<n>``, ``translations``
    served as ``?lang=de`` of the articles ``i % 7 == 2`` (in order, while they last)."""

    articles: tuple[Text, ...]
    notes: tuple[Text, ...] = ()
    docs: tuple[Text, ...] = ()
    translations: tuple[Text, ...] = ()


@dataclass(frozen=True, slots=True)
class ArticlePlan:
    """Which aliases and hint an article has (a function of its index, see :func:`plan`)."""

    index: int
    slug: str
    hint: str  # "link", "header", "og" or "none": where the page declares its canonical
    declared: str | None  # the canonical target the page declares (wrong for some)
    print_view: str | None  # "path" (/print/...), "param" (?print=1) or None
    amp_view: str | None  # "suffix" (.../amp/), "prefix" (/amp/...) or None
    replies: int  # comment-reply links (?replytocom=N)
    mirrored: bool  # also under /mirror/
    gclid: bool  # an ad link with ?gclid=
    translation: int | None  # index into the corpus' translations


@dataclass(frozen=True, slots=True)
class Content:
    """One piece of content: its id, the URL a crawl should keep (``canonical``, a path and
    query), and what the page declares (``declared`` through ``hint``)."""

    id: str
    canonical: str
    hint: str = "link"
    declared: str | None = None


@dataclass(frozen=True, slots=True)
class View:
    """What a request target shows: a content id, rendered as ``kind`` (page, print, amp,
    mirror)."""

    content: str
    kind: str = "page"


@dataclass
class GroundTruth:
    """Every URL a crawl from ``start`` can meet (request target → content id), and the
    canonical target of every content id. ``reachable``: the content ids behind those URLs."""

    start: str
    urls: dict[str, str]
    canonical: dict[str, str]
    reachable: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.reachable:
            self.reachable = set(self.urls.values())


def slugify(title: str, index: int) -> str:
    """A URL slug for a title (non-Latin titles get only the index)."""
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:48].strip("-")
    return f"{index:03d}-{words}" if words else f"{index:03d}"


def plan(index: int, count: int, slug: str, translation: int | None) -> ArticlePlan:
    """The aliases of article ``index`` of ``count``: every kind on a share of the articles."""
    canonical = f"/news/{slug}/"
    hint = "none" if index % 13 == 0 else ("link", "link", "header", "og")[index % 4]
    declared: str | None = canonical
    if index % 10 == 9:
        declared = "/"  # the misconfigured template: every page names the home page
    elif index % 25 == 12 and count > 3:
        declared = f"@article/{(index + 3) % count}"  # resolved to that article's URL
    return ArticlePlan(
        index=index,
        slug=slug,
        hint=hint,
        declared=None if hint == "none" else declared,
        print_view=("path", "param", None)[index % 3],
        amp_view=("suffix", "prefix", None, None)[index % 4],
        replies=2 if index % 2 == 0 else 0,
        mirrored=index % 6 == 0,
        gclid=index % 5 == 0,
        translation=translation,
    )


class AliasingSite:
    """The generated site: resolves, renders and walks it (see the module docstring)."""

    def __init__(self, corpus: AliasingCorpus, *, base_url: str = "http://127.0.0.1") -> None:
        self.corpus = corpus
        self._base_url = base_url
        articles = corpus.articles
        slugs = [slugify(text.title, i) for i, text in enumerate(articles)]
        translated = [i for i in range(len(articles)) if i % 7 == 2]
        translation_of = dict(zip(translated, range(len(corpus.translations)), strict=False))
        self.plans = [
            plan(i, len(articles), slug, translation_of.get(i)) for i, slug in enumerate(slugs)
        ]
        self.by_slug = {p.slug: p for p in self.plans}
        self.per_listing = PER_LISTING
        self.listings = max(1, -(-len(articles) // PER_LISTING))
        self.contents = self._contents()
        self._cache: dict[str, Page | None] = {}

    @property
    def base_url(self) -> str:
        """Scheme and authority of the absolute URLs in canonical hints; set it once the
        server listens (the rendered pages are forgotten)."""
        return self._base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        self._base_url = value
        self._cache.clear()

    def serve(self) -> SiteServer:
        """A started :class:`SiteServer` of this site on loopback (``base_url`` set)."""
        server = SiteServer(self.page).start()
        self.base_url = server.base_url
        return server

    # -- content ---------------------------------------------------------------------------

    def _contents(self) -> dict[str, Content]:
        """Every content id of the site, with its canonical target and declared hint."""
        pages = [("home", "/"), ("archive", "/news/"), ("docs", "/docs/")]
        pages += [
            (f"listing/{k}", "/blog/" if k == 1 else f"/blog/?page={k}")
            for k in range(1, self.listings + 1)
        ]
        pages += [(f"note/{n}", f"/?p={self.note_id(n)}") for n in range(len(self.corpus.notes))]
        contents = {cid: Content(cid, target, "link", target) for cid, target in pages}
        contents["mirror"] = Content("mirror", "/mirror/", "none", None)
        for n in range(len(self.corpus.docs)):
            target = f"/view.php?id={n + 1}"
            contents[f"doc/{n}"] = Content(f"doc/{n}", target, "header", target)
        for p in self.plans:
            canonical = f"/news/{p.slug}/"
            declared = p.declared
            if declared is not None and declared.startswith("@article/"):
                declared = f"/news/{self.plans[int(declared.split('/')[1])].slug}/"
            cid = f"article/{p.index}"
            contents[cid] = Content(cid, canonical, p.hint, declared)
            if p.translation is not None:
                target = f"{canonical}?lang=de"
                wrong = p.translation % 2 == 1  # names the English page
                contents[cid + "/de"] = Content(
                    cid + "/de", target, "link", canonical if wrong else target
                )
        return contents

    @staticmethod
    def note_id(n: int) -> int:
        """The ``?p=`` id of note ``n`` (post ids, as a CMS numbers them)."""
        return 101 + 7 * n

    # -- resolving -------------------------------------------------------------------------

    def resolve(self, target: str) -> View | None:
        """The content and view a request target shows, as this site's server decides it;
        ``None`` for a 404."""
        split = urlsplit(target)
        path = re.sub(r";[^/]*", "", split.path).lower()  # ;jsessionid=..., any case
        params = {k.lower(): v for k, v in parse_qsl(split.query, keep_blank_values=True)}
        kind = "print" if params.get("print") in {"1", "yes", "true"} else "page"
        if path == "/mirror/" or path == "/mirror":
            return View("mirror")
        for prefix, prefix_kind in (("/print/", "print"), ("/amp/", "amp"), ("/mirror/", "mirror")):
            if path.startswith(prefix):
                path, kind = path[len(prefix) - 1 :], prefix_kind
        if path.endswith("/amp/") or path.endswith("/amp"):
            path, kind = path[: path.rindex("/amp")] + "/", "amp"
        if path.endswith("/index.html"):
            path = path[: -len("index.html")]
        if not path.endswith("/") and not path.endswith(".php"):
            path += "/"
        content = self._content_at(path, params)
        return None if content is None else View(content, kind)

    def _content_at(self, path: str, params: dict[str, str]) -> str | None:
        if path == "/":
            if "p" not in params:
                return "home"
            ids = {str(self.note_id(n)): n for n in range(len(self.corpus.notes))}
            return f"note/{ids[params['p']]}" if params["p"] in ids else None
        if path == "/blog/":
            page = params.get("page", "1")
            ok = page.isdigit() and 1 <= int(page) <= self.listings
            return f"listing/{int(page)}" if ok else None
        if path in {"/news/", "/docs/"}:
            return "archive" if path == "/news/" else "docs"
        if path == "/view.php":
            doc = params.get("id", "")
            ok = doc.isdigit() and 1 <= int(doc) <= len(self.corpus.docs)
            return f"doc/{int(doc) - 1}" if ok else None
        match = re.fullmatch(r"/news/([^/]+)/", path)
        article = self.by_slug.get(match.group(1)) if match else None
        if article is None:
            return None
        lang = params.get("lang", "en")
        if lang == "de" and article.translation is not None:
            return f"article/{article.index}/de"
        return f"article/{article.index}" if lang in {"en", "de"} else None

    def content_of(self, target: str) -> str | None:
        """The content id behind a request target (``None``: the server answers 404)."""
        view = self.resolve(target)
        return None if view is None else view.content

    # -- serving ---------------------------------------------------------------------------

    def page(self, target: str) -> Page | None:
        """The response to a request target: a :class:`~crawler.testsite.server.Resolver`."""
        if target not in self._cache:
            view = self.resolve(target)
            self._cache[target] = None if view is None else self._render(view, target)
        return self._cache[target]

    def _render(self, view: View, target: str) -> Page:
        return render(self, view, target)

    # -- ground truth ----------------------------------------------------------------------

    def links(self, target: str) -> list[str]:
        """The request targets a page links to (its ``href`` values, fragments removed)."""
        page = self.page(target)
        if page is None:
            return []
        hrefs = re.findall(r'<a [^>]*href="([^"]+)"', page.body.decode("utf-8"))
        return [html.unescape(h).split("#", 1)[0] for h in hrefs if h.startswith("/")]

    def ground_truth(self, start: str = "/") -> GroundTruth:
        """Walk every link from ``start``: each URL met and its content id."""
        urls: dict[str, str] = {}
        queue = deque([start])
        while queue:
            target = queue.popleft()
            if target in urls:
                continue
            content = self.content_of(target)
            if content is None:
                raise ValueError(f"{target} is linked but not served")
            urls[target] = content
            queue.extend(link for link in self.links(target) if link not in urls)
        canonical = {cid: c.canonical for cid, c in self.contents.items() if cid in urls.values()}
        return GroundTruth(start, urls, canonical)


def generated_corpus(
    articles: int = 40, *, notes: int = 4, docs: int = 4, translations: int = 4, seed: int = 29
) -> AliasingCorpus:
    """A corpus of pseudo-word articles (:func:`generated_article`) for tests: every text
    differs from every other, translations included (another seed)."""

    def texts(first: int, count: int, text_seed: int, lang: str = "en") -> tuple[Text, ...]:
        made = (generated_article(first + i, seed=text_seed) for i in range(count))
        return tuple(Text(a.title, a.paragraphs, lang) for a in made)

    return AliasingCorpus(
        articles=texts(0, articles, seed),
        notes=texts(articles, notes, seed),
        docs=texts(articles + notes, docs, seed),
        translations=texts(0, translations, seed + 1, "de"),
    )
