"""pass_options: the Extractor the page work hands trafilatura is the one trafilatura.extract
would build from the same keywords, and the text is the same with it."""

from __future__ import annotations

from typing import Any

import pytest
import trafilatura
import trafilatura.core
from hypothesis import given, settings
from hypothesis import strategies as st
from trafilatura.settings import Extractor

from crawler.testsite import build_site
from simhash_filter.page import extract
from simhash_filter.page.extract import pass_options

_PAGE = (
    "<html><body><article><p>" + "A sentence of the article. " * 20 + "</p></article></body></html>"
)


def _built_by_trafilatura(url: str | None, favor_precision: bool, fast: bool = True) -> Extractor:
    """The Extractor ``trafilatura.extract`` builds from the page work's keywords."""
    seen: list[Extractor] = []
    original = trafilatura.core.bare_extraction

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["options"])
        return original(*args, **kwargs)

    trafilatura.core.bare_extraction = spy
    try:
        trafilatura.extract(
            _PAGE,
            url=url,
            favor_precision=favor_precision,
            **(extract._PASS_OPTIONS | {"fast": fast}),
        )
    finally:
        trafilatura.core.bare_extraction = original
    assert len(seen) == 1
    return seen[0]


def _slots(options: Extractor) -> dict[str, Any]:
    return {name: getattr(options, name) for name in Extractor.__slots__}


_URLS = st.one_of(
    st.none(),
    st.just(""),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.sampled_from(["https://example.com/a?b=1#c", "https://例子.测试/路径", "//x/y"]),
)


@settings(max_examples=150, deadline=None)
@given(_URLS, st.booleans(), st.booleans())
def test_the_options_are_trafilatura_s_own(
    url: str | None, favor_precision: bool, fast: bool
) -> None:
    """Every field equal, ``date_params`` (the day it was built; only read with metadata,
    which the passes do not extract) in its keys; ``fast`` False too (a table-layout page's
    pass with the fallback comparison)."""
    ours, theirs = (
        _slots(pass_options(url, favor_precision=favor_precision, fast=fast)),
        _slots(_built_by_trafilatura(url, favor_precision, fast)),
    )
    assert ours.pop("date_params").keys() == theirs.pop("date_params").keys()
    assert ours == theirs
    assert ours["with_metadata"] is False


def test_each_call_gets_its_own_copy() -> None:
    first = pass_options("https://a.example/1", favor_precision=True)
    second = pass_options("https://a.example/2", favor_precision=True)
    assert first is not second
    assert (first.url, second.url) == ("https://a.example/1", "https://a.example/2")
    assert extract._PASS_EXTRACTORS[True].url is None


PAGES = [
    (path, page.body)
    for path, page in build_site(boilerplate_traps=True).items()
    if page.content_type.startswith("text/html") and 0 < len(page.body) < 100_000
]


def test_the_text_is_the_same_as_with_trafilatura_s_own_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pages = [(f"https://site.example{path}", body) for path, body in PAGES]
    ours = [extract.extract_page(body, url=url).text for url, body in pages]
    monkeypatch.setattr(extract, "pass_options", lambda url, *, favor_precision, fast: None)
    own = [extract.extract_page(body, url=url).text for url, body in pages]
    assert ours == own
    assert sum(text is not None for text in ours) > 10


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("favor_precision", [True, False])
def test_a_pass_s_text_is_trafilatura_extract_s(favor_precision: bool, fast: bool) -> None:
    """The pass calls ``bare_extraction`` and serializes its body as ``extract`` does (the
    table-layout gate reads the body): the text is ``extract``'s with the same keywords."""
    for path, body in PAGES:
        url = f"https://site.example{path}"
        own = trafilatura.extract(
            body,
            url=url,
            favor_precision=favor_precision,
            **(extract._PASS_OPTIONS | {"fast": fast}),
        )
        ours, tree = extract._trafilatura_pass(
            body, url, favor_precision=favor_precision, fast=fast
        )
        assert ours == (own or "").strip()
        assert (tree is None) == (own is None)
