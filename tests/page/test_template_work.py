"""The page work with a host's template (issue 43): the shapes of the real false drops, made
by tests/support/template_site.py. A template is learned here as the store learns it: the
blocks on at least ``MIN_PAGES`` of the host's pages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from support.template_site import blog_post, filler_story, story, wiki_info

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule, PageSignature, Verification
from simhash_filter.core.template import HostTemplate
from simhash_filter.page.work import work_page

FP = Fingerprinter()
RULE = MatchRule()
MIN_PAGES = 5
SITE = "news.example"


def _sign(html: str, template: HostTemplate | None) -> PageSignature:
    signature = work_page(FP, f"http://{SITE}/p", None, html, max_bytes=1 << 20, template=template)
    assert signature.signature is not None
    return signature.signature


def _learned(pages: list[str]) -> HostTemplate:
    """The template the store would hold after these pages: blocks on MIN_PAGES of them."""
    young = HostTemplate(frozenset())  # (a page's blocks are hashed when a template is asked)
    counts = Counter(b for page in pages for b in set(_sign(page, young).blocks))
    blocks = frozenset(b for b, n in counts.items() if n >= MIN_PAGES)
    return HostTemplate(blocks, len(pages), len(pages) >= MIN_PAGES)


def _verify(a: PageSignature, b: PageSignature) -> Verification:
    return RULE.verify(a.sketch, b.sketch)


Maker = Callable[..., str]
SHAPES = {"newspaper": story, "blog": blog_post, "wiki": wiki_info}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_without_templates_the_two_pages_are_copies(shape: str) -> None:
    """The bug as it was: the extraction of two different pages is the site's furniture."""
    make = SHAPES[shape]
    a, b = _sign(make(SITE, "Alpha", 1), None), _sign(make(SITE, "Beta", 2), None)
    verdict = _verify(a, b)
    assert verdict.confirmed
    assert not verdict.boilerplate


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_learned_template_is_left_out_of_what_is_signed(shape: str) -> None:
    make = SHAPES[shape]
    template = _learned([make(SITE, f"Page {n}", 100 + n) for n in range(MIN_PAGES)])
    assert template.known
    assert template.blocks
    a, b = _sign(make(SITE, "Alpha", 1), template), _sign(make(SITE, "Beta", 2), template)
    assert a.template_share is not None
    assert a.template_share > 0.5
    assert not _verify(a, b).confirmed
    assert _verify(a, _sign(make(SITE, "Alpha", 1), template)).confirmed  # a copy still is


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_before_the_template_is_known_the_pair_is_boilerplate(shape: str) -> None:
    """A young host's pages (the template not known: signed *unsure*) are judged with the
    stricter rule, so a template learned later cannot come too late for them."""
    make = SHAPES[shape]
    young = HostTemplate(frozenset())
    a, b = _sign(make(SITE, "Alpha", 1), young), _sign(make(SITE, "Beta", 2), young)
    verdict = _verify(a, b)
    assert verdict.confirmed
    assert verdict.boilerplate
    copy = _verify(a, _sign(make(SITE, "Alpha", 1), young))
    assert copy.confirmed
    assert not copy.boilerplate


def test_a_newspaper_story_whose_text_is_only_the_menu_is_signed_by_its_bytes() -> None:
    template = _learned([story(SITE, f"Page {n}", 100 + n) for n in range(MIN_PAGES)])
    signature = _sign(story(SITE, "Alpha", 1), template)
    assert signature.exact
    assert signature.template_only


@pytest.mark.parametrize("young", [False, True])
def test_a_true_copy_in_two_templates_is_still_a_copy(young: bool) -> None:
    """One article on two sites, each with its own furniture, each template learned (or
    neither known yet): the article is what is signed on both, and they are copies."""
    article = 7
    signed = []
    for site in ("courier.example", "gazette.example"):
        pages = [filler_story(site, f"Other {n}", 200 + n) for n in range(MIN_PAGES)]
        template = HostTemplate(frozenset()) if young else _learned(pages)
        page = filler_story(site, "The same story", article, sections=12 if "g" in site else 24)
        signed.append(_sign(page, template))
    verdict = _verify(*signed)
    assert verdict.confirmed
    assert not verdict.boilerplate


def test_a_page_of_a_new_template_is_unsure_until_it_is_learned() -> None:
    """The host's template changed: the known one covers little of the new pages, which are
    judged as a young host's (the stricter rule) until their own template is learned."""
    old = _learned([story("old.example", f"Page {n}", 100 + n) for n in range(MIN_PAGES)])
    template = old._replace(pages=40)
    a, b = _sign(story(SITE, "Alpha", 1), template), _sign(story(SITE, "Beta", 2), template)
    assert a.template_share is not None
    assert a.template_share < 0.05
    verdict = _verify(a, b)
    assert verdict.confirmed
    assert verdict.boilerplate
