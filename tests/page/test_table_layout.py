"""A table-layout page: its article cell signed without the layout's other cells."""

from __future__ import annotations

import html

import pytest

from crawler.articles import HARBOUR_BRIDGE, URBAN_BEES, WASTE_SORTING_ZH, Article
from crawler.testsite import news_template
from simhash_filter.page.table_layout import (
    is_table_layout,
    keeps_article,
    table_share,
    tables_over_paragraphs,
)

NAV = ["Home", "News", "Sports", "Business", "Tech", "Cars", "Homes", "Mail", "Search", "Forum"]
ADS = [
    "Why some people get rich and others do not",
    "How the bank works out your repayments",
    "Ringtones of the week for your phone",
    "Summer deals on home appliances",
    "Free delivery on every order this month",
]


def portal_page(article: Article) -> bytes:
    """An old portal's page: one layout table, the article's paragraphs in one cell beside
    many small tables of menu, page tools and adverts (as the Chinese and English table-layout
    pages of the public data)."""
    nav = "".join(f"<td><a href='/{n}'>{n}</a></td>" for n in NAV)
    ads = "".join(
        f"<tr><td><table><tr><td>{html.escape(ad)} ({n})</td>"
        f"<td>{html.escape(ad.upper())}</td></tr></table></td></tr>"
        for n, ad in enumerate(ADS * 4)
    )
    body = "<br>".join(html.escape(p) for p in article.paragraphs)
    return (
        "<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(article.title)}</title></head><body>"
        f"<table width='760'><tr><td><table><tr>{nav}</tr></table></td></tr>"
        f"<tr><td><table><tr><td>{html.escape(article.title)}</td></tr></table></td></tr>"
        f"<tr><td>{body}</td></tr>"
        "<tr><td><table><tr><td>Page tools: comment, print, close</td></tr></table></td></tr>"
        f"<tr><td><table>{ads}</table></td></tr></table></body></html>"
    ).encode()


def test_table_share_counts_the_characters_of_table_rows() -> None:
    assert table_share("| a | b |\n| c | d |") == 1.0
    assert table_share("A line of prose.\n| x |") == pytest.approx(5 / 21)
    assert table_share("") == 0.0
    assert is_table_layout("| menu | item |\n| the article, a long cell of text |\nshort")
    assert not is_table_layout("A paragraph of prose.\nAnother paragraph.\n| one | cell |")


def test_the_fallback_text_stands_only_as_the_part_that_holds_the_article() -> None:
    article = " ".join(HARBOUR_BRIDGE.paragraphs[:3])
    first = f"| Home | News | Sports |\n| {article} |\n| Ringtones of the week | Summer deals |"
    assert keeps_article(first, article)  # the article cell without the others
    assert not keeps_article(first, "Ringtones of the week. Summer deals.")  # not the article
    assert not keeps_article(first, article + " " + URBAN_BEES.paragraphs[0])  # text of its own
    assert not keeps_article(first, "")
    assert not keeps_article("", article)


def test_a_table_layout_page_is_signed_by_its_article_cell() -> None:
    from simhash_filter.page.extract import _trafilatura_text, extract_text, parse_bounded

    page = portal_page(HARBOUR_BRIDGE)
    fast = _trafilatura_text(parse_bounded(page), None, favor_precision=True)
    assert is_table_layout(fast)
    assert "Ringtones of the week" in fast  # the fast pass returns the adverts' cells too
    text = extract_text(page)
    assert text is not None
    for paragraph in (HARBOUR_BRIDGE.paragraphs[0], HARBOUR_BRIDGE.paragraphs[-1]):
        assert paragraph in text
    for furniture in ("Ringtones of the week", "Page tools", "SUMMER DEALS"):
        assert furniture not in text


def test_its_copy_in_another_template_is_a_copy_and_another_article_is_not() -> None:
    from simhash_filter import Fingerprinter
    from simhash_filter.core.signature import MatchRule
    from simhash_filter.page.work import sign_page

    sign = Fingerprinter()
    rule = MatchRule()

    def signature(page: bytes | str) -> bytes:
        signed = sign_page(sign, "https://x.example/", None, page, max_bytes=1 << 20)
        assert signed is not None
        assert signed.sketch is not None
        return signed.sketch

    portal = signature(portal_page(HARBOUR_BRIDGE))
    copy = signature(news_template(HARBOUR_BRIDGE, date="5 March 2024"))
    assert rule.verify(portal, copy).confirmed
    assert not rule.verify(portal, signature(portal_page(URBAN_BEES))).confirmed


def test_a_fallback_that_returned_the_adverts_is_not_taken() -> None:
    """On the Chinese article the fallback comparison returns the advert cells (justext): not
    a part of the first text that holds its article, so the first text stays."""
    from simhash_filter.page.extract import _trafilatura_text, extract_text, parse_bounded

    page = portal_page(WASTE_SORTING_ZH)
    fallback = _trafilatura_text(parse_bounded(page), None, favor_precision=True, fast=False)
    assert WASTE_SORTING_ZH.paragraphs[0] not in fallback
    text = extract_text(page)
    assert text is not None
    assert WASTE_SORTING_ZH.paragraphs[0] in text


def report_page(article: Article) -> bytes:
    """A prose page with one data table whose rows are most of its text: not a layout."""
    rows = "".join(
        f"<tr><td>{year}</td><td>{1000 + 37 * year} vehicles a day crossed the bridge</td>"
        f"<td>{year % 7} closures for maintenance work</td></tr>"
        for year in range(1990, 2024)
    )
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in article.paragraphs[:2])
    return (
        f"<html><head><title>{html.escape(article.title)}</title></head><body><article>"
        f"<h1>{html.escape(article.title)}</h1>{paragraphs}"
        f"<table><tr><th>Year</th><th>Traffic</th><th>Closures</th></tr>{rows}</table>"
        "</article></body></html>"
    ).encode()


def _passes_run(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``fast`` flag of every trafilatura pass the page work runs from now on."""
    from simhash_filter.page import extract as module

    passes: list[bool] = []
    real = module._trafilatura_pass

    def spy(
        source: object, url: str | None, *, favor_precision: bool, fast: bool = True
    ) -> tuple[str, object]:
        passes.append(fast)
        return real(source, url, favor_precision=favor_precision, fast=fast)

    monkeypatch.setattr(module, "_trafilatura_pass", spy)
    return passes


def test_a_page_not_laid_out_in_a_table_never_runs_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simhash_filter.page.extract import extract_text

    passes = _passes_run(monkeypatch)
    assert extract_text(news_template(HARBOUR_BRIDGE, date="5 March 2024"))
    assert passes == [True]
    assert extract_text(portal_page(HARBOUR_BRIDGE))
    assert passes == [True, True, False]


def test_a_prose_page_with_one_long_table_does_not_pay_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its text is mostly table rows, but its body has more paragraphs than tables: trafilatura
    would not prefer readability's text, so the slower pass is not run."""
    from simhash_filter.page.extract import _trafilatura_pass, extract_text, parse_bounded

    page = report_page(HARBOUR_BRIDGE)
    fast, body = _trafilatura_pass(parse_bounded(page), None, favor_precision=True)
    assert is_table_layout(fast)
    assert not tables_over_paragraphs(body)
    passes = _passes_run(monkeypatch)
    text = extract_text(page)
    assert passes == [True]
    assert text == fast
    assert HARBOUR_BRIDGE.paragraphs[0] in text


def test_tables_over_paragraphs_is_trafilatura_s_structural_test() -> None:
    from lxml import etree

    from simhash_filter.page.extract import _trafilatura_pass, parse_bounded

    def body(xml: str) -> object:
        return etree.fromstring(f"<body>{xml}</body>")

    assert tables_over_paragraphs(body("<table/><table/><p>a</p>"))
    assert tables_over_paragraphs(body("<table/><p/>"))  # no paragraph text
    assert not tables_over_paragraphs(body("<table/><p>a</p><p>b</p>"))
    assert not tables_over_paragraphs(body("<p>a</p>"))
    assert not tables_over_paragraphs(None)
    _, portal = _trafilatura_pass(
        parse_bounded(portal_page(HARBOUR_BRIDGE)), None, favor_precision=True
    )
    assert tables_over_paragraphs(portal)


def test_the_spec_names_the_table_layout_rule() -> None:
    from simhash_filter.page.extract import EXTRACTION
    from simhash_filter.page.table_layout import MIN_CONTAINED, TABLE_SHARE

    assert (
        f"+table-layout-{TABLE_SHARE}-tables-over-p-full-contained-{MIN_CONTAINED}+" in EXTRACTION
    )
