"""What the filter made of one page: its :class:`Outcome`, carried by a :class:`FilterResult`.

Outcomes (each one a stat under ``simhash_filter/``; they are disjoint):

- ``kept``: a new page, admitted to the index; the item passes.
- ``dropped``: a near-duplicate of a page already kept: within ``MAX_DISTANCE`` bits of it
  and confirmed by the sketches (``MIN_SIMILARITY``; the store's match rule).
- ``unchanged`` / ``changed``: a URL already in the index, re-crawled, matching / not
  matching its stored version under the same rule (a changed page that became a
  near-duplicate of *another* page is ``dropped``); the item passes.
- ``no_text``: no text field, no extractable HTML, or fewer tokens than ``MIN_TOKENS``; the
  item passes unfingerprinted (an empty page must not collide with every other empty page).
  Such a page is still checked by its bytes (``exact_content``, below): it is recorded, and
  a byte-identical copy of it under another URL is ``dropped``.
- ``too_deep``: no text because the page is nested deeper than even the ``huge_tree`` parser
  reads (2,048 elements: its text is lost in the parser); the item passes unfingerprinted,
  counted apart from ``no_text`` so that a page hiding its text this way is seen.
- ``boilerplate`` (not disjoint: also ``kept``, ``unchanged`` or ``changed``): the page's
  main text matched a stored page's, but the visible pages around them differ, so it is an
  extraction failure rather than a copy, and the page was admitted.
- ``listing`` (not disjoint, like ``boilerplate``): the page's main text matched a stored
  page's, but one of the two is a listing (an archive or home page of several entries,
  ``page/listing.py``) and the other is not: an archive showing a post whole and the post are
  not copies, and the page was admitted.
- ``exact_content`` (not disjoint: also ``no_text`` or ``dropped``): the page had too little
  text and was checked by its exact-content key (its bytes, white space runs collapsed;
  :mod:`simhash_filter.core.content_key`), which only a byte-identical page matches.
- ``superseded`` (not disjoint: also ``kept``): under the keep policy ``"supersede"`` the page,
  a copy of a kept page, is the URL the cluster's canonical hints name, so it is kept in that
  page's place and the other is recorded as superseded (docs/keep.md); the pipeline sends
  the ``page_superseded`` signal.
- ``late_canonical`` (not disjoint: also ``dropped``): under the keep policy ``"canonical"``
  (the default) the page is the one the cluster's hints name, but a copy of it was kept (and
  its item emitted) first: it is dropped, and the store records it as the cluster's canonical
  (docs/keep.md).
- ``errors``: the store (or anything else) failed for this page. The error is logged with
  its traceback and the page passes (``FAIL_OPEN = True``, the default) or is dropped
  (``FAIL_OPEN = False``: nothing unchecked gets through; the page is not in the index, so
  a later crawl checks it again). One bad page never stops a crawl. The first error of each
  kind is logged with its traceback, the next ones as one line per kind with a count
  (:class:`~simhash_filter.crawl.pages.error_log.RepeatedErrors`): a full disk does not flood
  the log.

Caps a page met on the way (``capped/<cap>``, not disjoint; :mod:`simhash_filter.page.extract`,
:mod:`simhash_filter.core.text`): ``bytes`` (``MAX_BYTES``), ``elements`` (the tree cut after
``MAX_ELEMENTS``), ``deep`` (flattened), ``too_deep``, ``marks`` (a run of combining marks
cut), ``han`` (a Han run segmented in pieces).
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass

from simhash_filter.store.records import Match, Supersession, Verdict, VerdictKind
from simhash_filter.urls.key import PageKey

__all__ = ["STATS_PREFIX", "FilterResult", "Outcome", "measures"]


def measures(match: Match) -> str:
    """How alike a drop is to the page it copies, as the drop lines say it:
    ``similarity 0.953, distance 3 bits`` (the sketches' similarity, what the match rule
    confirmed; the command line names it the same), or the distance alone (no sketch)."""
    distance = f"distance {match.distance} bits"
    if match.similarity is None:
        return distance
    return f"similarity {round(match.similarity, 3):g}, {distance}"


STATS_PREFIX = "simhash_filter/"
"""The prefix of every stat the filter keeps (``simhash_filter/kept``, ...)."""


class Outcome(enum.Enum):
    """What the filter did with one page; each value is also its stat name."""

    KEPT = "kept"
    DROPPED = "dropped"
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    NO_TEXT = "no_text"
    TOO_DEEP = "too_deep"
    ERROR = "errors"

    @property
    def passes(self) -> bool:
        """True when the page was admitted (or already stored) under this outcome."""
        return self in {Outcome.KEPT, Outcome.UNCHANGED, Outcome.CHANGED}

    @classmethod
    def of(cls, verdict: Verdict) -> Outcome:
        """The outcome a store verdict means."""
        return _OUTCOME_OF[verdict.kind]


_OUTCOME_OF = {
    VerdictKind.NEW: Outcome.KEPT,
    VerdictKind.DUPLICATE: Outcome.DROPPED,
    VerdictKind.UNCHANGED: Outcome.UNCHANGED,
    VerdictKind.CHANGED: Outcome.CHANGED,
}


@dataclass(frozen=True, slots=True)
class FilterResult:
    """The result of checking one page: ``url`` as the page came, ``key`` its URL keys (made
    once a page: the filter passes them in; otherwise made here, None when ``url`` is not a
    URL)."""

    outcome: Outcome
    url: str
    fingerprint: int | None = None
    verdict: Verdict | None = None
    error: BaseException | None = None
    capped: tuple[str, ...] = ()
    """The caps the page met (:class:`~simhash_filter.page.work.PageWork`)."""
    exact: bool = False
    """The page had too little text and was checked by its bytes (its exact-content key):
    ``no_text`` when new, ``dropped`` as an exact copy of a stored page."""
    superseded: Supersession | None = None
    """Set when the page was kept in place of a copy kept before (the keep policy)."""
    late_canonical: bool = False
    """``KEEP = "canonical"``: the page (dropped) is its cluster's canonical, come after a
    copy of it was kept and emitted; the store recorded it (``duplicates.kind``)."""
    canonical: str | None = None
    """The canonical URL a passing page's item names (``CANONICAL_URL_FIELD``): the one it
    declared, unless the store keeps that URL as another page, else its own URL."""
    listing: bool = False
    """The page is a listing (an archive or home page of several entries,
    ``page/listing.py``): its URL pairs teach no URL rule (see the rule learner)."""
    text: str | None = None
    """The main text that was fingerprinted, with ``ADD_TEXT`` (the pipeline puts it in the
    item), else None."""
    key: PageKey | None = None

    def __post_init__(self) -> None:
        if self.key is None:
            with contextlib.suppress(ValueError):  # not a URL: no keys
                object.__setattr__(self, "key", PageKey.of(self.url))

    @property
    def declared(self) -> str | None:
        """The canonical URL the page declared (its hints, :mod:`simhash_filter.core.canonical`),
        in canonical form, or None."""
        return self.key.declared if self.key is not None else None

    @property
    def canonical_confirmed(self) -> bool:
        """True when the content check called the page (dropped) a copy of the canonical it
        declared: a confirmed (variant, canonical) pair, evidence for URL rules; the store
        keeps every such pair (``FingerprintStore.canonical_pairs``, docs/keep.md)."""
        match = self.verdict.duplicate_of if self.verdict is not None else None
        if match is not None and self.outcome is Outcome.DROPPED:
            return self.declared is not None and self.declared == match.url
        return False

    @property
    def hex_fingerprint(self) -> str | None:
        """The fingerprint as 16 hex digits, or None."""
        return None if self.fingerprint is None else f"{self.fingerprint:016x}"
