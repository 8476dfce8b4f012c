"""What the commands share: errors, the database, times, spec checks, record rows."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from simhash_filter.cli.errors import CommandError, UsageError
from simhash_filter.cli.output import Column, Output, Record, hex64, iso_time
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, spec_difference
from simhash_filter.store.engine import error_reason, first_line
from simhash_filter.store.records import (
    DuplicateRecord,
    PageRecord,
    SchemeMismatchError,
    StoreError,
)
from simhash_filter.store.urls import database_url, display_url, redact

# re-exported: the one way the CLI prints a database URL, and the errors every command raises
__all__ = ["CommandError", "UsageError", "database_url", "display_url"]


# --- database and errors ---------------------------------------------------------------


@contextmanager
def existing_store(
    args: argparse.Namespace, *, convert: bool = False
) -> Iterator[FingerprintStore]:
    """The database named by ``--db``; never creates one (DatabaseNotFoundError).
    ``convert``: one of an older schema too (``reindex`` converts it)."""
    store = FingerprintStore.open_existing(database_url(args.db), convert=convert)
    try:
        yield store
    finally:
        store.close()


def describe_error(exc: BaseException, db: str | None) -> str:
    """A one-line message for an error, with every credential of the database URL
    (password, secret-like query parameters) masked."""
    if isinstance(exc, StoreError | CommandError):
        message = str(exc)
    elif isinstance(exc, SQLAlchemyError):
        message = f"database error: {error_reason(exc)}"
    elif isinstance(exc, OSError) and exc.strerror:
        message = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    elif isinstance(exc, ValueError | UnicodeError):
        message = str(exc)
    else:
        message = f"{type(exc).__name__}: {exc} (--debug shows the traceback)"
    message = first_line(message)
    return redact(message, database_url(db)) if db else message


def fingerprinter_for(spec: str | None, **options: Any) -> Fingerprinter:
    """The Fingerprinter to compare texts with a database made under ``spec``.

    The command line builds the default Fingerprinter (``import`` with its ``--weighting``,
    ``--top-n``, ``--segmenter``: ``options``); a database made under another spec (other
    options or another version) cannot be compared with: say what differs.
    """
    fingerprinter = Fingerprinter(**options)
    if spec is not None and spec != fingerprinter.spec:
        raise SchemeMismatchError(
            "the database's fingerprints were made under another spec than this "
            f"simhash-filter's {'options' if options else 'defaults'} "
            f"({spec_difference(spec, fingerprinter.spec)}); "
            "texts cannot be compared with it: re-import the corpus into a new database"
        )
    return fingerprinter


def check_k(store: FingerprintStore, k: int | None) -> int:
    """``--k``, defaulting to the database's max_distance, which it may not exceed (the
    index finds nothing farther): the error names the ``reindex`` that widens it."""
    limit = store.scheme.max_distance
    if k is None:
        return limit
    if k > limit:
        raise CommandError(
            f"k={k} is beyond the index's max_distance={limit}: "
            f"run `simhash-filter reindex --max-distance {k} --db "
            f"{shlex.quote(store.display_url)}` first"
        )
    return k


def shown_similarity(value: float | None) -> float | None:
    """A sketch similarity as the CLI prints it (3 decimals; None: no sketch to compare)."""
    return None if value is None else round(value, 3)


def similarity_of(
    rule: MatchRule | None, query: bytes | None, stored: bytes | None
) -> float | None:
    """The second signatures' similarity estimate of two pages (None unless both have
    one), as the database's match rule (or the default one) computes it."""
    if query is None or stored is None:
        return None
    return shown_similarity((rule or MatchRule()).verify(query, stored).similarity)


SIMILARITY_MEASURE = "the sketches' estimate of the 5-grams the texts share"
"""What ``similarity`` is, wherever it is shown: the match rule's own measure."""
SIMILARITY = Column("similarity", "similarity", right=True, optional=True)
"""The second distance: the sketches' similarity (a table without any leaves it out)."""


def duplicate_row(record: DuplicateRecord) -> Record:
    """A drop as the commands show it; a superseded page (docs/keep.md) has ``kind`` and
    ``superseded``, a page that declared a canonical URL ``canonical`` (schema 5: rows
    without them read exactly as before)."""
    return {
        "url": record.url,
        "fingerprint": hex64(record.fingerprint),
        "duplicate_of": record.duplicate_of_url,
        "duplicate_of_fingerprint": hex64(record.duplicate_of_fingerprint),
        "distance": record.distance,
        "similarity": shown_similarity(record.similarity),
        "seen_at": iso_time(record.seen_at),
        **({"kind": "superseded", "superseded": "superseded"} if record.superseded else {}),
        **({"canonical": record.canonical_url} if record.canonical_url else {}),
    }


def page_fields(page: PageRecord) -> dict[str, Any]:
    return {
        "url": page.url,
        "fingerprint": hex64(page.fingerprint),
        "text_length": page.text_length,
        "first_seen": iso_time(page.first_seen),
        "last_seen": iso_time(page.last_seen),
        **({"canonical": page.canonical_url} if page.canonical_url else {}),
    }


def limited(rows: Iterable[Record], limit: int, out: Output, what: str) -> Iterator[Record]:
    """At most ``limit`` rows (0: all); a note on stderr when more were there."""
    for count, row in enumerate(rows):
        if limit and count == limit:
            out.note(f"(showing the first {limit} {what}; --limit 0 shows all)")
            return
        yield row
