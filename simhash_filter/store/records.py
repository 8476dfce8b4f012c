"""Plain records the store hands out: verdicts, matches, pages, drops and errors.

They carry unsigned 64-bit fingerprints (signed only inside SQL); nothing here
touches SQL, so the pipeline, the middleware and the CLI can import them freely.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from simhash_filter.urls.key import PageKey


class StoreError(Exception):
    """A database problem, with a message meant for a person (no traceback needed)."""


class DatabaseNotFoundError(StoreError):
    """A query was asked of a database that does not exist (it is never created by a query)."""


class SchemeMismatchError(StoreError):
    """The database was made with another fingerprint spec or index scheme."""


class StoreBusy(StoreError):
    """A write waited its bound for a lock another session held (a PostgreSQL lock or
    statement timeout, SQLite's write lock): the page was not checked. ``whole_database``:
    the lock was one every write needs (SQLite's, a PostgreSQL table lock), so retrying
    another page cannot help."""

    def __init__(self, message: str, *, whole_database: bool = False) -> None:
        super().__init__(message)
        self.whole_database = whole_database


class StoreUnavailable(StoreError):
    """The database server could not be reached (refused, starting up, shutting down, the
    connection lost) for longer than the write's outage retry: the page was not checked."""


class VerdictKind(enum.Enum):
    """What ``check_and_add`` did with a page."""

    NEW = "new"  # no stored page within k: admitted
    DUPLICATE = "duplicate"  # within k of another stored page: dropped and logged
    UNCHANGED = "unchanged"  # the URL is stored, and its new fingerprint is within k of the old
    CHANGED = "changed"  # the URL is stored, beyond k of its old version, and of every other page


class PageRow(NamedTuple):
    """One page for :meth:`FingerprintStore.add_many` (a plain ``(url, fingerprint,
    text_length)`` tuple is accepted too). ``key``: the page's URL keys when the caller made
    them already (the crawl does, once a page); None: the store makes them from ``url`` and
    ``declared``."""

    url: str
    fingerprint: int
    text_length: int = 0
    sketch: bytes | None = None  # the PageSignature's second signature, if computed
    text: bytes | None = None  # the main text to store (stored_text.pack_text), if kept
    declared: str | None = None  # the canonical URL the page declares (core/canonical.py)
    key: PageKey | None = None

    def page_key(self) -> PageKey:
        """The page's URL keys: ``key``, or made now (ValueError: ``url`` is not a URL)."""
        return self.key if self.key is not None else PageKey.of(self.url, self.declared)


@dataclass(frozen=True, slots=True)
class Match:
    """A stored page near a query fingerprint."""

    url: str
    fingerprint: int
    distance: int
    page_id: int
    similarity: float | None = None  # the sketches' estimate (None: judged by distance alone)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The store's verdict on one page: what ``check_and_add`` found and did (the Scrapy
    side turns it into an :class:`~simhash_filter.crawl.pages.outcomes.Outcome`)."""

    kind: VerdictKind
    url: str  # canonical URL
    fingerprint: int
    duplicate_of: Match | None = None  # set for DUPLICATE (the nearest stored page)
    previous_fingerprint: int | None = None  # set for UNCHANGED and CHANGED
    boilerplate_of: Match | None = None
    """Set when the only matches were rejected as boilerplate (same extracted text, other
    pages around it): the page is admitted."""
    listing_of: Match | None = None
    """Set when no match was a copy and one was a listing of this page, or an entry of this
    listing (``Verification.listing``): the nearest such. The page is admitted."""

    @property
    def admitted(self) -> bool:
        """True when the page was stored (or was already stored): the item passes."""
        return self.kind is not VerdictKind.DUPLICATE


@dataclass(frozen=True, slots=True)
class PageRecord:
    """An admitted page as the store knows it."""

    page_id: int
    url: str
    fingerprint: int
    text_length: int
    first_seen: datetime
    last_seen: datetime
    dropped_at: datetime | None = None
    """When the URL, re-crawled, was dropped as a copy of another page: it left the index
    then (its old version is what this record holds); None while it is in the index."""
    canonical_url: str | None = None  # the canonical URL it declared when last checked


@dataclass(frozen=True, slots=True)
class DuplicateRecord:
    """A dropped page: which URL, and the admitted page it was a near-duplicate of."""

    duplicate_id: int
    url: str
    fingerprint: int
    duplicate_of_url: str
    duplicate_of_fingerprint: int
    distance: int
    seen_at: datetime
    similarity: float | None = None  # the sketches' estimate (None: judged by distance alone)
    canonical_url: str | None = None  # the canonical URL the dropped page declared
    kind: str | None = None
    """None: dropped when it arrived; ``"superseded"``: kept until ``duplicate_of_url``
    replaced it under the keep policy (store/supersede.py)."""

    @property
    def superseded(self) -> bool:
        """True for a page that was kept, then replaced by the copy its cluster's hints name."""
        return self.kind == "superseded"

    @property
    def confirmed_canonical(self) -> bool:
        """True when the page it copies is the canonical it declared: the content check
        confirmed the hint (a training pair for URL rules: :class:`CanonicalPair`)."""
        return self.canonical_url is not None and self.canonical_url == self.duplicate_of_url


@dataclass(frozen=True, slots=True)
class Supersession:
    """A kept page replaced by a copy under the keep policy (``FingerprintStore.supersede``)."""

    old_url: str
    """The page that was kept (now a ``superseded`` row of ``duplicates``)."""
    new_url: str
    """The copy kept in its place."""
    old_page_id: int
    new_page_id: int
    distance: int
    similarity: float | None = None


@dataclass(frozen=True, slots=True)
class CanonicalPair:
    """A confirmed canonical: ``variant_url`` declared ``canonical_url`` its canonical, and
    the content check called it a copy of that page (``FingerprintStore.canonical_pairs``)."""

    variant_url: str
    canonical_url: str
    domain: str
    seen_at: datetime
    superseded: bool = False
    """True when the variant had been kept first and the canonical replaced it."""


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts and settings of one database."""

    pages: int
    duplicates: int
    spec: str
    bits: int
    max_distance: int
    blocks: int
    tables: int
    schema_version: int
    extra: dict[str, str] = field(default_factory=dict)
    dropped_pages: int = 0
    """Distinct URLs dropped as near-duplicates and not kept now (``duplicates`` counts
    every drop: a URL dropped on each of three crawls is 3 drops, 1 dropped page)."""
