"""extract_text: main text out of HTML bytes or str; None (never an exception) for garbage."""

from __future__ import annotations

import random

import pytest

from crawler.articles import HARBOUR_BRIDGE, WASTE_SORTING_ZH
from crawler.testsite import blog_template, news_template, portal_template, zh_news_template
from simhash_filter.extract import extract_text


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
