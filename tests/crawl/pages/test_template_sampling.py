"""Which pages' blocks a crawl hashes (crawl/pages/templates.py): every page of a young host,
1 in ``SAMPLE_EVERY`` of a known host's, every page while they do not fit its template (a new
layout, learned from each of its pages), and 1 in ``SAMPLE_EVERY`` again once
``MISFIT_PAGES`` did not fit (many layouts under one host), until ``FITS_AGAIN`` in a row
fit."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import PageSignature
from simhash_filter.core.template import HostTemplate
from simhash_filter.crawl.pages.templates import (
    FITS_AGAIN,
    MISFIT_PAGES,
    SAMPLE_EVERY,
    HostTemplates,
)
from simhash_filter.store.records import Verdict, VerdictKind

HOST = "news.example"
TEXT = " ".join(f"word{i} of the story told at length" for i in range(60))


class _Stats:
    def inc_value(self, key: str) -> None:
        pass


class _Store:
    """The store's side of :class:`HostTemplates`: one host's template, what is learned."""

    def __init__(self, template: HostTemplate) -> None:
        self.value = template
        self.learned: list[Any] = []

    def template(self, host: str, min_pages: int) -> HostTemplate:
        return self.value

    def learn(self, pending: Any, shares: Any) -> None:
        self.learned.extend(pending)


def _templates(*, known: bool) -> HostTemplates:
    templates = HostTemplates(5)
    templates._store = _Store(HostTemplate(frozenset({1, 2, 3}), pages=9, known=known))  # type: ignore[assignment]
    return templates


def _signature(*, fits: bool) -> PageSignature:
    signature = Fingerprinter().sign(TEXT, page_text=TEXT, unsure=not fits)
    assert signature is not None
    return replace(signature, blocks=(1, 2, 3, 4))


def _page(templates: HostTemplates, *, fits: bool = True) -> bool:
    """One page of the host: whether its blocks were wanted; when they were, it is admitted
    as new (and fits the template or not)."""
    template = templates.template(HOST)
    assert template is not None
    if template.blocks_wanted:
        verdict = Verdict(VerdictKind.NEW, f"http://{HOST}/p", 1)
        templates.admitted(HOST, _signature(fits=fits), verdict, _Stats())
        templates.drain()
    return template.blocks_wanted


def test_a_young_hosts_pages_are_all_hashed() -> None:
    templates = _templates(known=False)
    assert all(_page(templates, fits=False) for _ in range(3 * SAMPLE_EVERY))


def test_a_known_hosts_pages_are_sampled() -> None:
    templates = _templates(known=True)
    wanted = [_page(templates) for _ in range(4 * SAMPLE_EVERY)]
    assert sum(wanted) == 4


def test_pages_that_do_not_fit_are_all_hashed_then_sampled_again() -> None:
    templates = _templates(known=True)
    while not _page(templates):  # a sampled page that fits
        pass
    while not _page(templates, fits=False):  # the first that does not: a new layout
        pass
    wanted = [_page(templates, fits=False) for _ in range(MISFIT_PAGES - 1)]
    assert all(wanted)  # each page of the new layout teaches it
    assert _page(templates, fits=False)  # the MISFIT_PAGES-th in a row
    later = [_page(templates, fits=False) for _ in range(4 * SAMPLE_EVERY)]
    # many layouts under one host: sampled as a fitting one (and the page after each read)
    assert 4 <= sum(later) < len(later) / 2


def _past_the_count(templates: HostTemplates) -> None:
    for _ in range(MISFIT_PAGES + 1):
        while not _page(templates, fits=False):
            pass


def test_pages_that_fit_again_start_the_count_again() -> None:
    templates = _templates(known=True)
    _past_the_count(templates)
    for _ in range(FITS_AGAIN):  # sampled pages in a row that fit
        while not _page(templates, fits=True):
            pass
    while not _page(templates, fits=False):  # the next that does not
        pass
    assert all(_page(templates, fits=False) for _ in range(MISFIT_PAGES - 1))


def test_a_page_now_and_then_that_fits_does_not() -> None:
    """A host of many layouts: some of its pages fit the template its layouts share."""
    templates = _templates(known=True)
    _past_the_count(templates)
    while not _page(templates, fits=True):  # one sampled page fits
        pass
    later = [_page(templates, fits=False) for _ in range(4 * SAMPLE_EVERY)]
    assert sum(later) < len(later) / 2
