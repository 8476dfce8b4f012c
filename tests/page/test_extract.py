"""extract_text: main text out of HTML bytes or str; None (never an exception) for garbage."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.articles import HARBOUR_BRIDGE, WASTE_SORTING_ZH
from crawler.testsite import blog_template, news_template, portal_template, zh_news_template
from simhash_filter.page.extract import ExtractedPage, extract_page, extract_text, visible_text


def test_extracts_the_article_and_leaves_the_template_out() -> None:
    text = extract_text(news_template(HARBOUR_BRIDGE, date="12 March 2024").encode())
    assert text is not None
    assert HARBOUR_BRIDGE.paragraphs[0] in text
    assert HARBOUR_BRIDGE.paragraphs[-1] in text
    for boilerplate in ("Most read", "Storm warning", "All rights reserved", "Search the Courier"):
        assert boilerplate not in text


def test_reader_comments_are_not_main_text() -> None:
    with_comments = extract_text(blog_template(HARBOUR_BRIDGE, date="x", comments=True))
    assert with_comments is not None
    assert "Fourteen million though" not in with_comments
    assert HARBOUR_BRIDGE.paragraphs[3] in with_comments


@pytest.mark.parametrize("charset", ["utf-8", "gbk", "gb18030"])
def test_chinese_bytes_are_decoded_by_their_declared_charset(charset: str) -> None:
    page = zh_news_template(WASTE_SORTING_ZH, date="2024年3月12日", charset=charset)
    text = extract_text(page.encode(charset))
    assert text is not None
    assert WASTE_SORTING_ZH.paragraphs[1] in text


def test_str_input_is_taken_as_decoded() -> None:
    page = zh_news_template(WASTE_SORTING_ZH, date="2024年3月12日", charset="gbk")
    text = extract_text(page)  # e.g. Scrapy's response.text, already decoded
    assert text is not None
    assert WASTE_SORTING_ZH.paragraphs[0] in text


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        "",
        b"   \n  ",
        random.Random(1).randbytes(50_000),
        random.Random(2).randbytes(5_000).decode("latin-1"),
        b"\x00" * 1000,
        b"<html><body></body></html>",
        b"\xff\xfe<\x00h\x00",
        "<p>unterminated <b><i><u>",
    ],
)
def test_garbage_gives_none_and_never_raises(garbage: bytes | str) -> None:
    assert extract_text(garbage) is None


def test_markup_soup_does_not_raise() -> None:
    text = extract_text(b"<<<<>>>>&&&&;;;;</p></div></html>")
    assert text is None or not any(ch.isalnum() for ch in text)


def test_page_of_boilerplate_only_gives_no_text() -> None:
    text = extract_text(portal_template(None, date="6 April 2024"))
    assert text is None or len(text.split()) < 10


def test_input_is_capped_at_max_bytes() -> None:
    page = news_template(HARBOUR_BRIDGE, date="12 March 2024").encode()
    cut = page.index(HARBOUR_BRIDGE.paragraphs[2][:40].encode())
    text = extract_text(page, max_bytes=cut)
    assert text is not None
    assert HARBOUR_BRIDGE.paragraphs[1] in text
    assert HARBOUR_BRIDGE.paragraphs[3] not in text


def test_a_huge_page_is_cut_and_still_extracted() -> None:
    page = news_template(HARBOUR_BRIDGE, date="12 March 2024")
    page = page.replace("</body>", "<script>" + "x = 1;" * 2_000_000 + "</script></body>")
    text = extract_text(page, max_bytes=1_000_000)
    assert text is not None
    assert HARBOUR_BRIDGE.paragraphs[0] in text


def test_max_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        extract_text(b"<p>x</p>", max_bytes=0)


def test_visible_text_keeps_what_a_reader_sees() -> None:
    page = (
        "<html><head><title>Title</title><style>p{color:red}</style>"
        "<script>var hidden = 1;</script></head><body><nav>Home | News</nav>"
        "<p>First <b>bold</b> words.</p><!-- a comment --><noscript>enable js</noscript>"
        "<footer>© Site</footer></body></html>"
    )
    assert visible_text(page) == "Home | News First bold words. © Site"
    assert visible_text(page.encode("utf-8")) == "Home | News First bold words. © Site"


def test_visible_text_of_nothing_is_none() -> None:
    for body in [b"", "", b"\x00\x01\x02binary", "<html><body><script>x</script></body></html>"]:
        assert visible_text(body) is None
    with pytest.raises(ValueError, match="max_bytes"):
        visible_text("<p>x</p>", max_bytes=0)


def _page(nav: str, body: str, footer: str) -> str:
    paragraphs = "".join(f"<p>{p}</p>" for p in body.split(". ") if p)
    return (
        f"<html><body><nav>{nav}</nav><aside>{SIDEBAR}</aside>"
        f"<article>{paragraphs}</article><footer>{footer}</footer></body></html>"
    )


SIDEBAR = (
    "Subscribe to our newsletter for the week's best stories, delivered every Friday morning. "
    "We never share your address and you can unsubscribe at any time with a single click."
)


def test_pages_whose_extraction_returned_the_same_sidebar_are_boilerplate() -> None:
    """Two different articles of one site; the extractor failed and returned the sidebar
    on both: the texts match, the pages do not."""
    from simhash_filter import Fingerprinter
    from simhash_filter.core.signature import MatchRule

    nav, footer = "Home News Sport Weather Archive", "© Harbour Gazette, all rights reserved"
    fp, rule = Fingerprinter(), MatchRule()
    article_a = " ".join(["The harbour trust voted to restore the old lighthouse."] * 30)
    article_b = " ".join(["The chess final was decided by a blunder in the endgame."] * 30)
    a = fp.sketch(SIDEBAR, page_text=visible_text(_page(nav, article_a, footer)))
    b = fp.sketch(SIDEBAR, page_text=visible_text(_page(nav, article_b, footer)))
    verdict = rule.verify(a, b)
    assert verdict.confirmed
    assert verdict.boilerplate


def test_one_article_in_two_site_templates_is_a_copy() -> None:
    from simhash_filter import Fingerprinter
    from simhash_filter.core.signature import MatchRule

    fp, rule = Fingerprinter(), MatchRule()
    article = " ".join(
        f"Paragraph {n} of the report on the restoration of the lighthouse at Carrow Point."
        for n in range(40)
    )
    page_a = _page("Home News Sport", article, "© Harbour Gazette")
    page_b = _page("Front page Opinion Culture Travel", article, "Coast Courier 2024")
    text_a, text_b = extract_text(page_a), extract_text(page_b)
    assert text_a is not None
    assert text_b is not None
    verdict = rule.verify(
        fp.sketch(text_a, page_text=visible_text(page_a)),
        fp.sketch(text_b, page_text=visible_text(page_b)),
    )
    assert verdict.confirmed
    assert not verdict.boilerplate


def test_extract_page_gives_both_texts_from_one_parse() -> None:
    nav, footer = "Home News Sport Weather Archive", "© Harbour Gazette"
    article = " ".join(
        f"Paragraph {n} of the report on the restoration of the lighthouse at Carrow Point."
        for n in range(40)
    )
    for page in [_page(nav, article, footer), _page(nav, article, footer).encode("utf-8")]:
        both = extract_page(page, url="https://example.com/a")
        assert not both.blocks  # hashed only when a host template is given
        assert both._replace(blocks=()) == ExtractedPage(extract_text(page), visible_text(page))
        assert both.text is not None
        assert both.visible is not None
        assert " ".join(both.text.split()) in both.visible
        assert extract_page(page, visible=False) == ExtractedPage(both.text, None)
        assert extract_page(page, main=False) == ExtractedPage(None, both.visible)
    for garbage in [b"", b"\x00\x01\x02", "<<<<"]:
        assert extract_page(garbage) == ExtractedPage(None, None)
    with pytest.raises(ValueError, match="max_bytes"):
        extract_page("<p>x</p>", max_bytes=0)


# --- the two passes (issue 30) -------------------------------------------------------------

PROSE = (
    "The harbour wall has been crumbling for years and the council now says it needs urgent "
    "repair before the winter storms arrive on the coast.\n"
) * 4
MENU = "Home\nNews\nSport\nWeather\nContact us\n" * 20


def _passes(monkeypatch: pytest.MonkeyPatch, precision: str, balanced: str) -> list[bool]:
    """Make trafilatura's two passes return the given texts; the passes asked for."""
    from simhash_filter.page import extract as module

    asked: list[bool] = []

    def fake(
        source: object, url: str | None, *, favor_precision: bool, fast: bool = True
    ) -> tuple[str, None]:
        asked.append(favor_precision)
        return (precision if favor_precision else balanced), None

    monkeypatch.setattr(module, "_trafilatura_pass", fake)
    return asked


def test_an_empty_precision_pass_falls_back_to_the_balanced_prose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simhash_filter.page.extract import _main_text

    asked = _passes(monkeypatch, "", PROSE)
    assert _main_text(object(), None) == PROSE
    assert asked == [True, False]


def test_a_long_precision_pass_is_trusted_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from simhash_filter.page.extract import FALLBACK_BELOW, _main_text

    long_text = PROSE * (FALLBACK_BELOW // len(PROSE) + 1)
    asked = _passes(monkeypatch, long_text, PROSE * 20)
    assert _main_text(object(), None) == long_text
    assert asked == [True]


def test_a_menu_from_the_balanced_pass_is_not_main_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page that is all boilerplate: the balanced pass returns its menu, which would collide
    with every other such page of the site; the short precision text (here none) stays."""
    from simhash_filter.page.extract import _main_text, prose_share

    assert prose_share(MENU) == 0.0
    assert prose_share(PROSE) == 1.0
    _passes(monkeypatch, "", MENU)
    assert _main_text(object(), None) is None
    _passes(monkeypatch, "A short caption.", MENU)
    assert _main_text(object(), None) == "A short caption."


def test_the_spec_names_the_extraction_implemented() -> None:
    from simhash_filter import Fingerprinter
    from simhash_filter.page import extract

    assert f"extract={extract.EXTRACTION}" in Fingerprinter().spec
    assert f"below-{extract.FALLBACK_BELOW}-prose-{extract.MIN_PROSE_SHARE}" in extract.EXTRACTION
    assert "precision-fast" in extract.EXTRACTION


def test_a_page_declaring_gb2312_with_gbk_characters_is_not_mojibake() -> None:
    """trafilatura decoded such a page as UTF-8 with replacement characters; a browser (and
    the page work) decodes gb2312 as its superset."""
    page = zh_news_template(WASTE_SORTING_ZH, date="2024年3月12日", charset="gb2312")
    body = page.replace(WASTE_SORTING_ZH.paragraphs[1], WASTE_SORTING_ZH.paragraphs[1] + "镕")
    raw = body.encode("gbk")  # 镕 is in GBK, not in GB2312
    with pytest.raises(UnicodeDecodeError):
        raw.decode("gb2312")
    text = extract_text(raw)
    assert text is not None
    assert "\ufffd" not in text
    assert WASTE_SORTING_ZH.paragraphs[1] + "镕" in text


def test_different_posts_with_one_shared_sidebar_are_not_one_text() -> None:
    """The sidebar case: blog posts whose template carries a book list at ~12% of the visible
    text; each post's main text is its own, not the list."""
    books = "".join(
        f"<li><h4>Book {n}</h4><p>A book I return to every year and give to friends who visit "
        f"the coast for the first time, number {n}.</p></li>"
        for n in range(4)
    )

    def post(paragraphs: tuple[str, ...]) -> str:
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return (
            "<html><body><div class='header'><a href='/'>Blog</a></div><div class='post'>"
            f"<h1>Post</h1><div class='entry-content'>{body}</div></div><aside class='sidebar'>"
            f"<h3>Books I recommend</h3><ul>{books}</ul></aside></body></html>"
        )

    a = extract_page(post(HARBOUR_BRIDGE.paragraphs[:3]))
    b = extract_page(post(HARBOUR_BRIDGE.paragraphs[3:6]))
    assert a.text is not None
    assert b.text is not None
    assert "Books I recommend" not in a.text + b.text
    assert HARBOUR_BRIDGE.paragraphs[0] in a.text
    assert HARBOUR_BRIDGE.paragraphs[3] in b.text


_PARSE_CASES = [
    news_template(HARBOUR_BRIDGE, date="12 March 2024"),
    zh_news_template(WASTE_SORTING_ZH, date="2024-03-12"),
    '<?xml version="1.0" encoding="utf-8"?><html><body><form><label>x</label>'
    "<input name=q><p>An encoding declaration: lxml wants bytes.</p></form></body></html>",
    "<p>one block alone</p>",
    "plain text, no markup at all",
    "<html><body><!-- a comment --><p>a &amp; b</p><?pi x?></body></html>",
]


@pytest.mark.parametrize("html", _PARSE_CASES)
def test_the_parse_is_trafilaturas_tree(html: str) -> None:
    """The page's parse (a parser whose element classes are set in C) gives the tree
    trafilatura's own ``load_html`` gives, every element an ``HtmlElement``."""
    from lxml import etree
    from lxml.html import HtmlElement
    from trafilatura.utils import load_html

    from simhash_filter.page.extract import parse_bounded

    ours, theirs = parse_bounded(html), load_html(html)
    if theirs is None:
        assert ours is None
        return
    assert etree.tostring(ours, encoding="unicode") == etree.tostring(theirs, encoding="unicode")
    assert all(isinstance(e, HtmlElement) for e in ours.iter(etree.Element))
    assert ours.text_content() == theirs.text_content()


@pytest.mark.parametrize("before", ["", "\U0001f600", "丂，"])
def test_a_long_run_of_marks_in_one_node_is_cut_in_the_tree(before: str) -> None:
    """A run in one text node (after an astral or a CJK character too) is cut in the tree,
    where trafilatura would see it (the text scans' prefilter admits it)."""
    run = "\u0301\u0323" * 100
    paragraphs = [*HARBOUR_BRIDGE.paragraphs, f"{before}a{run} tail"]
    html = news_template(HARBOUR_BRIDGE, date="12 March 2024", paragraphs=paragraphs).encode()
    page = extract_page(html, max_bytes=2_000_000)
    assert "marks" in page.capped
    assert page.visible is not None
    assert "\u0301\u0323" * 15 in page.visible
    assert "\u0301\u0323" * 16 not in page.visible


_REPAIR_PIECES = st.sampled_from(
    [
        "<!DOCTYPE html>",
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/x.dtd">',
        '<!doctype html PUBLIC "-//W3C//DTD XHTML 1.0//EN"\n "http://www.w3.org/TR/x.dtd">',
        "< ! DOCTYPE html/>",
        "<html/>",
        '<HTML lang="en" />',
        "<html lang='en'><link href=x />",
        "<html>",
        "<body><p>text</p></body></html>",
        "\n",
        "\r\n",
        "\r",
        "\x0b",
        "\x00",
        "\x1f",
        "\t",
        "\ufffe",
        "\uffff",
        "é",
        "丂",
        "\U0001f600",
        "x" * 5000,
    ]
)


@settings(derandomize=True, deadline=None, max_examples=400)
@given(st.lists(_REPAIR_PIECES, max_size=8))
def test_the_repair_is_trafilaturas(pieces: list[str]) -> None:
    """``_repair`` returns the page as it is only when trafilatura's ``repair_faulty_html``
    would: the same string on doctypes, ``<html/>`` lines, forbidden characters, newlines."""
    from trafilatura.utils import repair_faulty_html

    from simhash_filter.page.extract import _repair

    text = "".join(pieces)
    beginning = text[:50].lower()
    assert _repair(text, beginning) == repair_faulty_html(text, beginning)


@settings(derandomize=True, deadline=None, max_examples=300)
@given(st.one_of(st.binary(max_size=5000), st.text(max_size=3000)))
def test_binary_content_is_told_by_its_control_characters(body: bytes | str) -> None:
    """``_looks_binary`` counts the C0 controls (but tab, LF, FF, CR) of the first 4,096
    bytes or characters in C: the count a byte-by-byte test gives."""
    from simhash_filter.page.extract import _looks_binary

    head = body[:4096]
    codes = head if isinstance(head, bytes) else head.encode("utf-8", "surrogatepass")
    controls = sum(1 for byte in codes if byte < 32 and byte not in (9, 10, 12, 13))
    replacement = head.count("\ufffd") if isinstance(head, str) else 0
    expected = b"\x00" in codes or (controls + replacement) * 10 > len(head)
    assert _looks_binary(body) == expected


def test_a_page_of_control_bytes_is_binary_and_prose_is_not() -> None:
    from simhash_filter.page.extract import _looks_binary

    assert _looks_binary(b"\x01\x02\x03" * 200 + b"<p>text</p>" * 10)
    assert not _looks_binary(b"<p>line one\tand\r\nline two\x0c</p>" * 100)
