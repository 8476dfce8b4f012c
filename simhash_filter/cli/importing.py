"""``import``: add a corpus through the store's ``add_many`` (the crawl's check-and-add,
batched), extraction and fingerprinting optionally in worker processes.

What it promises on bad input: every readable record is imported; a bad line or record
is skipped and named (file, line or offset, reason); a source that cannot be read on (a
truncated or corrupt archive) keeps what was complete and says where it stopped, and
the next source is read; a source that is not what its name says is refused before a
database is made for it; Ctrl-C commits the batch in hand. The summary says read, kept,
dropped and skipped for every source, also after Ctrl-C and errors. Nothing here writes
SQL.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from simhash_filter.bands import LSH_CANDIDATE_DISTANCE, default_index, make_scheme
from simhash_filter.cli.common import CommandError, UsageError, database_url, fingerprinter_for
from simhash_filter.cli.output import Column, Fields, Output, Section, Table
from simhash_filter.extract import DEFAULT_MAX_BYTES
from simhash_filter.fingerprint import Fingerprinter
from simhash_filter.importers import ReaderOptions, SourceError, check_source, read_source
from simhash_filter.pagework import sign_page
from simhash_filter.signature import MatchRule
from simhash_filter.store import FingerprintStore
from simhash_filter.store.engine import display_url, foreign_tables, parse_url
from simhash_filter.store.records import DatabaseNotFoundError, PageRow, VerdictKind

if TYPE_CHECKING:
    from simhash_filter.importers import Record as SourceRecord

PROG = "simhash-filter"
COUNTS = ("read", "kept", "dropped", "unchanged", "changed", "no_text", "skipped")
_VERDICT_COUNTS = {
    VerdictKind.NEW: "kept",
    VerdictKind.DUPLICATE: "dropped",
    VerdictKind.UNCHANGED: "unchanged",
    VerdictKind.CHANGED: "changed",
}
_SKIP_NOTES = 10

# --- extraction and fingerprinting, in order, optionally in worker processes -----------


class Fingerprinted(NamedTuple):
    """One record after extraction: its fingerprint, or why it has none."""

    url: str
    fingerprint: int | None  # None: no text (too short), or the record failed (error)
    text_length: int
    error: str | None  # why the record could not be extracted: it is skipped
    sketch: bytes | None = None  # the second signature, stored with the page
    stored_text: bytes | None = None  # the packed main text (--store-text)


_WORKER: Fingerprinter | None = None


def _init_worker() -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent decides, the workers finish
    # their chunk instead of dying with a traceback (see _pool for the start-up).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = Fingerprinter()


def _fingerprint_record(
    fingerprinter: Fingerprinter, record: SourceRecord, keep_text: bool = False
) -> Fingerprinted:
    """The crawl's own page work (:func:`~simhash_filter.pagework.sign_page`) on a record."""
    text, html = (None, record.body) if record.is_html else (record.body, None)
    try:
        signature = sign_page(
            fingerprinter,
            record.url,
            text,
            html,
            max_bytes=DEFAULT_MAX_BYTES,
            keep_text=keep_text,
        )
    except Exception as exc:  # one bad page must not stop an import
        return Fingerprinted(record.url, None, 0, f"{record.origin}: {type(exc).__name__}: {exc}")
    if signature is None:
        return Fingerprinted(record.url, None, 0, None)
    return Fingerprinted(
        record.url,
        signature.fingerprint,
        signature.text_length,
        None,
        signature.sketch,
        signature.stored_text,
    )


def _work(records: list[SourceRecord], keep_text: bool) -> list[Fingerprinted]:
    assert _WORKER is not None
    return [_fingerprint_record(_WORKER, record, keep_text) for record in records]


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
    records: Iterable[SourceRecord],
    fingerprinter: Fingerprinter,
    pool: ProcessPoolExecutor | None,
    jobs: int,
    keep_text: bool = False,
) -> Iterator[Fingerprinted]:
    """Extract and fingerprint in order; with a pool, a bounded window of chunks in it.

    When reading the records fails (a SourceError) or is interrupted (Ctrl-C), the
    chunks already in the pool are yielded first.
    """
    if pool is None:
        for record in records:
            yield _fingerprint_record(fingerprinter, record, keep_text)
        return
    chunk_size, window = 16, 4 * jobs
    pending: list[Future[list[Fingerprinted]]] = []
    try:
        for chunk in _chunks(records, chunk_size):
            pending.append(pool.submit(_work, chunk, keep_text))
            if len(pending) >= window:
                yield from pending.pop(0).result()
    except (SourceError, KeyboardInterrupt):
        for future in pending:
            yield from future.result()
        raise
    for future in pending:
        yield from future.result()


@contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _pool(jobs: int) -> Iterator[ProcessPoolExecutor | None]:
    if jobs == 1:
        yield None
        return
    with _ctrl_c_ignored():  # workers started now inherit it: none dies starting up
        pool = ProcessPoolExecutor(jobs, initializer=_init_worker)
        pool.submit(int).result()  # (starts the workers)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# --- what happened to each source ------------------------------------------------------


@dataclass(slots=True)
class SourceTally:
    """The counts of one source, and how its reading ended."""

    source: str
    counts: Counter[str] = field(default_factory=Counter)
    status: str = "not read"  # complete, stopped, unreadable, interrupted, failed, not read
    error: str | None = None  # the one-line reason when it was stopped or unreadable

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {"source": self.source}
        found.update((key, self.counts[key]) for key in COUNTS)
        found["status"] = self.status
        if self.error is not None:
            found["error"] = self.error
        return found


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


@contextmanager
def _whole_batches() -> Iterator[None]:
    """Ctrl-C while a batch is written takes effect once it is committed, so a batch is
    never half-counted (signal handlers can only be set in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


# --- the database ----------------------------------------------------------------------


def _open_for_import(args: argparse.Namespace) -> FingerprintStore:
    """The database to import into: made with ``--max-distance``/``--blocks`` when it is
    not there; an existing one keeps its scheme unless they ask for another (then the
    store refuses and says how to reindex). A database that holds other tables and no
    simhash-filter index is left alone unless ``--create`` says to add ours to it."""
    url = database_url(args.db)
    try:
        existing: FingerprintStore | None = FingerprintStore.open_existing(url)
    except DatabaseNotFoundError:
        existing = None
    if existing is None and not args.create:
        tables = foreign_tables(parse_url(url))
        if tables:
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            raise CommandError(
                f"{display_url(url)} is not a simhash-filter database (it holds table(s) "
                f"{shown}); nothing was written to it. Name another database with --db, "
                "or pass --create to add simhash-filter's tables to this one"
            )
    if existing is not None:
        if args.max_distance is None and args.blocks is None:
            return existing
        existing.close()
    if existing is not None:  # a scheme other than its own: the store refuses, saying how
        k = existing.scheme.max_distance if args.max_distance is None else args.max_distance
        rule = existing.rule
    else:  # a new database gets the crawl's match rule, with --max-distance as its k1
        k1 = LSH_CANDIDATE_DISTANCE if args.max_distance is None else args.max_distance
        rule = MatchRule.for_distance(k1)
        k = rule.max_distance
    kind = existing.scheme.kind if existing else default_index(k, sketches=True)
    try:
        make_scheme(kind, max_distance=k, blocks=args.blocks)
    except ValueError as exc:  # --blocks and --max-distance do not fit together
        raise UsageError(str(exc)) from None
    return FingerprintStore.open(
        url,
        spec=Fingerprinter().spec,
        max_distance=k,
        blocks=args.blocks,
        create=True,
        rule=rule,
    )


# --- the command -----------------------------------------------------------------------


class _Pending(NamedTuple):
    tally: SourceTally
    row: PageRow


class _Import:
    """One run of ``import``: the counts, the batch in hand, and the notes."""

    def __init__(self, args: argparse.Namespace, out: Output) -> None:
        self.args = args
        self.out = out
        self.tallies = [SourceTally(source) for source in args.sources]
        self.totals: Counter[str] = Counter()
        self.batch: list[_Pending] = []
        self.progress = _Progress(out.stderr, not args.no_progress)
        self.interrupted = False

    def count(self, tally: SourceTally, key: str) -> None:
        tally.counts[key] += 1
        self.totals[key] += 1

    def skip(self, tally: SourceTally, message: str) -> None:
        self.count(tally, "skipped")
        if self.totals["skipped"] <= _SKIP_NOTES:
            self.out.note(f"skipped {message}")

    def stop(self, tally: SourceTally, status: str, exc: Exception) -> None:
        tally.status, tally.error = status, str(exc)
        self.out.note(f"{PROG}: error: {exc}")

    def flush(self, store: FingerprintStore) -> None:
        if not self.batch:
            return
        with _whole_batches():
            verdicts = store.add_many(
                [pending.row for pending in self.batch], batch_size=self.args.batch_size
            )
            for pending, verdict in zip(self.batch, verdicts, strict=True):
                self.count(pending.tally, _VERDICT_COUNTS[verdict.kind])
            self.batch.clear()
        self.progress.update(self.totals, force=True)

    def read(self, store: FingerprintStore, options: ReaderOptions) -> None:
        fingerprinter = fingerprinter_for(store.spec)
        with _pool(self.args.jobs) as pool:
            for tally in self.tallies:
                if tally.status != "not read":
                    continue  # refused before the database was opened
                tally.status = "interrupted"  # until it is read to the end
                records = read_source(tally.source, options, on_skip=partial(self.skip, tally))
                try:
                    results = _fingerprinted(
                        records, fingerprinter, pool, self.args.jobs, self.args.store_text
                    )
                    for result in results:
                        self.add(store, tally, result)
                except SourceError as exc:
                    self.stop(tally, "stopped", exc)
                except Exception:  # the database, say: main() prints the error
                    tally.status = "failed"
                    raise
                else:
                    tally.status = "complete"
        self.flush(store)

    def add(self, store: FingerprintStore, tally: SourceTally, result: Fingerprinted) -> None:
        self.count(tally, "read")
        if result.error is not None:
            self.skip(tally, result.error)
        elif result.fingerprint is None:
            self.count(tally, "no_text")
        else:
            row = PageRow(
                result.url,
                result.fingerprint,
                result.text_length,
                result.sketch,
                result.stored_text,
            )
            self.batch.append(_Pending(tally, row))
            if len(self.batch) >= self.args.batch_size:
                self.flush(store)
        self.progress.update(self.totals)

    def summary(self, seconds: float) -> None:
        if self.totals["skipped"] > _SKIP_NOTES:
            self.out.note(
                f"({self.totals['skipped'] - _SKIP_NOTES} more skipped records not shown)"
            )
        document: dict[str, Any] = {key: self.totals[key] for key in COUNTS}
        document["seconds"] = round(seconds, 3)
        document["sources"] = [tally.document() for tally in self.tallies]
        if self.interrupted:
            document["interrupted"] = True
        sections: list[Section] = [
            Fields(
                [
                    ("read", self.totals["read"]),
                    ("kept", self.totals["kept"]),
                    ("dropped (near-duplicates)", self.totals["dropped"]),
                    ("unchanged (already in)", self.totals["unchanged"]),
                    ("changed (new version)", self.totals["changed"]),
                    ("no text (too short)", self.totals["no_text"]),
                    ("skipped (unreadable)", self.totals["skipped"]),
                ]
            )
        ]
        if len(self.tallies) > 1 or any(t.status != "complete" for t in self.tallies):
            sections.append(
                Table(
                    [
                        Column("source", "source"),
                        *(Column(key, key.replace("_", " "), right=True) for key in COUNTS),
                        Column("status", "status"),
                    ],
                    document["sources"],
                    title="per source",
                )
            )
        self.out.document(document, sections)


def import_(args: argparse.Namespace, out: Output) -> int:
    """``import``: add a corpus through the store's check-and-add, in batches."""
    options = ReaderOptions(
        format=None if args.format == "auto" else args.format,
        url_field=args.url_field,
        text_field=args.text_field,
        html_field=args.html_field,
        base_url=args.base_url,
    )
    run = _Import(args, out)
    for tally in run.tallies:  # before a database is made for nothing
        if tally.source != "-" and not Path(tally.source).exists():
            raise CommandError(f"{tally.source}: no such file or folder")
        try:
            check_source(tally.source, options)
        except SourceError as exc:
            run.stop(tally, "unreadable", exc)
    if all(tally.status == "unreadable" for tally in run.tallies):
        return 1  # nothing to import: no database is made or touched
    store = _open_for_import(args)
    started = time.monotonic()
    try:
        run.read(store, options)
    except KeyboardInterrupt:
        run.interrupted = True
        with suppress(KeyboardInterrupt):  # (a second Ctrl-C comes after the commit)
            run.flush(store)  # what was read and fingerprinted is kept
    except BaseException:
        run.progress.done()
        store.close()
        if run.totals["read"]:
            run.summary(time.monotonic() - started)  # what was committed before the error
        raise
    run.progress.done()
    store.close()
    run.summary(time.monotonic() - started)
    if run.interrupted:
        out.note(f"{PROG}: interrupted: the counts above were committed")
        return 130
    return 1 if any(tally.status != "complete" for tally in run.tallies) else 0
