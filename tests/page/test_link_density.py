"""link_density: trafilatura's link-density tests without ElementPath (and without an XPath
for a link's text) give trafilatura's own answers on every element of generated trees, the
same extraction, and step aside for a trafilatura whose text was not reviewed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trafilatura
import trafilatura.htmlprocessing as htmlprocessing
import trafilatura.main_extractor as main_extractor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree, html

import simhash_filter.page.extract  # noqa: F401 (installs the replacements, as the workers do)
from crawler.testsite import build_site
from simhash_filter.page import link_density
from simhash_filter.page.extract import parse_bounded

ORIGINALS = link_density._ORIGINALS

# the tags the tests look at and around (trafilatura's converted vocabulary), text that is
# short, long, blank or absent, so each length threshold is met from both sides
TAGS = ["div", "p", "list", "item", "ref", "graphic", "head", "quote", "table", "cell", "span"]
_TEXTS = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "\n\t", "a", "Read more", "Home", "x" * 9, "y" * 11]),
    st.integers(1, 40).map(lambda n: "word " * n),
)


@st.composite
def _trees(draw: st.DrawFn) -> Any:
    root = html.fromstring("<div></div>")
    elements = [root]
    for _ in range(draw(st.integers(1, 45))):
        parent = elements[draw(st.integers(0, len(elements) - 1))]
        if draw(st.integers(0, 9)) == 0:  # a comment: a child node, not an element
            parent.append(html.HtmlComment("note"))
            parent[-1].tail = draw(_TEXTS)
            continue
        element = etree.SubElement(parent, draw(st.sampled_from(TAGS)))
        element.text, element.tail = draw(_TEXTS), draw(_TEXTS)
        elements.append(element)
    return root


@pytest.fixture
def reinstalled() -> Iterator[None]:
    yield
    link_density.install()


def test_the_reviewed_trafilatura_runs_the_replacements() -> None:
    """Fails on a trafilatura whose htmlprocessing.py changed: compare the three functions
    with the new text, then update REVIEWED_HTMLPROCESSING."""
    assert link_density.installed()
    assert htmlprocessing.link_density_test is link_density.link_density_test
    assert main_extractor.link_density_test_tables is link_density.link_density_test_tables


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees())
def test_every_element_gets_trafilatura_s_answers(tree: Any) -> None:
    before = etree.tostring(tree)
    for element in tree.iter("*"):
        for precision in (False, True):
            assert link_density.link_density_test(element, precision) == ORIGINALS[
                "link_density_test"
            ](element, precision)
        assert link_density.link_density_test_tables(element) is ORIGINALS[
            "link_density_test_tables"
        ](element)
        links = element.findall(".//ref")
        assert link_density.is_paragraph_listing(links) is ORIGINALS["is_paragraph_listing"](links)
        assert link_density.collect_link_info(links) == ORIGINALS["collect_link_info"](links)
        assert link_density.text_content(element) == element.text_content()
    assert etree.tostring(tree) == before  # the tests only read


PAGES = [
    page.body
    for page in build_site(boilerplate_traps=True).values()
    if page.content_type.startswith("text/html") and 0 < len(page.body) < 100_000
]


@pytest.mark.parametrize("precision", [True, False])
def test_extraction_is_the_same_with_and_without_the_replacements(
    precision: bool, reinstalled: None
) -> None:
    options = {"fast": True, "favor_precision": precision, "include_comments": False}
    trees = [tree for tree in (parse_bounded(page) for page in PAGES) if tree is not None]
    assert len(trees) > 10
    replaced = [trafilatura.extract(tree, **options) for tree in trees]
    link_density.uninstall()
    assert not link_density.installed()
    assert htmlprocessing.link_density_test is ORIGINALS["link_density_test"]
    assert main_extractor.link_density_test_tables is ORIGINALS["link_density_test_tables"]
    own = [trafilatura.extract(tree, **options) for tree in trees]
    assert replaced == own
    assert any(replaced)


def test_an_unreviewed_trafilatura_keeps_its_functions(
    reinstalled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_density.uninstall()
    monkeypatch.setattr(link_density, "REVIEWED_HTMLPROCESSING", "0" * 64)
    assert link_density.install() is False
    assert not link_density.installed()
    assert htmlprocessing.link_density_test is ORIGINALS["link_density_test"]


def test_an_element_that_is_not_html_has_no_text_content() -> None:
    """As trafilatura's own call, the replacement raises for an lxml.etree element."""
    with pytest.raises(AttributeError):
        link_density.text_content(etree.Element("ref"))


def test_install_is_idempotent() -> None:
    assert link_density.install() is True
    assert link_density.install() is True
    assert htmlprocessing.is_paragraph_listing is link_density.is_paragraph_listing
