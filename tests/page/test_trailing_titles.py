"""trailing_titles: trafilatura's trailing-title removal in one pass gives the same
extraction, costs one pass over a page of many titles, and steps aside for a trafilatura
whose text was not reviewed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trafilatura
import trafilatura.main_extractor
from lxml import etree

import simhash_filter.page.extract  # noqa: F401 (installs the replacement, as the workers do)
from crawler.testsite import build_site
from crawler.testsite.hostile import KINDS, hostile_page
from simhash_filter.page import trailing_titles
from simhash_filter.page.extract import parse_bounded

PAGES = [
    *(hostile_page(kind, 8_000) for kind in KINDS),
    b"<html><body><article><p>" + b"a real paragraph of text here " * 20 + b"</p>"
    + b"<h2>more</h2><a href='/x'>link</a><h3>end</h3>" * 3 + b"</article></body></html>",
    *(
        page.body
        for page in build_site(boilerplate_traps=True).values()
        if page.content_type.startswith("text/html") and 0 < len(page.body) < 100_000
    ),
]  # fmt: skip


@pytest.fixture
def reinstalled() -> Iterator[None]:
    yield
    trailing_titles.install()


def test_the_reviewed_trafilatura_runs_with_the_one_pass() -> None:
    """Fails on a trafilatura whose main_extractor changed: review the two functions against
    the new text, then update REVIEWED_MAIN_EXTRACTOR."""
    assert trailing_titles.installed()


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("focus", ["favor_precision", "balanced", "favor_recall"])
def test_extraction_is_the_same_with_and_without_the_one_pass(
    fast: bool, focus: str, reinstalled: None
) -> None:
    options = {"fast": fast, "include_comments": False, "output_format": "xml"}
    if focus != "balanced":
        options[focus] = True
    one_pass = [trafilatura.extract(parse_bounded(page), **options) for page in PAGES]
    trailing_titles.uninstall()
    assert not trailing_titles.installed()
    theirs = [trafilatura.extract(parse_bounded(page), **options) for page in PAGES]
    assert one_pass == theirs
    assert any(one_pass)


def test_drop_trailing_removes_the_trailing_run_only() -> None:
    body = etree.fromstring(
        "<body><head>a</head>x<p>b</p>y<head>c</head>z<ref>d</ref>w<head>e</head>v</body>"
    )
    trailing_titles.drop_trailing(body, {"head", "ref"})
    assert etree.tostring(body) == b"<body><head>a</head>x<p>b</p>y</body>"


def test_a_page_of_many_titles_counts_no_children_a_title(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loops asked ``len`` of the body once a title: n titles, n²/2 child steps."""
    counted: list[int] = []

    def counting_len(obj: object) -> int:
        n = len(obj)  # type: ignore[arg-type]
        if isinstance(obj, etree._Element):
            counted.append(n)
        return n

    monkeypatch.setattr(trafilatura.main_extractor, "len", counting_len, raising=False)
    monkeypatch.setattr(trailing_titles, "len", counting_len, raising=False)
    html = hostile_page("headings", 200_000)
    trafilatura.extract(parse_bounded(html), fast=True, favor_precision=True)  # titles only: None
    assert counted, "the loops asked len of no element"
    assert sum(counted) < 50_000, (len(counted), sum(counted))


def test_an_unreviewed_trafilatura_keeps_its_loops(
    reinstalled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    trailing_titles.uninstall()
    monkeypatch.setattr(trailing_titles, "REVIEWED_MAIN_EXTRACTOR", "0" * 64)
    assert trailing_titles.install() is False
    assert not trailing_titles.installed()
