"""A copy stored before its host's template was known (issue 42: one row a content).

A page signed with its host's template left out (core/template.py) and its copy signed while
the template was not known yet are signed by different texts: the stored one holds the
template's blocks. Their simhashes can be 20 bits apart and their sketches as alike as the
stripped text's share of the whole (0.6-0.8 on the aliasing site), so the check never
finds the copy, and the feed holds the content twice. :func:`copy_signed_unsure` asks the
index for the page as it would have been signed then (``PageSignature.unstripped``): the
crawl checks the page by that signature when a stored unsure page is its copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sqlalchemy import select

from simhash_filter.core.signature import MatchRule, marks_unsure

from .reading import ReadableStore, reading
from .schema import pages_table

if TYPE_CHECKING:
    from simhash_filter.core.signature import PageSignature
    from simhash_filter.store.records import Match

__all__ = ["copy_signed_unsure"]


class _NearStore(ReadableStore, Protocol):
    def near(
        self, fingerprint: int, k: int | None = None, *, sketch: bytes | None = None
    ) -> list[Match]: ...


def copy_signed_unsure(store: _NearStore, signature: PageSignature) -> Match | None:
    """Blocking: the nearest stored page, in the index and signed *unsure*, that the store's
    rule calls a copy of ``signature`` (an ``unstripped`` one), or None."""
    rule = store.rule or MatchRule()
    k = min(rule.candidate_distance, store.scheme.max_distance)
    matches = store.near(signature.fingerprint, k, sketch=signature.sketch)
    if not matches:
        return None
    p = pages_table.c
    with reading(store) as conn:
        sketches = dict(
            conn.execute(
                select(p.id, p.sketch).where(
                    p.id.in_([m.page_id for m in matches]), p.dropped_at.is_(None)
                )
            ).all()
        )
    for match in matches:  # nearest first
        stored = sketches.get(match.page_id)
        if not stored or not marks_unsure(stored):
            continue
        try:
            verdict = rule.verify(signature.sketch, stored)
        except ValueError:  # not a sketch of this spec: not judged so
            continue
        if verdict.confirmed and not (verdict.boilerplate or verdict.listing):
            return match
    return None
