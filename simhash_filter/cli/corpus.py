"""Commands that move pages in and out: ``import``, ``export``, and ``reindex``.

``import`` goes through the store's ``add_many`` (the crawl's check-and-add, batched),
extraction and fingerprinting optionally in worker processes; nothing here writes SQL.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from simhash_filter.bands import DEFAULT_MAX_DISTANCE, default_blocks
from simhash_filter.cli.common import (
    CommandError,
    database_url,
    duplicate_row,
    existing_store,
    fingerprinter_for,
    page_fields,
)
from simhash_filter.cli.output import Fields, Output, Record, json_line
from simhash_filter.fingerprint import Fingerprinter
from simhash_filter.importers import ReaderOptions, detect_format, read_sources, record_text
from simhash_filter.store import FingerprintStore, reports
from simhash_filter.store.records import DatabaseNotFoundError, VerdictKind

if TYPE_CHECKING:
    from simhash_filter.importers import Record as SourceRecord

# --- import ----------------------------------------------------------------------------

_WORKER: Fingerprinter | None = None


def _init_worker() -> None:
    global _WORKER
    _WORKER = Fingerprinter()


Fingerprinted = tuple[str, int | None, int, str | None]  # url, fingerprint, length, error


def _fingerprint_record(fingerprinter: Fingerprinter, record: SourceRecord) -> Fingerprinted:
    try:
        text = record_text(record)
    except Exception as exc:  # one bad page must not stop an import
        return record.url, None, 0, f"{record.origin}: {type(exc).__name__}: {exc}"
    if not text:
        return record.url, None, 0, None
    return record.url, fingerprinter.fingerprint(text), len(text), None


def _work(records: list[SourceRecord]) -> list[Fingerprinted]:
    assert _WORKER is not None
    return [_fingerprint_record(_WORKER, record) for record in records]


def _chunks(items: Iterable[SourceRecord], size: int) -> Iterator[list[SourceRecord]]:
    chunk: list[SourceRecord] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _fingerprinted(
    records: Iterable[SourceRecord], fingerprinter: Fingerprinter, jobs: int
) -> Iterator[Fingerprinted]:
    """Extract and fingerprint in order; with ``jobs`` > 1 in a bounded process pool."""
    if jobs == 1:
        for record in records:
            yield _fingerprint_record(fingerprinter, record)
        return
    chunk_size, window = 16, 4 * jobs
    with ProcessPoolExecutor(jobs, initializer=_init_worker) as pool:
        pending: list[Future[list[Fingerprinted]]] = []
        for chunk in _chunks(records, chunk_size):
            pending.append(pool.submit(_work, chunk))
            if len(pending) >= window:
                yield from pending.pop(0).result()
        for future in pending:
            yield from future.result()


class _Progress:
    """A progress line on stderr, rewritten in place (only on a terminal)."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.started = time.monotonic()
        self.last = 0.0

    def update(self, counts: Counter[str], *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        rate = counts["read"] / max(now - self.started, 1e-9)
        self.stream.write(
            f"\rread {counts['read']} · kept {counts['kept']} · dropped {counts['dropped']}"
            f" · unchanged {counts['unchanged']} · changed {counts['changed']}"
            f" · no text {counts['no_text']} · {rate:.0f}/s "
        )
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\n")


_VERDICT_COUNTS = {
    VerdictKind.NEW: "kept",
    VerdictKind.DUPLICATE: "dropped",
    VerdictKind.UNCHANGED: "unchanged",
    VerdictKind.CHANGED: "changed",
}
_SKIP_NOTES = 10


def _open_for_import(args: argparse.Namespace) -> FingerprintStore:
    """The database to import into: made with ``--max-distance``/``--blocks`` when it is
    not there; an existing one keeps its scheme unless they ask for another (then the
    store refuses and says how to reindex)."""
    url = database_url(args.db)
    try:
        existing: FingerprintStore | None = FingerprintStore.open_existing(url)
    except DatabaseNotFoundError:
        existing = None
    if existing is not None:
        if args.max_distance is None and args.blocks is None:
            return existing
        existing.close()
    k = args.max_distance
    if k is None:
        k = existing.scheme.max_distance if existing is not None else DEFAULT_MAX_DISTANCE
    return FingerprintStore.open(
        url, spec=Fingerprinter().spec, max_distance=k, blocks=args.blocks, create=True
    )


def import_(args: argparse.Namespace, out: Output) -> int:
    """``import``: add a corpus through the store's check-and-add, in batches."""
    options = ReaderOptions(
        format=None if args.format == "auto" else args.format,
        url_field=args.url_field,
        text_field=args.text_field,
        html_field=args.html_field,
        base_url=args.base_url,
    )
    counts: Counter[str] = Counter()

    def skip(message: str) -> None:
        counts["skipped"] += 1
        if counts["skipped"] <= _SKIP_NOTES:
            out.note(f"skipped {message}")

    for source in args.sources:  # before a database is made for nothing
        if source != "-" and not Path(source).exists():
            raise CommandError(f"{source}: no such file or folder")
        if options.format is None:
            detect_format(source)
    store = _open_for_import(args)
    started = time.monotonic()
    progress = _Progress(out.stderr, not args.no_progress)
    try:
        fingerprinter = fingerprinter_for(store.spec)
        batch: list[tuple[str, int, int]] = []

        def flush() -> None:
            for verdict in store.add_many(batch, batch_size=args.batch_size):
                counts[_VERDICT_COUNTS[verdict.kind]] += 1
            batch.clear()
            progress.update(counts, force=True)

        records = read_sources(args.sources, options, on_skip=skip)
        for url, fp, length, error in _fingerprinted(records, fingerprinter, args.jobs):
            counts["read"] += 1
            if error is not None:
                skip(error)
            elif fp is None:
                counts["no_text"] += 1
            else:
                batch.append((url, fp, length))
                if len(batch) >= args.batch_size:
                    flush()
            progress.update(counts)
        if batch:
            flush()
    finally:
        progress.done()
        store.close()
    if counts["skipped"] > _SKIP_NOTES:
        out.note(f"({counts['skipped'] - _SKIP_NOTES} more skipped records not shown)")
    seconds = time.monotonic() - started
    keys = ("read", "kept", "dropped", "unchanged", "changed", "no_text", "skipped")
    document: dict[str, Any] = {key: counts[key] for key in keys}
    document["seconds"] = round(seconds, 3)
    out.document(
        document,
        [
            Fields(
                [
                    ("read", counts["read"]),
                    ("kept", counts["kept"]),
                    ("dropped (near-duplicates)", counts["dropped"]),
                    ("unchanged (already in)", counts["unchanged"]),
                    ("changed (new version)", counts["changed"]),
                    ("no text (too short)", counts["no_text"]),
                    ("skipped (unreadable)", counts["skipped"]),
                ]
            )
        ],
    )
    return 0


# --- export ----------------------------------------------------------------------------

PAGE_FIELDS = ("url", "fingerprint", "text_length", "first_seen", "last_seen")
DUPLICATE_FIELDS = ("url", "fingerprint", "duplicate_of", "distance", "seen_at")


def _export_rows(store: FingerprintStore, pages: bool, duplicates: bool) -> Iterator[Record]:
    if pages:
        for page in reports.iter_pages(store):
            yield {"kind": "page", **page_fields(page)}
    if duplicates:
        for record in store.duplicates():
            row = duplicate_row(record)
            yield {"kind": "duplicate", **{key: row[key] for key in DUPLICATE_FIELDS}}


def export(args: argparse.Namespace, out: Output) -> int:
    """``export``: kept pages and/or dropped pages as JSON Lines or CSV."""

    pages = args.pages or not args.duplicates
    duplicates = args.duplicates or not args.pages
    fmt = args.format or (
        "csv" if args.output and args.output.lower().endswith(".csv") else "jsonl"
    )
    columns = ["kind"] if pages and duplicates else []
    columns += dict.fromkeys(
        [*(PAGE_FIELDS if pages else ()), *(DUPLICATE_FIELDS if duplicates else ())]
    )
    counts: Counter[str] = Counter()
    with existing_store(args) as store, ExitStack() as stack:
        target: IO[str] = out.stdout
        if args.output:
            target = stack.enter_context(open(args.output, "w", encoding="utf-8", newline=""))
        rows = _export_rows(store, pages, duplicates)
        if fmt == "csv":
            writer = csv.DictWriter(target, columns, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
                counts[row["kind"]] += 1
        else:
            for row in rows:
                target.write(json_line(row) + "\n")
                counts[row["kind"]] += 1
    where = args.output or "stdout"
    out.note(f"exported {counts['page']} pages and {counts['duplicate']} duplicates to {where}")
    return 0


# --- reindex ---------------------------------------------------------------------------


def reindex(args: argparse.Namespace, out: Output) -> int:
    """``reindex``: rebuild the band rows for another scheme (blocks b, distance k)."""
    with existing_store(args) as store:
        before = store.scheme
        k = before.max_distance if args.max_distance is None else args.max_distance
        blocks = default_blocks(k) if args.blocks is None else args.blocks
        started = time.monotonic()
        store.reindex(blocks=blocks, max_distance=k)
        seconds = time.monotonic() - started
        after = store.scheme
        pages = store.stats().pages
    document = {
        "before": {
            "max_distance": before.max_distance,
            "blocks": before.n_blocks,
            "tables": before.n_tables,
        },
        "after": {
            "max_distance": after.max_distance,
            "blocks": after.n_blocks,
            "tables": after.n_tables,
        },
        "pages": pages,
        "seconds": round(seconds, 3),
    }
    out.document(
        document,
        [
            Fields(
                [
                    (
                        "before",
                        f"k={before.max_distance} blocks={before.n_blocks} "
                        f"tables={before.n_tables}",
                    ),
                    (
                        "after",
                        f"k={after.max_distance} blocks={after.n_blocks} tables={after.n_tables}",
                    ),
                    ("pages", pages),
                ]
            )
        ],
    )
    return 0
