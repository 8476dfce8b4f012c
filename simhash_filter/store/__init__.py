"""The fingerprint store: every SQL statement of simhash-filter lives in this package.

from simhash_filter.store import FingerprintStore, StoreOptions
store = FingerprintStore.open("sqlite:///dedup.db", StoreOptions(spec=fingerprinter.spec))
verdict = store.check_and_add(url, fingerprint, text_length=len(text))
"""

from __future__ import annotations

from simhash_filter.urls.key import canonical_url, url_domain

from .fingerprint_store import FingerprintStore
from .meta import spec_difference
from .opening import StoreOptions
from .page_store import PageStore
from .records import (
    DatabaseNotFoundError,
    DuplicateRecord,
    Match,
    PageRecord,
    PageRow,
    SchemeMismatchError,
    StoreBusy,
    StoreError,
    StoreStats,
    StoreUnavailable,
    Verdict,
    VerdictKind,
)

__all__ = [
    "DatabaseNotFoundError",
    "DuplicateRecord",
    "FingerprintStore",
    "Match",
    "PageRecord",
    "PageRow",
    "PageStore",
    "SchemeMismatchError",
    "StoreBusy",
    "StoreError",
    "StoreOptions",
    "StoreStats",
    "StoreUnavailable",
    "Verdict",
    "VerdictKind",
    "canonical_url",
    "spec_difference",
    "url_domain",
]
