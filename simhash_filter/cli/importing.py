"""``import``: add a corpus through the store's ``add_many`` (the crawl's check-and-add,
batched), the page work (extraction and fingerprinting) in this process or, with
``--jobs N``, in the crawl's page pool (:class:`~simhash_filter.page.pool.PagePool`).

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
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from simhash_filter.cli import options
from simhash_filter.cli.command import command, option
from simhash_filter.cli.common import CommandError, UsageError, database_url, fingerprinter_for
from simhash_filter.cli.importers import ReaderOptions, SourceError, check_source, read_source
from simhash_filter.cli.output import Column, Fields, Output, Section, Table
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.segment import DEFAULT_SEGMENTER, SEGMENTERS
from simhash_filter.index.defaults import (
    IndexChoice,
    IndexSettings,
    changed_settings,
    index_settings,
)
from simhash_filter.index.schemes import LSH_CANDIDATE_DISTANCE
from simhash_filter.page.extract import DEFAULT_MAX_BYTES
from simhash_filter.page.pool import (
    DEFAULT_PAGE_TIMEOUT,
    PageFailed,
    PagePool,
    PageResult,
    PageWorkError,
)
from simhash_filter.page.work import work_job
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.engine import display_url, foreign_tables, parse_url
from simhash_filter.store.records import DatabaseNotFoundError, PageRow, VerdictKind

if TYPE_CHECKING:
    from simhash_filter.cli.importers import Record as SourceRecord
    from simhash_filter.core.signature import PageSignature

PROG = "simhash-filter"
COUNTS = ("read", "kept", "dropped", "unchanged", "changed", "no_text", "skipped")
_IMPORTED = ("kept", "dropped", "unchanged", "changed", "no_text")  # records read through
_VERDICT_COUNTS = {
    VerdictKind.NEW: "kept",
    VerdictKind.DUPLICATE: "dropped",
    VerdictKind.UNCHANGED: "unchanged",
    VerdictKind.CHANGED: "changed",
}
_SKIP_NOTES = 10
_PAGES_IN_POOL = 64
"""Pages handed to the page pool ahead of the one awaited, per worker."""

# --- the page work, in order: in this process, or in the page pool ----------------------


class Fingerprinted(NamedTuple):
    """One record after the page work: its fingerprint, or why it has none."""

    url: str
    fingerprint: int | None  # None: no text (too short), or the record failed (error)
    text_length: int
    error: str | None  # why the record could not be extracted: it is skipped
    sketch: bytes | None = None  # the second signature, stored with the page
    stored_text: bytes | None = None  # the packed main text (--store-text)


def _signed(record: SourceRecord, signature: PageSignature | None) -> Fingerprinted:
    if signature is None or signature.exact:  # too little text: no text (not keyed on import)
        return Fingerprinted(record.url, None, 0, None)
    return Fingerprinted(
        record.url,
        signature.fingerprint,
        signature.text_length,
        None,
        signature.sketch,
        signature.stored_text,
    )


def _failed(record: SourceRecord, reason: str) -> Fingerprinted:
    return Fingerprinted(record.url, None, 0, f"{record.origin}: {reason}")


def _work_here(
    fingerprinter: Fingerprinter, record: SourceRecord, keep_text: bool
) -> Fingerprinted:
    try:
        work = work_job(fingerprinter, record.page_job(keep_text), max_bytes=DEFAULT_MAX_BYTES)
    except Exception as exc:  # one bad page must not stop an import
        return _failed(record, f"{type(exc).__name__}: {exc}")
    return _signed(record, work.signature)


def _answer(record: SourceRecord, future: Future[PageResult]) -> Fingerprinted:
    try:
        result = future.result()
    except PageWorkError as exc:  # the page failed, or its worker died or timed out
        return _failed(record, exc.reason if isinstance(exc, PageFailed) else str(exc))
    return _signed(record, result.signature)


def _fingerprinted(
    records: Iterable[SourceRecord],
    fingerprinter: Fingerprinter,
    pool: _LazyPool | None,
    keep_text: bool = False,
) -> Iterator[Fingerprinted]:
    """The page work on each record, in order; with a pool, a bounded window of pages in
    it. When reading the records fails (a SourceError) or is interrupted (Ctrl-C), the
    pages already in the pool are yielded first."""
    if pool is None:
        for record in records:
            yield _work_here(fingerprinter, record, keep_text)
        return
    window = _PAGES_IN_POOL * pool.size
    pending: deque[tuple[SourceRecord, Future[PageResult]]] = deque()
    try:
        for record in records:
            pending.append((record, pool.started().submit(record.page_job(keep_text))))
            if len(pending) >= window:
                yield _answer(*pending[0])
                pending.popleft()
    except (SourceError, KeyboardInterrupt):
        while pending:
            yield _answer(*pending.popleft())
        raise
    while pending:
        yield _answer(*pending.popleft())


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


class _LazyPool:
    """The crawl's page pool, started when the first page needs it: an input with no
    records starts no worker (each is an interpreter that loads trafilatura and jieba)."""

    def __init__(self, size: int, fingerprinter: Fingerprinter) -> None:
        self.size = size
        self._fingerprinter = fingerprinter
        self._pool: PagePool | None = None

    def started(self) -> PagePool:
        if self._pool is None:
            pool = PagePool(
                self.size,
                self._fingerprinter,
                max_bytes=DEFAULT_MAX_BYTES,
                page_timeout=DEFAULT_PAGE_TIMEOUT,
            )
            # Ctrl-C reaches the whole process group: the workers, started with it ignored,
            # never die of it while they start (then they ignore it themselves).
            with _ctrl_c_ignored():
                pool.start()
            self._pool = pool
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


@contextmanager
def _page_pool(jobs: int, fingerprinter: Fingerprinter) -> Iterator[_LazyPool | None]:
    """The page pool with ``jobs`` workers, or None (``--jobs 1``: in this process)."""
    if jobs == 1:
        yield None
        return
    pool = _LazyPool(jobs, fingerprinter)
    try:
        yield pool
    finally:
        pool.close()


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


def _fingerprint_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--weighting``, ``--top-n``, ``--segmenter``: the crawl's ``WEIGHTING``, ``TOP_N``
    and ``SEGMENTER`` (what a database refused for other ones names)."""
    named = {"weighting": args.weighting, "top_n": args.top_n, "segmenter": args.segmenter}
    return {key: value for key, value in named.items() if value is not None}


def _fingerprinter(args: argparse.Namespace) -> Fingerprinter:
    try:
        return Fingerprinter(**_fingerprint_options(args))
    except ValueError as exc:  # a top-n with tfidf, say: argparse checked each alone
        raise UsageError(str(exc)) from None


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
    if existing is None:  # a new database: the crawl's defaults, with --max-distance as k1
        choice = IndexChoice(max_distance=args.max_distance, blocks=args.blocks)
        try:
            made = index_settings(choice)
        except ValueError as exc:  # --blocks and --max-distance do not fit together
            raise UsageError(str(exc)) from None
        return FingerprintStore.open(
            url,
            StoreOptions(
                spec=_fingerprinter(args).spec,
                max_distance=made.max_distance,
                blocks=args.blocks,
                rule=made.rule,
            ),
        )
    if args.max_distance is None and args.blocks is None:
        return existing
    existing.close()  # a scheme other than its own: the store refuses, saying how
    current = IndexSettings(existing.scheme, existing.database_rule)
    try:
        wanted = changed_settings(current, IndexChoice(None, args.max_distance, args.blocks))
    except ValueError as exc:  # --blocks and --max-distance do not fit together
        raise UsageError(str(exc)) from None
    return FingerprintStore.open(
        url,
        StoreOptions(
            spec=_fingerprinter(args).spec,
            max_distance=wanted.max_distance,
            blocks=args.blocks,
            rule=wanted.rule,
        ),
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
        fingerprinter = fingerprinter_for(store.spec, **_fingerprint_options(self.args))
        with _page_pool(self.args.jobs, fingerprinter) as pool:
            for tally in self.tallies:
                if tally.status != "not read":
                    continue  # refused before the database was opened
                tally.status = "interrupted"  # until it is read to the end
                records = read_source(tally.source, options, on_skip=partial(self.skip, tally))
                try:
                    results = _fingerprinted(records, fingerprinter, pool, self.args.store_text)
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


@command("import")
@option(
    "sources",
    nargs="+",
    metavar="SOURCE",
    help="*.jsonl[.gz] (url + text or html), a folder or *.html files, *.warc[.gz], "
    "or - for JSON Lines on stdin",
)
@option("--format", choices=("auto", "jsonl", "html", "warc"), default="auto", help="source format")
@option("--url-field", default="url", metavar="NAME", help="JSON field of the URL")
@option("--text-field", default="text", metavar="NAME", help="JSON field of the text")
@option("--html-field", default="html", metavar="NAME", help="JSON field of the HTML")
@option(
    "--base-url",
    metavar="URL",
    help="URL of an HTML folder's root (default: the files' file:// URIs)",
)
@option(
    "--max-distance",
    type=options.max_distance,
    metavar="K",
    help=f"candidate distance k1 of a new database's match rule (default "
    f"{LSH_CANDIDATE_DISTANCE}: any, as a crawl's); must match an existing one",
)
@option(
    "--blocks",
    type=options.blocks,
    metavar="B",
    help="band blocks of a new database (default: its index kind's); must match an existing one",
)
@option(
    "--batch-size",
    type=options.batch_size,
    default=500,
    metavar="N",
    help="pages per transaction (default 500)",
)
@option(
    "-j",
    "--jobs",
    type=options.jobs,
    default=1,
    metavar="N",
    help="extract and fingerprint in N processes (default 1)",
)
@option(
    "--store-text",
    action="store_true",
    help="keep each page's main text (compressed, at most 64 KiB) for show, diff and "
    "report, as SIMHASH_FILTER_STORE_TEXT does in a crawl",
)
@option(
    "--weighting",
    choices=("tf", "sublinear", "uniform"),
    help="feature weights of a new database's fingerprints (default tf), as the crawl's "
    "SIMHASH_FILTER_WEIGHTING; must match an existing one",
)
@option(
    "--top-n",
    type=options.positive_count,
    metavar="N",
    help="keep only the N heaviest features (default: all), as SIMHASH_FILTER_TOP_N",
)
@option(
    "--segmenter",
    choices=SEGMENTERS,
    help=f"Chinese word segmenter (default {DEFAULT_SEGMENTER}), as SIMHASH_FILTER_SEGMENTER",
)
@option("--no-progress", action="store_true", help="no progress line on stderr")
@option(
    "--create",
    action="store_true",
    help="add simhash-filter's tables to a database that holds other tables "
    "(without it, such a database is refused and left as it is)",
)
def import_(args: argparse.Namespace, out: Output) -> int:
    """add a corpus (JSON Lines, HTML files, WARC) through the crawl's check-and-add"""
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
    if run.totals["skipped"] and not any(run.totals[key] for key in _IMPORTED):
        out.note(
            f"{PROG}: error: every record was skipped: nothing was imported (a crawl's feed "
            "holds no text unless the crawl kept it: SIMHASH_FILTER_ADD_TEXT)"
        )
        return 1
    return 1 if any(tally.status != "complete" for tally in run.tallies) else 0
