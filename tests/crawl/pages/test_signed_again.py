"""Pages kept while their host was young are remembered, bounded, and signed again once its
template is known (crawl/pages/signed_again.py; the crawl's view of it: test_template_crawl)."""

from __future__ import annotations

import numpy as np

from simhash_filter.core.signature import (
    PageSignature,
    decode_sketch,
    encode_sketch,
    marks_unsure,
    signed_again_sketch,
)
from simhash_filter.crawl.pages.signed_again import MIN_LEFT, YoungPages
from simhash_filter.page import extract
from simhash_filter.store.records import Match, Verdict, VerdictKind

SLOTS = np.arange(64, dtype=np.uint16)


def _young(
    url: str, text: str, *, unsure: bool = True, share: float | None = None
) -> tuple[PageSignature, Verdict]:
    sketch = encode_sketch(SLOTS, SLOTS[:32], 0.5, unsure=unsure)
    signature = PageSignature(1, sketch, len(text), template_share=share)
    return signature, Verdict(VerdictKind.NEW, url, 1)


def test_only_pages_kept_while_their_host_was_young_are_remembered() -> None:
    young = YoungPages()
    text = "a text " * 10
    assert young.remember("a.example", *_young("http://a.example/1", text), text)
    assert not young.remember("a.example", *_young("http://a.example/2", text, unsure=False), text)
    assert not young.remember("a.example", *_young("http://a.example/3", text, share=0.2), text)
    copy = Verdict(
        VerdictKind.DUPLICATE, "http://a.example/4", 1, Match("http://a.example/1", 1, 0, 1)
    )
    assert not young.remember("a.example", _young("http://a.example/4", text)[0], copy, text)
    assert not young.remember("a.example", *_young("http://a.example/5", text), None)
    assert young.chars == len(text)
    assert [p.url for p in young.take("a.example")] == ["http://a.example/1"]
    assert young.chars == 0
    assert young.take("a.example") == []


def test_the_memory_is_bounded_a_host_and_in_all_oldest_host_first() -> None:
    young = YoungPages(max_chars=1000, max_host_pages=3)
    text = "x" * 100
    for n in range(5):
        young.remember("a.example", *_young(f"http://a.example/{n}", text), text)
    assert young.chars == 300  # three a host
    for host in ("b.example", "c.example", "d.example"):
        for n in range(3):
            young.remember(host, *_young(f"http://{host}/{n}", text), text)
    assert young.chars <= 1000
    assert not young.waiting("a.example")  # the oldest host went first
    assert young.waiting("d.example")


def test_a_sketch_signed_again_keeps_the_visible_text_and_is_sure() -> None:
    stored = encode_sketch(SLOTS, SLOTS[:32] + 7, 0.6, listing=True, unsure=True)
    text_only = encode_sketch(SLOTS + 1)
    again = decode_sketch(signed_again_sketch(text_only, stored, 0.5))
    assert (again.text == SLOTS + 1).all()
    assert again.page is not None
    assert (again.page == SLOTS[:32] + 7).all()
    assert again.share is not None
    assert abs(again.share - 0.3) < 0.01
    assert again.listing
    assert not again.unsure
    assert not marks_unsure(signed_again_sketch(text_only, stored, 0.5))


def test_the_text_left_is_the_page_works_fallback_bound() -> None:
    """A copy of extract.FALLBACK_BELOW (signed_again.py must not import the extraction)."""
    assert MIN_LEFT == extract.FALLBACK_BELOW
