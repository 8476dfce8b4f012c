"""Main-text extraction: an HTML page (bytes or str) → its article text, or None.

A thin wrapper over trafilatura. Bytes are decoded as a browser would
(:func:`~simhash_filter.page.decode.decode_html`: UTF-8, the ``<meta charset>`` with its
WHATWG superset, then a statistical guess); a str is taken as already decoded (e.g. Scrapy's
``response.text``, which honours the HTTP ``Content-Type`` charset). Input is capped at
``max_bytes`` before parsing; a page that cannot be parsed gives None (only an invalid
argument raises).

The main text is trafilatura's ``favor_precision`` extraction without its fallback
extractors (``fast``), and, when that comes back shorter than :data:`FALLBACK_BELOW`
characters, its balanced extraction (also ``fast``) if it is longer
(:data:`EXTRACTION`, named in the fingerprint spec). The measurements behind the choice are
in bench/history/cost.md. A page laid out in a table (most of the precision pass's text in
table rows, more tables than paragraphs in its extracted body) runs that pass with the
fallback extractors too, and keeps its text when it is the article cell without the layout's
other cells (:mod:`.table_layout`).

:func:`visible_text` gives the whole text a reader sees on the page (menus, sidebars and
footers included): the match rule compares it to tell a copy of an article from two
different pages whose extraction returned the same small block.

The work a page costs is bounded before trafilatura runs (:func:`parse_bounded`): the tree is
cut after :data:`MAX_ELEMENTS` elements (trafilatura's extraction loop is super-linear in the
number of elements), a page nested past libxml2's depth limit (255), whose text the parser
drops, is parsed again and flattened below :data:`FLAT_DEPTH`, and runs of combining marks are
cut as tokenization cuts them (trafilatura runs NFC on its text, quadratic in a run). Each
cap a page met is named in :attr:`ExtractedPage.capped` (the crawl counts them).
"""

from __future__ import annotations

import logging
from copy import copy
from typing import Any, NamedTuple

import trafilatura
from lxml import etree
from lxml.html import (
    HtmlComment,
    HtmlElement,
    HtmlEntity,
    HTMLParser,
    HtmlProcessingInstruction,
    fromstring,
)
from trafilatura.core import determine_returnstring
from trafilatura.settings import Document, Extractor
from trafilatura.utils import DOCTYPE_TAG, decode_file, is_dubious_html, repair_faulty_html

from simhash_filter.core.canonical import PageHints
from simhash_filter.core.fingerprint import DEFAULT_MAX_CHARS, EXTRACTION
from simhash_filter.core.template import HostTemplate, strip_template
from simhash_filter.core.text import cap_non_starters

from . import fast_xpath, link_density, trailing_titles, tree_copies
from .blocks import page_blocks
from .decode import decode_html
from .head_canonicals import page_hints
from .limits import DEFAULT_MAX_BYTES
from .listing import is_listing
from .table_layout import is_table_layout, keeps_article, tables_over_paragraphs

__all__ = [
    "DEFAULT_MAX_BYTES",
    "EXTRACTION",
    "FALLBACK_BELOW",
    "FLAT_DEPTH",
    "MAX_ELEMENTS",
    "MAX_TEXT_CHARS",
    "MAX_VISIBLE_CHARS",
    "ExtractedPage",
    "cap_text",
    "extract_page",
    "extract_text",
    "parse_bounded",
    "prose_share",
    "visible_text",
    "warm_up_fallback",
]

logger = logging.getLogger(__name__)

fast_xpath.install()  # trafilatura's XPaths as Python walks: the same nodes, less CPU
tree_copies.install()  # and without the tree copies nothing reads
link_density.install()  # its link-density tests without ElementPath: the same answers
trailing_titles.install()  # trailing titles removed in one pass, not n child counts

MAX_TEXT_CHARS = DEFAULT_MAX_CHARS
"""Characters of page text handed to tokenization at most: the Fingerprinter's own cap
(``Fingerprinter(max_chars=...)``, named in the spec), applied here too so extraction never
returns more than is fingerprinted (its cost per character: `bench/bench_fingerprint.py`)."""


MAX_VISIBLE_CHARS = 4 * MAX_TEXT_CHARS
"""Characters of a page's visible text kept at most: the sketch of the page reads no more
(``Fingerprinter.sketch``)."""

FALLBACK_BELOW = 500
"""Characters of main text below which the precision pass is not trusted alone: trafilatura's
balanced pass runs too and the longer text is kept. On the public pages the precision pass
alone gave a reprint notice (260 characters) for a 3,200-character article, and 0 characters
for real Chinese articles; below 500 characters 8 of 181 English and 12 of 69 Chinese pages
take the second pass."""

PROSE_LINE = 40
"""Characters a line of text needs to count as prose (a paragraph, not a menu item)."""
MIN_PROSE_SHARE = 0.5
"""The balanced pass's text is kept only when at least this share of its characters is in
prose lines: on a page that is all boilerplate (a gallery, a link list) the balanced pass
returns the menu, which would collide with every other such page of the site; the public
articles it rescued were 62-100% prose, the portal menu of the test site 0%."""

MAX_ELEMENTS = 10_000
"""Elements of a page handed to trafilatura at most (the tree is cut after the first
10,000, in document order, as ``max_bytes`` cuts the bytes): trafilatura's extraction loop
is super-linear in the number of elements (a page of 20,000 headings costs seconds), and
real pages have far fewer (the public pages measured: at most 7,778)."""

PARSER_DEPTH = 250
"""An element this deep means libxml2's HTML parser may have stopped at its depth limit
(255 without ``huge_tree``) and dropped the rest of the page."""
FLAT_DEPTH = 128
"""A page parsed again past :data:`PARSER_DEPTH` is flattened below this depth: the tags
under it are removed, their text kept (trafilatura recurses over the tree and checks
ancestors, so a 2,000-deep tree would cost depth x elements, or exhaust the stack)."""
_HUGE_DEPTH = 2040
"""Past this depth even the ``huge_tree`` parser (limit 2048) drops the rest of the page."""


def cap_text(text: str) -> str:
    """``text`` cut to :data:`MAX_TEXT_CHARS` characters (the part that is fingerprinted)."""
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]


_SNIFF = 4096
_CONTROL = bytes(sorted(set(range(32)) - {9, 10, 12, 13}))  # C0 controls but tab, LF, FF, CR


def _looks_binary(body: bytes | str) -> bool:
    """True for content no HTML page has: NUL bytes or many control characters at the start
    (an image or archive served as ``text/html``). Keeps trafilatura from logging ERRORs."""
    head = body[:_SNIFF]
    codes = head if isinstance(head, bytes) else head.encode("utf-8", "surrogatepass")
    if b"\x00" in codes:
        return True
    controls = len(codes) - len(codes.translate(None, _CONTROL))  # counted in C
    replacement = head.count("\ufffd") if isinstance(head, str) else 0
    return (controls + replacement) * 10 > len(head)


def extract_text(
    body: bytes | str,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str | None:
    """The main text of an HTML page, or None when there is none (or the input is not HTML).

    Boilerplate (navigation, sidebars, footers) and reader comments are left out, so the
    same article in two site templates, or with a new comment below it, gives the same text;
    trafilatura runs with ``favor_precision``: a page that is all boilerplate (a gallery, a
    link list) gives None rather than its menu, which would collide with every other such page.
    ``max_bytes`` caps the input (characters for a str); the rest of the page is ignored.
    The text returned is at most :data:`MAX_TEXT_CHARS` characters.
    A page trafilatura cannot parse is logged at DEBUG and gives None; only a
    ``max_bytes`` below 1 raises (ValueError).
    """
    return extract_page(body, url=url, max_bytes=max_bytes, visible=False).text


_INVISIBLE = ("script", "style", "noscript", "template", "head", "svg", "iframe", "object")


def visible_text(body: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str | None:
    """All the text of a page that a reader can see (boilerplate included), white space
    collapsed, or None when the page has none or cannot be parsed.

    Scripts, styles, ``<head>`` and similar are left out; comments and processing
    instructions too. ``max_bytes`` caps the input as in :func:`extract_text`.
    """
    return extract_page(body, max_bytes=max_bytes, main=False).visible


class ExtractedPage(NamedTuple):
    """What :func:`extract_page` read from one page."""

    text: str | None
    """The main text (:func:`extract_text`), or None."""
    visible: str | None
    """All the visible text (:func:`visible_text`), or None."""
    capped: tuple[str, ...] = ()
    """The caps the page met: ``bytes`` (``max_bytes``), ``elements`` (:data:`MAX_ELEMENTS`),
    ``deep`` (flattened below :data:`FLAT_DEPTH`), ``too_deep`` (nested past even the
    ``huge_tree`` parser's limit: the text beyond it is lost), ``marks`` (a run of combining
    marks cut)."""
    hints: PageHints | None = None
    """The page's canonical hints (:mod:`~simhash_filter.page.head_canonicals`), read from the same
    parse when the page has a URL."""
    listing: bool = False
    """The page lists several entries (an archive, a home page): :func:`.listing.is_listing`."""
    blocks: tuple[int, ...] = ()
    """The page's block hashes (:func:`.blocks.page_blocks`), read with the visible text when
    a ``template`` that wants them is given: what the host's template is learned from."""
    template_share: float | None = None
    """With a host template: the share of the first extraction's characters in the host's
    template blocks (None without one)."""
    template_only: bool = False
    """With a host template: nothing but template blocks was left of either extraction pass
    (``text`` is None)."""
    untemplated: str | None = None
    """With a host template that left blocks out: the main text as extracted without one (a
    copy of this page signed before its host's template was known was signed by it)."""


def extract_page(
    body: bytes | str,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    main: bool = True,
    visible: bool = True,
    template: HostTemplate | None = None,
) -> ExtractedPage:
    """:func:`extract_text` and :func:`visible_text` of one page, parsing it once (the
    parse is most of what the visible text costs). ``main``/``visible`` False skip a part
    (it is then None). ``template``: the host's template, left out of the main text
    (:func:`_template_text`)."""
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
    nothing = ExtractedPage(None, None)
    if not body:
        return nothing
    capped: list[str] = []
    if len(body) > max_bytes:
        body = body[:max_bytes]
        capped.append("bytes")
    if _looks_binary(body):
        logger.debug("Not extracting text from binary content at %s", url or "a page")
        return nothing
    try:
        tree = parse_bounded(decode_html(body), capped)
    except Exception:  # lxml raises a zoo of types on garbage
        logger.debug("Could not parse %s", url or "a page", exc_info=True)
        return ExtractedPage(None, None, tuple(capped))
    if tree is None:
        return ExtractedPage(None, None, tuple(capped))
    hints = page_hints(tree, url)
    share, template_only, untemplated = None, False, None
    if main and template is not None and template.blocks:  # before the tree is stripped
        text, share, untemplated = _template_text(tree, url, template.blocks)
        template_only = text is None
    else:
        text = _main_text(tree, url) if main else None
    listing = text is not None and is_listing(tree, len(text))
    nodes = _visible_nodes(tree) if visible else None
    seen = _joined(nodes) if nodes is not None else None
    wanted = main and seen and template is not None and template.blocks_wanted
    blocks = page_blocks(nodes, tree) if wanted and nodes is not None else ()
    return ExtractedPage(
        text, seen, tuple(capped), hints, listing, blocks, share, template_only, untemplated
    )


def _html_parser(**options: Any) -> HTMLParser:
    """An ``lxml.html`` parser whose element classes are chosen in C: every element an
    ``HtmlElement`` (what trafilatura expects), without lxml.html's Python lookup that runs
    for each element object made (form, input, label classes: nothing here uses them). That
    lookup was ~3,900 Python calls a page, a tenth of the page work's CPU."""
    parser = HTMLParser(**options)
    parser.set_element_class_lookup(
        etree.ElementDefaultClassLookup(
            element=HtmlElement,
            comment=HtmlComment,
            pi=HtmlProcessingInstruction,
            entity=HtmlEntity,
        )
    )
    return parser


_PARSER_OPTIONS: dict[str, Any] = {
    "collect_ids": False,
    "default_doctype": False,
    "encoding": "utf-8",
    "remove_comments": True,
    "remove_pis": True,
}
"""trafilatura's own parser options (``trafilatura.utils.HTML_PARSER``)."""
_PARSER = _html_parser(**_PARSER_OPTIONS)
_DEEP_PARSER = _html_parser(**_PARSER_OPTIONS, huge_tree=True)


def load_html(text: str) -> Any:
    """:func:`trafilatura.utils.load_html` of a decoded page, step by step, with
    :data:`_PARSER`: the same tree, or None."""
    beginning = text[:50].lower()
    dubious = is_dubious_html(beginning)
    text = _repair(text, beginning)
    tree, from_bytes = None, False
    try:
        tree = fromstring(text, parser=_PARSER)
    except ValueError:  # a str with an encoding declaration: parse its bytes
        tree, from_bytes = _from_bytes(text), True
    except Exception:  # lxml raises a zoo of types on garbage
        logger.debug("Could not parse a page", exc_info=True)
    if (tree is None or len(tree) < 1) and not from_bytes:
        tree = _from_bytes(text)
    if tree is not None and dubious and len(tree) < 2:  # not HTML after all
        return None
    return tree


_XML_FORBIDDEN_BYTES = _CONTROL + b"\x0c"
"""The C0 controls ``INVALID_XML_CHARS`` removes (:data:`_CONTROL` and form feed), as UTF-8
bytes (each its own byte)."""


def _repair(text: str, beginning: str) -> str:
    """:func:`trafilatura.utils.repair_faulty_html` of ``text``, or ``text`` itself when that
    would return it unchanged: no character XML forbids (a ``bytes.translate`` over the
    UTF-8, ~3x faster than the function's regex over the page), no doctype it rewrites, no
    self-closing ``<html/>`` in the first lines. A test pins the two alike."""
    if "\ufffe" in text or "\uffff" in text:
        return repair_faulty_html(text, beginning)
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw.translate(None, _XML_FORBIDDEN_BYTES)) != len(raw):
        return repair_faulty_html(text, beginning)
    if "doctype" in beginning and ("\n" not in text or DOCTYPE_TAG.match(text)):
        return repair_faulty_html(text, beginning)
    for line in text[:4096].splitlines()[:4]:
        if "<html" in line and line.endswith("/>"):
            return repair_faulty_html(text, beginning)
    return text


def _from_bytes(text: str) -> Any:
    try:
        return fromstring(text.encode("utf-8", "surrogatepass"), parser=_PARSER)
    except Exception:
        logger.debug("Could not parse a page as bytes", exc_info=True)
        return None


def parse_bounded(body: bytes | str, capped: list[str] | None = None) -> Any:
    """The page's tree as trafilatura parses it (its decoding and parser), or None, bounded:
    cut after :data:`MAX_ELEMENTS` elements; a page nested past the parser's depth limit is
    parsed again (``huge_tree``) and flattened below :data:`FLAT_DEPTH`. The caps met are
    appended to ``capped``."""
    met = [] if capped is None else capped
    tree = load_html(decode_file(body))
    if tree is None:
        return None
    if _deeper_than(tree, PARSER_DEPTH):
        tree = _parse_deep(body)
        if tree is None:
            return None
        met.append("too_deep" if _deeper_than(tree, _HUGE_DEPTH) else "deep")
        _flatten_below(tree, FLAT_DEPTH)
    if _cut_after(tree, MAX_ELEMENTS):
        met.append("elements")
    if _cap_mark_runs(tree):
        met.append("marks")
    return tree


def _cap_mark_runs(tree: Any) -> bool:
    """Cut every run of combining marks in the page's text to
    :data:`~simhash_filter.core.text.MAX_NON_STARTERS` (trafilatura runs NFC on the text it
    extracts, whose canonical reordering is quadratic in a run); True when one was cut."""
    capped = False
    for node in tree.iter():  # each read of .text/.tail makes a new str: read once
        text = node.text
        if text and not text.isascii() and (cut := cap_non_starters(text, "NFC")) != text:
            node.text = cut
            capped = True
        tail = node.tail
        if tail and not tail.isascii() and (cut := cap_non_starters(tail, "NFC")) != tail:
            node.tail = cut
            capped = True
    return capped


def _deeper_than(tree: Any, depth: int) -> bool:
    """True when an element of ``tree`` sits ``depth`` levels deep (the root is level 1);
    one XPath step a level, each visiting the elements of that level: linear."""
    return bool(tree.xpath("boolean(" + "/*" * depth + ")"))


def _parse_deep(body: bytes | str) -> Any:
    """``body`` parsed as :func:`trafilatura.utils.load_html` does, with libxml2's depth
    limit raised from 255 to 2048 (``huge_tree``)."""
    text = decode_file(body)
    text = repair_faulty_html(text, text[:50].lower())
    return fromstring(text.encode("utf-8", "surrogatepass"), parser=_DEEP_PARSER)


def _flatten_below(tree: Any, depth: int) -> None:
    """Remove the tags under the elements ``depth`` levels deep, keeping their text (invisible
    elements go whole; a space keeps the words of two elements apart)."""
    for element in tree.xpath("/*" * depth):
        etree.strip_elements(element, *_INVISIBLE, with_tail=False)
        for inner in element.iterdescendants():
            inner.tail = " " + inner.tail if inner.tail else " "
        etree.strip_tags(element, "*")


def _cut_after(tree: Any, limit: int) -> bool:
    """Cut ``tree`` after its first ``limit`` nodes in document order (the rest of the page
    goes, tails included); True when it was longer."""
    for count, last in enumerate(tree.iter()):  # noqa: B007 (``last`` is used below)
        if count == limit:
            break
    else:
        return False
    node = last
    while (parent := node.getparent()) is not None:
        for later in list(node.itersiblings()):
            parent.remove(later)
        if node is not last:
            node.tail = None
        node = parent
    last_parent = last.getparent()
    if last_parent is not None:
        last_parent.remove(last)
    return True


def _main_text(source: Any, url: str | None) -> str | None:
    """The page's main text (:data:`EXTRACTION`): trafilatura's precision pass without its
    fallback extractors, and its balanced pass when the first gives under
    :data:`FALLBACK_BELOW` characters (kept when longer and prose: :data:`MIN_PROSE_SHARE`).
    ``source``: bytes, str or a parsed tree (trafilatura works on a copy)."""
    text = _precision_text(source, url)
    if len(text) < FALLBACK_BELOW:
        text = _preferred(text, _trafilatura_text(source, url, favor_precision=False))
    return cap_text(text) or None


def warm_up_fallback() -> None:
    """Run the precision pass with trafilatura's fallback comparison once, on a page short
    enough to reach justext: what that builds on first use (justext's stoplists of every
    language, ~0.2 s) is then built in the zygote before it forks, not in each worker."""
    _trafilatura_text(
        "<html><body><p>Warm up.</p></body></html>", None, favor_precision=True, fast=False
    )


def _precision_text(source: Any, url: str | None) -> str:
    """The precision pass's text; for a table-layout page (:mod:`.table_layout`: its text
    mostly table rows, its extracted body more tables than paragraphs), the same pass with
    trafilatura's fallback comparison when that returns the article cell alone."""
    text, body = _trafilatura_pass(source, url, favor_precision=True)
    if is_table_layout(text) and tables_over_paragraphs(body):
        fallback = _trafilatura_text(source, url, favor_precision=True, fast=False)
        if prose_share(fallback) >= MIN_PROSE_SHARE and keeps_article(text, fallback):
            return fallback
    return text


def _preferred(precise: str, balanced: str | None) -> str:
    """The balanced pass's text in place of the precision pass's when that one is under
    :data:`FALLBACK_BELOW` characters and the balanced one (None: not run) is longer and
    prose (:data:`MIN_PROSE_SHARE`): the one choice of the two passes."""
    if (
        balanced is not None
        and len(precise) < FALLBACK_BELOW
        and len(balanced) > len(precise)
        and prose_share(balanced) >= MIN_PROSE_SHARE
    ):
        return balanced
    return precise


def _template_text(
    source: Any, url: str | None, template: frozenset[int]
) -> tuple[str | None, float, str | None]:
    """The main text without the host's template blocks (core/template.py), the template's
    share of the first pass, and the main text as it is without a template (what
    :func:`_main_text` gives; None when the template left nothing out). When what is left is
    under :data:`FALLBACK_BELOW` characters, the other pass runs and its text without the
    template is kept when longer (and prose, as in :func:`_main_text`): trafilatura's balanced
    pass returns the article where the precision pass returned the site's menu. None when
    nothing is left. The text without a template costs no pass more: the passes it needs ran."""
    whole = _precision_text(source, url)
    first = strip_template(whole, template)
    text = first.text.strip()
    balanced_whole = None
    if len(text) < FALLBACK_BELOW:  # (then ``whole`` is short too: stripping only cuts)
        balanced_whole = _trafilatura_text(source, url, favor_precision=False)
        text = _preferred(text, strip_template(balanced_whole, template).text.strip())
    untemplated = None
    if first.template_chars:  # the page as signed while its host's template was not known
        untemplated = cap_text(_preferred(whole, balanced_whole)) or None
    return cap_text(text) or None, first.share, untemplated


def prose_share(text: str) -> float:
    """The share of ``text``'s characters in lines of at least :data:`PROSE_LINE` characters."""
    lengths = [len(line) for line in text.splitlines()]
    total = sum(lengths)
    return sum(n for n in lengths if n >= PROSE_LINE) / total if total else 0.0


_PASS_OPTIONS: dict[str, Any] = {
    "fast": True,
    "include_comments": False,
    "include_tables": True,
    "deduplicate": False,
    "output_format": "txt",
}
"""The options of :func:`_trafilatura_text`'s passes, as ``trafilatura.extract`` takes them."""


def _pass_extractor(favor_precision: bool) -> Extractor:
    """The ``Extractor`` that ``trafilatura.extract(..., **_PASS_OPTIONS)`` builds for a pass
    (without a URL), built the way that function builds it."""
    return Extractor(
        output_format=_PASS_OPTIONS["output_format"],
        fast=_PASS_OPTIONS["fast"],
        precision=favor_precision,
        comments=_PASS_OPTIONS["include_comments"],
        tables=_PASS_OPTIONS["include_tables"],
        dedup=_PASS_OPTIONS["deduplicate"],
    )


_PASS_EXTRACTORS = {True: _pass_extractor(True), False: _pass_extractor(False)}
"""The two passes' options, built once: ``Extractor.__init__`` reads its configuration
(eight ``ConfigParser`` look-ups) and formats today's date each time, ~70 µs; a copy is 4."""


def pass_options(url: str | None, *, favor_precision: bool, fast: bool = True) -> Extractor:
    """The ``Extractor`` ``trafilatura.extract(url=url, favor_precision=..., **_PASS_OPTIONS)``
    would build: a copy of the pass's, with the URL set as ``Extractor.__init__`` sets it
    (``fast`` False: the pass with trafilatura's fallback comparison, readability and justext).
    Its ``date_params`` (``max_date``: the day it was built) are only read to extract
    metadata, which these passes do not (``with_metadata`` False); a test pins the rest."""
    options = copy(_PASS_EXTRACTORS[favor_precision])
    options.fast = fast
    source = url or None
    options.url = url
    options.source = source and source.encode("utf-8", "replace").decode("utf-8")
    return options


def _trafilatura_text(
    source: Any, url: str | None, *, favor_precision: bool, fast: bool = True
) -> str:
    """One pass of trafilatura, ``fast`` (no readability/justext comparison) unless told: the
    text, or ""."""
    return _trafilatura_pass(source, url, favor_precision=favor_precision, fast=fast)[0]


def _trafilatura_pass(
    source: Any, url: str | None, *, favor_precision: bool, fast: bool = True
) -> tuple[str, Any]:
    """One pass of trafilatura: the text (or "") and the extracted body (or None).
    ``trafilatura.extract`` is ``bare_extraction`` and then ``determine_returnstring`` with
    the same options; called so, the body it serialized is kept (a test pins the texts)."""
    options = pass_options(url, favor_precision=favor_precision, fast=fast)
    keywords = _PASS_OPTIONS | {"fast": fast}  # what ``options`` holds, for a caller of None
    try:
        document = trafilatura.bare_extraction(
            source, url=url, favor_precision=favor_precision, options=options, **keywords
        )
        if not isinstance(document, Document):
            return "", None
        if options is None:  # trafilatura built its own; the text needs only its format
            options = _pass_extractor(favor_precision)
        text = determine_returnstring(document, options)
    except Exception:  # trafilatura and lxml raise a zoo of types on garbage
        logger.debug("Could not extract text from %s", url or "a page", exc_info=True)
        return "", None
    return text.strip(), document.body


def _visible_text(tree: Any) -> str | None:
    """The visible text of a parsed page; strips the invisible elements from ``tree``."""
    nodes = _visible_nodes(tree)
    return None if nodes is None else _joined(nodes)


def _visible_nodes(tree: Any) -> list[str] | None:
    """The text nodes of a parsed page a reader sees, or None when it cannot be read; strips
    the invisible elements from ``tree``."""
    try:
        etree.strip_elements(
            tree, *_INVISIBLE, etree.Comment, etree.ProcessingInstruction, with_tail=False
        )
        return list(tree.itertext())
    except Exception:  # lxml raises several types on odd trees
        logger.debug("Could not read the visible text of a page", exc_info=True)
        return None


def _joined(nodes: list[str]) -> str | None:
    """Text nodes as the visible text: white space collapsed, capped, or None when empty."""
    text = " ".join(" ".join(nodes).split())[:MAX_VISIBLE_CHARS].rstrip()
    return text or None
