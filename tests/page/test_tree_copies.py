"""tree_copies: trafilatura without the copies nothing reads gives the same extraction, and
steps aside for a trafilatura whose text was not reviewed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trafilatura
import trafilatura.core
from lxml import etree

import simhash_filter.page.extract  # noqa: F401 (installs the replacement, as the workers do)
from crawler.testsite import build_site
from simhash_filter.page import tree_copies
from simhash_filter.page.extract import parse_bounded

_POST = (
    "<div class='comment'><p>{} wrote: the night train from the coast was late again, {}.</p></div>"
)
FORUM_THREAD = (
    '<html><head><script type=\'application/ld+json\'>{"@type": "DiscussionForumPosting"}'
    "</script></head><body><h1>Night trains</h1><div id='comments' class='comments'>"
    + "".join(_POST.format(name, "but the staff were kind " * n) for n, name in enumerate("abcdef"))
    + "</div></body></html>"
).encode()
"""A thread forum (schema.org DiscussionForumPosting): trafilatura routes its comments into
the body, from the backup of the cleaned tree."""

PAGES = [
    FORUM_THREAD,
    *(
        page.body
        for page in build_site(boilerplate_traps=True).values()
        if page.content_type.startswith("text/html") and 0 < len(page.body) < 100_000
    ),
]


@pytest.fixture
def reinstalled() -> Iterator[None]:
    yield
    tree_copies.install()


def test_the_reviewed_trafilatura_runs_without_the_copies() -> None:
    """Fails on a trafilatura whose functions changed: review the reasoning in the module's
    docstring against the new text, then update REVIEWED_CORE."""
    assert tree_copies.installed()


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("comments", [False, True])
@pytest.mark.parametrize("focus", ["favor_precision", "balanced", "favor_recall"])
def test_extraction_is_the_same_with_and_without_the_copies(
    fast: bool, comments: bool, focus: str, reinstalled: None
) -> None:
    options = {"fast": fast, "include_comments": comments, "output_format": "txt"}
    if focus != "balanced":
        options[focus] = True
    trees = [parse_bounded(page) for page in PAGES]
    assert sum(tree is not None for tree in trees) > 10
    without = [trafilatura.extract(tree, **options) for tree in trees if tree is not None]
    tree_copies.uninstall()
    assert not tree_copies.installed()
    with_copies = [trafilatura.extract(tree, **options) for tree in trees if tree is not None]
    assert without == with_copies
    assert any(without)


def test_the_caller_s_tree_is_left_alone() -> None:
    tree = parse_bounded(PAGES[0])
    before = etree.tostring(tree)
    trafilatura.extract(tree, fast=True, favor_precision=True, include_comments=False)
    assert etree.tostring(tree) == before


def test_an_unreviewed_trafilatura_keeps_its_copies(
    reinstalled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree_copies.uninstall()
    monkeypatch.setattr(tree_copies, "REVIEWED_CORE", "0" * 64)
    assert tree_copies.install() is False
    assert not tree_copies.installed()
    assert not isinstance(trafilatura.core._prepare_tree, tree_copies._PrepareTree)
