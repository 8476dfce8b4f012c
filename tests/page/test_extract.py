"""extract_text: main text out of HTML bytes or str; None (never an exception) for garbage."""

from __future__ import annotations

import random

import pytest

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
        assert both == ExtractedPage(extract_text(page), visible_text(page))
        assert both.text is not None
        assert both.visible is not None
        assert " ".join(both.text.split()) in both.visible
        assert extract_page(page, visible=False) == ExtractedPage(both.text, None)
        assert extract_page(page, main=False) == ExtractedPage(None, both.visible)
    for garbage in [b"", b"\x00\x01\x02", "<<<<"]:
        assert extract_page(garbage) == ExtractedPage(None, None)
    with pytest.raises(ValueError, match="max_bytes"):
        extract_page("<p>x</p>", max_bytes=0)
