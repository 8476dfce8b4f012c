"""The check-and-add decision in Python: this is where a page is judged NEW, DUPLICATE,
UNCHANGED or CHANGED on the "sqlalchemy" and "pg-pipeline" write paths (write_path.py).

:func:`decide_batch` decides a batch of rows against the database *and* against the
batch's own earlier rows (the paper's batch mode), so ``add_many(rows)`` returns exactly
the verdicts ``check_and_add`` would have returned row by row; ``check_and_add`` is a
batch of one. The "pg-function" path makes the same decision in SQL
(decide_function.sql); the equivalence tests (tests/store/test_pg_path.py,
tests/store/test_pg_function.py) pin that the two agree.

It never touches SQL: it works on what a :class:`BatchIO` reads for it
(statements.py's ``SqlBatchIO`` on a SQLAlchemy connection, pg_pipeline.py's
``_PipelinedIO`` on rows prefetched in one round trip), and hands it the :class:`Changes`
to write. The caller runs it inside a write transaction that holds the locks of
locks.py, so nothing changes between the reads and the writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, Protocol

from simhash_filter.core.signature import MatchRule
from simhash_filter.index.schemes import TableKey

from .records import Match, Verdict, VerdictKind


class StoredPage(NamedTuple):
    """A page row as the decision needs it."""

    page_id: int
    url: str
    domain: str
    fingerprint: int
    text_length: int
    sketch: bytes | None = None
    dropped: bool = False  # out of the index: its URL's content was last a copy of another


class KeyHit(NamedTuple):
    """One key row found by a probe: the page it indexes, and that page's fingerprint."""

    page_id: int
    fingerprint: int


@dataclass(slots=True)
class RowToCheck:
    """One page to decide: canonical URL, domain, fingerprint, sketch and index keys."""

    url: str
    domain: str
    fingerprint: int
    text_length: int
    index_keys: list[TableKey]  # stored for the page
    probe_keys: list[TableKey]  # looked up for the page (its near-duplicates share one)
    sketch: bytes | None = None

    def index_items(self) -> list[TableKey]:
        """The (table_no, key) pairs the page is stored under."""
        return list(self.index_keys)


IndexItems = Callable[[int, bytes | None], list[TableKey]]
"""The scheme's ``index_items``: a page's (table_no, key) pairs from its fingerprint and sketch."""


class Candidate(NamedTuple):
    """A page within the judge's radius of a row (``ref`` < 0: new in the same batch)."""

    ref: int
    fingerprint: int
    distance: int
    similarity: float | None = None  # set once the judge compared the sketches


class Judgement(NamedTuple):
    """A pair the judge calls a match: a copy, or (``copy`` False) boilerplate, or (``listing``)
    a listing and a page that is not one."""

    copy: bool
    similarity: float | None
    listing: bool = False


class Judge:
    """When is a page within the index's reach a near-duplicate?

    Without a rule: within ``max_distance`` bits. With a :class:`MatchRule`: within
    ``rule.candidate_distance`` and confirmed by ``rule.verify`` on the two sketches
    (a confirmed pair flagged ``boilerplate`` or ``listing`` is reported as such, not as a
    copy); when either page has no sketch, within ``rule.fallback_distance`` alone.
    """

    def __init__(self, max_distance: int, rule: MatchRule | None = None) -> None:
        self.rule = rule
        self.radius = max_distance if rule is None else rule.max_distance
        """Candidates farther than this are never matches."""

    def __call__(
        self, distance: int, query: bytes | None, stored: bytes | None
    ) -> Judgement | None:
        rule = self.rule
        if rule is None:
            return Judgement(True, None) if distance <= self.radius else None
        if query is not None and stored is not None and distance <= rule.candidate_distance:
            try:
                verification = rule.verify(query, stored)
            except ValueError:  # a stored sketch that is not one: judged by distance
                stored = None
            else:
                if not verification.confirmed:
                    return None
                return Judgement(
                    not (verification.boilerplate or verification.listing),
                    verification.similarity,
                    verification.listing,
                )
        if (query is None or stored is None) and distance <= rule.fallback_distance:
            return Judgement(True, None)
        return None


class NewPage(NamedTuple):
    ref: int  # < 0, replaced by the page id the writer returns
    url: str
    domain: str
    fingerprint: int
    text_length: int
    sketch: bytes | None
    dropped: bool = False  # out of the index (dropped_at = now, no key rows)


class KeyRow(NamedTuple):
    table_no: int
    key: int
    page_ref: int  # a page id, or the ref of a NewPage
    fingerprint: int


class PageUpdate(NamedTuple):
    page_id: int
    fingerprint: int
    text_length: int
    sketch: bytes | None
    dropped: bool = False  # dropped_at = now (out of the index), else NULL


class Drop(NamedTuple):
    """A duplicates row: a dropped page and the page it was a near-duplicate of."""

    url: str
    domain: str
    fingerprint: int
    duplicate_of_ref: int  # a page id, or the ref of a NewPage
    distance: int
    similarity: float | None


@dataclass(slots=True)
class Changes:
    """Everything one batch writes, in the order the writer applies it: new pages (their
    ids resolve the refs), key rows out and in, page updates, drops."""

    now: datetime
    new_pages: list[NewPage] = field(default_factory=list)
    key_deletes: list[KeyRow] = field(default_factory=list)
    key_inserts: list[KeyRow] = field(default_factory=list)
    page_updates: list[PageUpdate] = field(default_factory=list)  # last_seen = now
    drops: list[Drop] = field(default_factory=list)


class BatchIO(Protocol):
    """What the decision reads and writes, in the caller's transaction."""

    def pages_by_url(self, urls: Sequence[str]) -> Iterable[StoredPage]:
        """The stored pages with these canonical URLs."""
        ...

    def probe(self, keys: Collection[TableKey]) -> Mapping[TableKey, Sequence[KeyHit]]:
        """The key rows under these keys."""
        ...

    def pages_by_id(self, page_ids: Sequence[int]) -> Iterable[StoredPage]:
        """The stored pages with these ids."""
        ...

    def write(self, changes: Changes) -> Mapping[int, int]:
        """Apply ``changes``; return the page id of every NewPage ref."""
        ...


def decide_batch(
    rows: Sequence[RowToCheck],
    io: BatchIO,
    *,
    judge: Judge,
    index_items: IndexItems,
    now: datetime,
) -> list[Verdict]:
    """Decide ``rows`` in order, write the outcome through ``io``, return the verdicts.

    A *match* is a page the ``judge`` accepts; candidates are tried nearest first (then by
    URL). NEW: no other page matches, admitted. DUPLICATE: the nearest copy is named, the
    drop is logged; a URL stored in the index leaves it (its page row is kept, marked
    dropped, its key rows deleted: its content now is a copy of another page's).
    UNCHANGED: the URL is in the index and its stored version matches (last_seen updated;
    a missing sketch filled in). CHANGED: the URL is stored, its old version (when in the
    index) and every other page do not match: updated, its key rows replaced, back in the
    index if it had left it. An admitted page whose only matches were boilerplate names
    the nearest in ``Verdict.boilerplate_of``; one whose only matches were listings of it,
    or entries of it (``Judgement.listing``), the nearest in ``Verdict.listing_of``.
    """
    batch = _Batch(rows, judge, index_items)
    batch.load(io)
    decisions = [batch.decide(row) for row in rows]
    changes = batch.changes(decisions, now)
    ids = io.write(changes)
    return batch.verdicts(decisions, ids)


@dataclass(slots=True)
class _PageState:
    ref: int  # page id (> 0) or a temporary id for a page new in this batch (< 0)
    url: str
    domain: str
    stored_fp: int | None  # fingerprint in the database before the batch (None: new)
    fingerprint: int
    text_length: int
    sketch: bytes | None
    stored_sketch: bytes | None = None  # the sketch in the database before the batch
    seen: bool = False  # last_seen must be updated
    dropped: bool = False  # out of the index now
    stored_dropped: bool = False  # out of the index before the batch


@dataclass(slots=True)
class _Decision:
    kind: VerdictKind
    row: RowToCheck
    ref: int | None = None  # the page this row is (NEW/UNCHANGED/CHANGED)
    previous: int | None = None
    match: Candidate | None = None  # the nearest copy, for DUPLICATE
    boilerplate: Candidate | None = None  # the nearest boilerplate match of an admitted row
    listing: Candidate | None = None  # the nearest listing/entry match of an admitted row


class _Batch:
    """The state of one batch: pages it touched, its own new pages' keys, candidates."""

    def __init__(self, rows: Sequence[RowToCheck], judge: Judge, index_items: IndexItems) -> None:
        self.rows = rows
        self.judge = judge
        self._index_items = index_items
        # the rows' own keys, computed once by the store: a new page is stored under them
        self._known_keys = {(row.fingerprint, row.sketch): row.index_keys for row in rows}
        self.k = judge.radius
        self.pages: dict[int, _PageState] = {}  # ref -> state, pages touched by the batch
        self.by_url: dict[str, int] = {}
        self.urls: dict[int, str] = {}  # ref -> URL of every page a row may match
        self.sketches: dict[int, bytes | None] = {}  # page id -> sketch of those stored
        self.index: dict[TableKey, list[int]] = defaultdict(list)  # the batch's new keys
        self.db_candidates: Mapping[TableKey, Sequence[KeyHit]] = {}
        # pages re-keyed by the batch: their keys now (a hit under another is stale)
        self.rekeyed: dict[int, set[TableKey]] = {}
        self.next_tmp = -1

    def index_items(self, fingerprint: int, sketch: bytes | None) -> list[TableKey]:
        """The scheme's keys of a page (a row's own, without computing them again)."""
        known = self._known_keys.get((fingerprint, sketch))
        return list(known) if known is not None else self._index_items(fingerprint, sketch)

    # -- read
    def load(self, io: BatchIO) -> None:
        for page in io.pages_by_url(sorted({row.url for row in self.rows})):
            self.pages[page.page_id] = _PageState(
                page.page_id,
                page.url,
                page.domain,
                page.fingerprint,
                page.fingerprint,
                page.text_length,
                page.sketch,
                page.sketch,
                dropped=page.dropped,
                stored_dropped=page.dropped,
            )
            self.by_url[page.url] = page.page_id
            self.urls[page.page_id] = page.url
        wanted = {key for row in self.rows for key in row.probe_keys}
        self.db_candidates = io.probe(wanted)
        # the URLs and sketches of stored pages within reach of some row
        near = {
            hit.page_id
            for row in self.rows
            for key in row.probe_keys
            for hit in self.db_candidates.get(key, ())
            if hit.page_id not in self.urls
            and (hit.fingerprint ^ row.fingerprint).bit_count() <= self.k
        }
        if near:
            for page in io.pages_by_id(sorted(near)):
                self.urls[page.page_id] = page.url
                self.sketches[page.page_id] = page.sketch

    # -- decide
    def decide(self, row: RowToCheck) -> _Decision:
        ref = self.by_url.get(row.url)
        if ref is not None and not self.pages[ref].dropped:
            state = self.pages[ref]
            distance = (state.fingerprint ^ row.fingerprint).bit_count()
            if self.judge(distance, row.sketch, state.sketch) is not None:
                state.seen = True
                if state.sketch is None and row.sketch is not None:
                    state.sketch = row.sketch
                    self._rekey(ref, self.index_items(state.fingerprint, state.sketch))
                return _Decision(VerdictKind.UNCHANGED, row, ref=ref, previous=state.fingerprint)
        boilerplate = listing = None
        for candidate in self._candidates(row, exclude=ref):
            judgement = self.judge(candidate.distance, row.sketch, self._sketch(candidate.ref))
            if judgement is None:
                continue
            judged = candidate._replace(similarity=judgement.similarity)
            if judgement.copy:
                if ref is not None and not self.pages[ref].dropped:
                    self._leave_index(ref)
                return _Decision(VerdictKind.DUPLICATE, row, match=judged)
            if judgement.listing:
                listing = listing or judged
            else:
                boilerplate = boilerplate or judged
        if ref is not None:
            state = self.pages[ref]
            previous = state.fingerprint
            state.fingerprint, state.text_length, state.sketch, state.seen = (
                row.fingerprint,
                row.text_length,
                row.sketch,
                True,
            )
            state.dropped = False
            self._rekey(ref, row.index_keys)
            return _Decision(
                VerdictKind.CHANGED,
                row,
                ref=ref,
                previous=previous,
                boilerplate=boilerplate,
                listing=listing,
            )
        ref = self.next_tmp
        self.next_tmp -= 1
        self.pages[ref] = _PageState(
            ref, row.url, row.domain, None, row.fingerprint, row.text_length, row.sketch
        )
        self.by_url[row.url] = ref
        self.urls[ref] = row.url
        self._index(ref, row.index_keys)
        return _Decision(VerdictKind.NEW, row, ref=ref, boilerplate=boilerplate, listing=listing)

    def _leave_index(self, ref: int) -> None:
        """The page of ``ref`` leaves the index (its URL's content is a copy of another
        page's now): its row stays, marked dropped, with no key rows; a hit on it under
        any key is stale."""
        state = self.pages[ref]
        state.dropped, state.seen = True, True
        self.rekeyed[ref] = set()

    def _sketch(self, ref: int) -> bytes | None:
        state = self.pages.get(ref)
        return state.sketch if state is not None else self.sketches.get(ref)

    def _index(self, ref: int, keys: list[TableKey]) -> None:
        for key in keys:
            self.index[key].append(ref)

    def _rekey(self, ref: int, keys: list[TableKey]) -> None:
        """A page now lives under ``keys`` (as the writer will leave it): a hit under
        another key, from the database or from the batch's earlier rows, is stale."""
        self.rekeyed[ref] = set(keys)
        self._index(ref, keys)

    def _candidates(self, row: RowToCheck, exclude: int | None) -> list[Candidate]:
        """Every page within the judge's radius of ``row``, nearest first (then by URL):
        stored ones (at their current fingerprint) and the batch's own."""
        found: dict[int, Candidate] = {}
        fingerprint, k = row.fingerprint, self.k
        for key in row.probe_keys:
            for page_id, stored in self.db_candidates.get(key, ()):
                if page_id == exclude or page_id in found:
                    continue
                if page_id in self.rekeyed and key not in self.rekeyed[page_id]:
                    continue  # the page moved off this key earlier in the batch
                state = self.pages.get(page_id)
                current = stored if state is None else state.fingerprint
                distance = (current ^ fingerprint).bit_count()
                if distance <= k:
                    found[page_id] = Candidate(page_id, current, distance)
            for ref in self.index.get(key, ()):
                if ref == exclude or ref in found:
                    continue
                if ref in self.rekeyed and key not in self.rekeyed[ref]:
                    continue
                current = self.pages[ref].fingerprint
                distance = (current ^ fingerprint).bit_count()
                if distance <= k:
                    found[ref] = Candidate(ref, current, distance)
        return sorted(found.values(), key=lambda c: (c.distance, self.urls[c.ref]))

    # -- write
    def changes(self, decisions: list[_Decision], now: datetime) -> Changes:
        changes = Changes(now)
        for ref, state in self.pages.items():
            new_keys = [] if state.dropped else self.index_items(state.fingerprint, state.sketch)
            if state.stored_fp is None:
                changes.new_pages.append(
                    NewPage(
                        ref,
                        state.url,
                        state.domain,
                        state.fingerprint,
                        state.text_length,
                        state.sketch,
                        state.dropped,
                    )
                )
                changes.key_inserts.extend(
                    KeyRow(t, key, ref, state.fingerprint) for t, key in new_keys
                )
                continue
            old_keys = (
                []
                if state.stored_dropped
                else self.index_items(state.stored_fp, state.stored_sketch)
            )
            if state.fingerprint != state.stored_fp or old_keys != new_keys:
                changes.key_deletes.extend(
                    KeyRow(t, key, ref, state.stored_fp) for t, key in old_keys
                )
                changes.key_inserts.extend(
                    KeyRow(t, key, ref, state.fingerprint) for t, key in new_keys
                )
            if state.seen:
                changes.page_updates.append(
                    PageUpdate(
                        ref, state.fingerprint, state.text_length, state.sketch, state.dropped
                    )
                )
        for d in decisions:
            if d.match is not None:
                m = d.match
                changes.drops.append(
                    Drop(
                        d.row.url, d.row.domain, d.row.fingerprint, m.ref, m.distance, m.similarity
                    )
                )
        return changes

    def verdicts(self, decisions: list[_Decision], ids: Mapping[int, int]) -> list[Verdict]:
        def public(candidate: Candidate | None) -> Match | None:
            if candidate is None:
                return None
            ref = candidate.ref
            return Match(
                self.urls[ref],
                candidate.fingerprint,
                candidate.distance,
                ids.get(ref, ref),
                candidate.similarity,
            )

        return [
            Verdict(
                kind=d.kind,
                url=d.row.url,
                fingerprint=d.row.fingerprint,
                duplicate_of=public(d.match),
                previous_fingerprint=d.previous,
                boilerplate_of=public(d.boilerplate),
                listing_of=public(d.listing),
            )
            for d in decisions
        ]
