"""A copy stored before its host's template was known (issue 42: one row a content).

A page signed with its host's template left out (core/template.py) and its copy signed while
the template was not known yet are signed by different texts: the stored one holds the
template's blocks. Their simhashes can be 20 bits apart and their sketches as alike as the
stripped text's share of the whole (0.6-0.8 on the aliasing site), so the check never
finds the copy, and the feed holds the content twice. :func:`copy_signed_unsure` asks the
index for the page as it would have been signed then (``PageSignature.unstripped``): the
crawl checks the page by that signature when a stored unsure page is its copy.

A view of the same content met later (an AMP or print page: its own chrome, not the site's
template) is near neither signature of the stored page. :func:`sign_again` therefore stores
the page signed again without its host's template once the template is known: by the text of
a copy dropped as its copy (the copy's stripped signature), or by its own text, which the
crawl remembers of the pages it kept while their host was young (crawl/pages/signed_again.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from sqlalchemy import bindparam, select

from simhash_filter.core.signature import MatchRule, marks_unsure

from .batch import Changes, KeyRow, PageUpdate
from .reading import ReadableStore, reading
from .schema import pages_table
from .statements import SqlBatchIO
from .supersede import read_kept

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy import Connection

    from simhash_filter.core.signature import PageSignature
    from simhash_filter.index.schemes import IndexScheme
    from simhash_filter.store.records import Match
    from simhash_filter.store.statements import Statements

__all__ = ["SignedAgain", "copy_signed_unsure", "sign_again"]


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


class SignedAgain(NamedTuple):
    """A stored page signed unsure, and its signature without its host's template."""

    url: str  # its canonical URL (the store's key)
    was: int  # the fingerprint it was stored with (as its copy was judged against it)
    fingerprint: int
    text_length: int
    sketch: bytes


_p = pages_table.c
_KEPT_AT = select(_p.id).where(_p.url == bindparam("url"), _p.dropped_at.is_(None))


def sign_again(
    conn: Connection,
    statements: Statements,
    scheme: IndexScheme,
    page: SignedAgain,
    now: datetime,
) -> bool:
    """In the caller's write transaction: store ``page``'s new signature in place of the one
    it was signed by while its host's template was not known (its index keys with it); False
    when the page left the index, was signed again meanwhile, or is not signed unsure."""
    page_id = conn.execute(_KEPT_AT, {"url": page.url}).scalar()
    old = None if page_id is None else read_kept(conn, page_id)
    if old is None or old.fingerprint != page.was or not old.sketch:
        return False
    if not marks_unsure(old.sketch) or marks_unsure(page.sketch):
        return False
    old_keys = scheme.index_items(old.fingerprint, old.sketch)
    new_keys = scheme.index_items(page.fingerprint, page.sketch)
    SqlBatchIO(conn, statements).write(
        Changes(
            now,
            key_deletes=[KeyRow(t, key, old.page_id, old.fingerprint) for t, key in old_keys],
            key_inserts=[KeyRow(t, key, old.page_id, page.fingerprint) for t, key in new_keys],
            page_updates=[PageUpdate(old.page_id, page.fingerprint, page.text_length, page.sketch)],
        )
    )
    return True
