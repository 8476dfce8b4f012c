"""``FingerprintStore``: the public face of the indexed fingerprint database.

Where things are (one module per concern):

- **check-and-add**: :meth:`FingerprintStore.check_and_add` (a batch of one;
  ``add_many`` runs batches) builds the rows and their locks and hands them to the store's
  **write path**, chosen at open (write_path.py): "sqlalchemy" (sqlalchemy_path.py:
  :func:`~simhash_filter.store.batch.decide_batch` decides in Python), "pg-function"
  (pg_function.py: decide_function.sql decides on the server, one round trip) or
  "pg-pipeline" (pg_pipeline.py: ``decide_batch`` between two round trips);
- who is a near-duplicate: ``batch.Judge`` (the distance alone, or a ``MatchRule``:
  candidates within k1 confirmed by the sketches); the index schemes: ``simhash_filter.index``;
- write transactions, retries and locks (SQLite writer queue, PostgreSQL advisory
  locks): ``locks.py``; making the tables and checking spec and scheme against ``meta``:
  ``meta.py``; unsigned ints and PostgreSQL literals: ``encoding.py``.

Every write is one transaction that decides and records together (so two near-duplicates
are never both admitted) and is committed before the method returns (so nothing admitted
is lost; docs/design.md, Concurrency). Nothing is cached in memory but the scheme and
compiled statements: memory does not grow with the database.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Engine, func, select
from sqlalchemy.engine import URL, Connection

from simhash_filter.core.signature import MatchRule, sketch_parts
from simhash_filter.index.defaults import (
    IndexChoice,
    IndexSettings,
    changed_settings,
    index_settings,
)
from simhash_filter.index.schemes import IndexScheme, MinHashLshScheme
from simhash_filter.urls.key import PageKey, canonical_url

from .batch import Judge, RowToCheck
from .checkpointer import WalCheckpointer
from .cursors import RawCursors, database_errors
from .declared_canonicals import canonical_pairs, was_seen
from .engine import (
    WriterQueue,
    busy_timeout,
    display_url,
    is_sqlite,
    make_engine,
    parse_url,
    sqlite_path,
)
from .faults import OutageRetry, WaitBounds
from .locks import KEY_LOCKED_BATCH, MAX_KEY_LOCKS, WriteLocks, WriteTransactions, lock_parts
from .meta import init_schema, read_meta, write_scheme
from .opening import StoreOptions, settle
from .reading import dropped_pages_select, drops_select, latest_drop, page_record_columns
from .records import (
    CanonicalPair,
    DuplicateRecord,
    Match,
    PageRecord,
    PageRow,
    StoreStats,
    Supersession,
    Verdict,
)
from .rekey import rekey
from .scan import scan_near
from .schema import SCHEMA_VERSION, duplicates_table, pages_table
from .statements import Execute, chunked, cursor_execute, statements_for
from .supersede import Superseder
from .unstripped import SignedAgain, sign_again
from .upgrade import upgrade
from .write_path import WritePath, open_write_path, validate_write_path

log = logging.getLogger(__name__)


def _writer_queue(url: URL, bounds: WaitBounds) -> WriterQueue | None:
    """The writer queue of a SQLite file (None on a server), waiting at most the bound."""
    if not is_sqlite(url):
        return None
    return WriterQueue(sqlite_path(url), busy_timeout(url, bounds.lock_timeout))


def _check_fingerprint(fingerprint: int, bits: int) -> int:
    if isinstance(fingerprint, bool) or not isinstance(fingerprint, int):
        raise ValueError(f"fingerprint must be an int, got {fingerprint!r}")
    if not 0 <= fingerprint < (1 << bits):
        raise ValueError(f"fingerprint must be an unsigned {bits}-bit int, got {fingerprint!r}")
    return fingerprint


def _checked_text(text: bytes | None) -> bytes | None:
    if text is not None and not isinstance(text, bytes):
        raise ValueError(f"text must be bytes (stored_text.pack_text) or None, got {text!r:.40}")
    return text


class FingerprintStore:
    """Admitted pages and their table keys in SQLite or PostgreSQL (see the module doc).

    Make one with :meth:`open` (a crawler: knows its spec and scheme) or
    :meth:`open_existing` (the command line: reads them from the database).
    Thread-safe; one instance per process is enough.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        url: URL,
        spec: str,
        scheme: IndexScheme,
        rule: MatchRule | None = None,
        writer_queue: WriterQueue | None = None,
        durable: bool | None = None,
        write_path: str | None = None,
        bounds: WaitBounds | None = None,
        database_rule: MatchRule | None = None,
    ) -> None:
        self.bounds = bounds = bounds or WaitBounds()  # how long a write waits (faults.py)
        self._engine = engine
        self._url = url
        self.display_url = display_url(url)
        self.spec = spec
        self.dialect = engine.dialect.name
        self._sqlite = is_sqlite(url)
        timeout = busy_timeout(url, bounds.lock_timeout) if self._sqlite else float("inf")
        if writer_queue is None and self._sqlite:
            writer_queue = WriterQueue(sqlite_path(url), timeout)
        self.writer_queue = writer_queue  # SQLite: the URL rules' writes queue in it too
        database = sqlite_path(url) if self._sqlite else None
        outage = OutageRetry(0.0 if self._sqlite else bounds.outage_retry)
        self._checkpointer = WalCheckpointer(database) if database else None
        self._transactions = WriteTransactions(
            engine,
            display_url=self.display_url,
            writer_queue=writer_queue,
            busy_timeout=timeout,
            before_write=self._checkpointer.start if self._checkpointer else None,
            outage=outage,
        )
        self._cursors = RawCursors(engine, display_url=self.display_url)
        self._write_path: WritePath = open_write_path(
            write_path,
            engine=engine,
            display_url=self.display_url,
            durable=durable,
            transactions=self._transactions,
            cursors=self._cursors,
            n_tables=scheme.n_tables,
            outage=outage,
        )
        self._set_scheme(scheme, rule)
        self.database_rule = rule if database_rule is None else database_rule
        """The rule stored in the database (:attr:`rule` may judge by other thresholds)."""

    # -- opening
    @classmethod
    def open(cls, url: str | URL, options: StoreOptions) -> FingerprintStore:
        """Open (and with ``options.create`` make) the database at ``url`` for fingerprints
        made under ``options.spec``, found through the index and judged by the rule the
        options name (:class:`~simhash_filter.store.opening.StoreOptions` says what each
        field asks; None leaves it to the database's own, else to
        :mod:`simhash_filter.index.defaults`, the one home of a new database's defaults).

        A rule that asks for the stored rule's candidates with other thresholds is used as
        it is (``MatchRule.same_candidates``: the stored sketches answer it), for this store
        alone; the database keeps its own. ``index`` and ``blocks`` change speed, not
        results.

        Raises SchemeMismatchError when the database was made with another spec, bit
        width or max_distance (or an explicitly other index, blocks or rule),
        DatabaseNotFoundError when ``create`` is False and there is no database,
        ValueError for a write path the URL's back-end cannot run, StoreError for
        anything else.
        """
        sa_url = parse_url(url)
        validate_write_path(options.write_path, sa_url)
        bounds = options.bounds or WaitBounds()
        durable = options.durable
        engine = make_engine(sa_url, create=options.create, durable=bool(durable), bounds=bounds)
        queue = _writer_queue(sa_url, bounds)
        try:
            settled = settle(engine, sa_url, options, queue=queue)
            return cls(
                engine,
                url=sa_url,
                spec=settled.stored.spec,
                scheme=settled.stored.scheme,
                rule=settled.rule,
                database_rule=settled.stored.rule,
                writer_queue=queue,
                durable=durable,
                write_path=options.write_path,
                bounds=bounds,
            )
        except BaseException:
            engine.dispose()
            if queue is not None:
                queue.close()
            raise

    @classmethod
    def open_existing(
        cls, url: str | URL, *, convert: bool = False, write_path: str | None = None
    ) -> FingerprintStore:
        """Open a database made earlier, with the spec and scheme stored in it; never
        creates anything (DatabaseNotFoundError when it is not there). ``convert``: a
        database of an older schema opens too, for :meth:`reindex` to convert it.
        ``write_path``: as for :meth:`open`."""
        sa_url = parse_url(url)
        validate_write_path(write_path, sa_url)
        engine = make_engine(sa_url, create=False)
        try:
            stored = init_schema(engine, sa_url, settings=None, create=False, convert=convert)
            upgrade(engine)
            return cls(
                engine,
                url=sa_url,
                spec=stored.spec,
                scheme=stored.scheme,
                rule=stored.rule,
                write_path=write_path,
            )
        except BaseException:
            engine.dispose()
            raise

    def _set_scheme(self, scheme: IndexScheme, rule: MatchRule | None) -> None:
        self.scheme = scheme
        self.rule = rule
        """The match rule (None: a page within ``scheme.max_distance`` is a duplicate)."""
        self._judge = Judge(scheme.max_distance, rule)
        self._statements = statements_for(self._engine.dialect, scheme.n_tables)
        self._superseder = Superseder(
            self._transactions, self._statements, scheme=scheme, judge=self._judge
        )

    @property
    def write_path(self) -> str:
        """How check-and-add reaches the database, chosen at open: ``"sqlalchemy"``,
        ``"pg-function"`` or ``"pg-pipeline"`` (see :meth:`open`)."""
        return self._write_path.name

    # -- writing
    def _row(self, page: PageRow) -> tuple[RowToCheck, PageKey]:
        key = page.page_key()
        _check_fingerprint(page.fingerprint, self.scheme.bits)
        sketch = page.sketch
        if sketch is not None:
            if not isinstance(sketch, bytes):
                raise ValueError(f"sketch must be bytes or None, got {type(sketch).__name__}")
            try:
                sketch_parts(sketch)  # validates it
            except ValueError as exc:
                raise ValueError(f"not a sketch (for {key.url}): {exc}") from None
        index_keys, probe_keys = self.scheme.page_keys(page.fingerprint, sketch)
        row = RowToCheck(
            key.url, key.domain, page.fingerprint, int(page.text_length), index_keys,
            probe_keys, sketch,
        )  # fmt: skip
        return row, key

    def _check_rows(
        self,
        rows: list[RowToCheck],
        locks: WriteLocks | None,
        texts: Sequence[bytes | None] = (),
        hints: Sequence[str | None] = (),
        *,
        wait: float | None = None,
    ) -> list[Verdict]:
        """Decide and record ``rows`` in one write transaction of the store's write path,
        on PostgreSQL under ``locks`` (:meth:`_locks`) or, when None, the database-wide
        lock; ``texts`` (core/stored_text.py's bytes) and ``hints`` (declared canonical URLs),
        one per row or none at all, go with the verdicts."""
        return self._write_path.check_and_add(
            rows, locks, judge=self._judge, scheme=self.scheme, now=datetime.now(UTC),
            texts=texts, wait=wait, hints=hints,
        )  # fmt: skip

    def _locks(self, rows: list[RowToCheck]) -> list[tuple[list[RowToCheck], WriteLocks | None]]:
        """``rows`` as the transactions that write them, each with its advisory locks: one
        on SQLite (which needs none); on PostgreSQL consecutive parts within MAX_KEY_LOCKS,
        a page that alone needs more with the database-wide lock (None)."""
        if self._sqlite:
            return [(rows, None)]
        keys = [(row.url, row.index_items(), row.probe_keys) for row in rows]
        return [
            (rows[part.pages.start : part.pages.stop],
             part.locks if len(part.locks.ids) <= MAX_KEY_LOCKS else None)
            for part in lock_parts(keys)
        ]  # fmt: skip

    def check_and_add(
        self,
        url: str,
        fingerprint: int,
        *,
        text_length: int = 0,
        sketch: bytes | None = None,
        text: bytes | None = None,
        wait: float | None = None,
        declared: str | None = None,
    ) -> Verdict:
        """Decide and record one page, atomically, committed on return.

        A *match* is a stored page within k (or, under a :attr:`rule`, a candidate
        within its ``candidate_distance`` whose sketch confirms it; ``fallback_distance``
        when either has no ``sketch``). NEW: no stored page matches, admitted. DUPLICATE:
        another stored page matches, the drop is logged (a URL stored in the index leaves
        it: its content is a copy now; its row stays, ``dropped_at`` set).
        UNCHANGED: the URL is stored and its stored version matches (last_seen updated).
        CHANGED: the URL is stored, neither its old version nor any other page matches:
        updated. The decision itself is the write path's (:attr:`write_path`).
        ``text``: the page's text as :func:`simhash_filter.core.stored_text.pack_text` made it,
        stored with the page or with its drop; ``declared``: the canonical URL the page
        declares (core/canonical.py), likewise. ``wait``: the lock wait (None: the bound).
        """
        page = PageRow(url, fingerprint, text_length, sketch, text, declared)
        return self.add_many([page], wait=wait)[0]

    def add_many(
        self,
        rows: Iterable[PageRow | tuple[str, int, int]],
        *,
        batch_size: int = 1000,
        wait: float | None = None,
    ) -> list[Verdict]:
        """Bulk ``check_and_add`` of :class:`PageRow` records (or plain ``(url, fingerprint,
        text_length)`` tuples): one transaction per batch, checked against the database and
        itself; the verdicts in input order (those single calls would give). ``wait``: the
        lock wait (None: the bound)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        verdicts: list[Verdict] = []
        for chunk in chunked(rows, batch_size):
            pages = [PageRow(*row) for row in chunk]  # a 3-tuple too
            made = [self._row(page) for page in pages]
            batch = [row for row, _ in made]
            texts = [_checked_text(page.text) for page in pages]
            hints = [key.declared for _, key in made]
            # a bulk load takes one exclusive database-wide lock; a small batch (the
            # pipeline's group commit) its rows' own table-key and URL locks, so batches of
            # different crawler processes serialize only where they could collide: on
            # PostgreSQL in parts within the lock bound (3 pages a part at k1 = 9)
            if len(batch) > KEY_LOCKED_BATCH:
                verdicts.extend(self._check_rows(batch, None, texts, hints, wait=wait))
                continue
            done = 0
            for part, locks in self._locks(batch):
                end = done + len(part)
                verdicts.extend(
                    self._check_rows(part, locks, texts[done:end], hints[done:end], wait=wait)
                )
                done = end
        return verdicts

    def supersede(self, page: PageRow, kept: Match) -> Supersession | None:
        """Keep ``page`` in place of ``kept``, the stored page its check-and-add called it a
        copy of, when the keep policy prefers it (core/keep.py: its canonical hints); None
        when it does not, or when the swap was called off (store/supersede.py)."""
        row, key = self._row(page)
        with self._cursor_reads() as execute:  # most copies stay copies: one statement
            if self._superseder.stays_a_copy(execute, key.url, key.declared, kept):
                return None
        text = _checked_text(page.text)
        with self._errors():
            return self._superseder.supersede(
                self._cursor_reads, row, key.declared, text, kept, datetime.now(UTC)
            )

    def mark_canonical(self, page: PageRow, kept: Match) -> bool:
        """Record ``page`` as its cluster's canonical, if preferred (store/supersede.py)."""
        row, key = self._row(page)
        with self._errors():
            return self._superseder.mark_canonical(self._cursor_reads, row, key.declared, kept)

    def sign_again(self, page: SignedAgain) -> bool:
        """Sign a page stored unsure as its copy was signed (store/unstripped.py); a rare
        write (a young host's page met again), so under the database-wide lock."""
        now = datetime.now(UTC)
        with self._errors():
            return self._transactions.run(
                lambda conn: sign_again(conn, self._statements, self.scheme, page, now),
                locks=None,
            )

    def canonical_pairs(
        self, *, domain: str | None = None, since: datetime | None = None
    ) -> Iterator[CanonicalPair]:
        """Confirmed canonicals, oldest first: each logged copy that declared the page it
        copies its canonical (the content check confirmed the hint), dropped or superseded.
        Training pairs for URL rules: ``variant_url`` → ``canonical_url``, per ``domain``."""
        with self._read() as conn:
            yield from canonical_pairs(conn, domain=domain, since=since)

    def was_seen(self, url: str) -> bool:
        """True when ``url`` (canonicalized) is a kept page or a logged copy."""
        with self._read() as conn:
            return was_seen(conn, canonical_url(url))

    # -- reading
    def near(
        self, fingerprint: int, k: int | None = None, *, sketch: bytes | None = None
    ) -> list[Match]:
        """Stored pages within ``k`` (default: the scheme's max_distance) of
        ``fingerprint`` that the index finds for it, sorted by distance, then URL.

        Under the minhash-lsh index the pages found are those sharing a band with
        ``sketch`` (and the sketchless ones within 3 bits); without a sketch there is no
        band to probe, so every stored fingerprint is read (a scan: docs/cli.md)."""
        _check_fingerprint(fingerprint, self.scheme.bits)
        limit = self.scheme.max_distance if k is None else k
        if not 0 <= limit <= self.scheme.max_distance:
            raise ValueError(
                f"k must be in 0..{self.scheme.max_distance} (the index's max_distance), got {k!r}"
            )
        if isinstance(self.scheme, MinHashLshScheme) and self.scheme.band_keys(sketch) is None:
            with self._read() as conn:
                return scan_near(conn, fingerprint, limit)
        probe_keys = self.scheme.probe_keys(fingerprint, sketch)
        return self._write_path.near(probe_keys, fingerprint, limit, scheme=self.scheme)

    def count_candidates(self, fingerprint: int, sketch: bytes | None = None) -> int:
        """How many key rows one probe for ``fingerprint`` (and ``sketch``) reads: the
        rows a check reads, a cost diagnostic."""
        _check_fingerprint(fingerprint, self.scheme.bits)
        with self._cursors.cursor() as cursor:
            rows = self._statements.probe.rows(
                cursor_execute(cursor), self.scheme.probe_keys(fingerprint, sketch)
            )
        return len(rows)

    def lookup(self, url: str) -> PageRecord | None:
        """The stored page of ``url`` (canonicalized), or None."""
        canonical = canonical_url(url)
        p = pages_table.c
        with self._read() as conn:
            row = conn.execute(select(*page_record_columns()).where(p.url == canonical)).first()
        if row is None:
            return None
        return PageRecord(*row)

    def duplicates(
        self,
        *,
        domain: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        latest: bool = False,
    ) -> Iterator[DuplicateRecord]:
        """Logged drops, newest first, of a domain, since a time (``latest``: a page once)."""
        d = duplicates_table.c
        stmt = drops_select().where(latest_drop()) if latest else drops_select()
        if domain is not None:
            stmt = stmt.where(d.domain == domain.lower())
        if since is not None:  # (a naive time: UTC)
            stmt = stmt.where(d.seen_at >= (since if since.tzinfo else since.replace(tzinfo=UTC)))
        if limit is not None:
            stmt = stmt.limit(limit)
        with self._read() as conn:
            for row in conn.execution_options(yield_per=1000).execute(stmt):
                yield DuplicateRecord(*row)

    def stats(self) -> StoreStats:
        """Page and drop counts, and the settings the database was made with."""
        with self._read() as conn:
            pages = conn.execute(
                select(func.count()).where(pages_table.c.dropped_at.is_(None))
            ).scalar_one()
            dups = conn.execute(select(func.count()).select_from(duplicates_table)).scalar_one()
            dropped_pages = conn.execute(dropped_pages_select()).scalar_one()
            meta = read_meta(conn)
        s = self.scheme
        return StoreStats(
            pages=pages,
            duplicates=dups,
            spec=self.spec,
            bits=s.bits,
            max_distance=s.max_distance,
            blocks=s.n_blocks,
            tables=s.n_tables,
            schema_version=int(meta.get("schema_version", SCHEMA_VERSION)),
            extra={
                "backend": self.dialect,
                "scheme": s.describe(),
                "index": s.kind,
                "rule": "" if self.rule is None else self.rule.describe(),
                "created_at": meta.get("created_at", ""),
            },
            dropped_pages=dropped_pages,
        )

    def reindex(
        self,
        *,
        blocks: int | None = None,
        max_distance: int | None = None,
        index: str | None = None,
        rule: MatchRule | None = None,
        min_similarity: float | None = None,
    ) -> None:
        """Rebuild every page's table keys for a new scheme (same bits) and record it, and a new
        match rule, in meta.

        What is not named stays, as :func:`~simhash_filter.index.defaults.changed_settings`
        says (the one home of these defaults); ``rule``: a whole new rule instead, its reach
        the k unless ``max_distance`` names more. A change of the rule's thresholds alone
        rewrites no key. Pages already admitted stay admitted, even if the new rule would
        now call some of them near-duplicates. Other processes must reopen the database
        afterwards (their open fails on the old scheme or rule).
        """
        choice = IndexChoice(index, max_distance, blocks, min_similarity)
        if rule is None:
            new = changed_settings(IndexSettings(self.scheme, self.database_rule), choice)
        else:
            choice = dataclasses.replace(choice, index=index or self.scheme.kind)
            new = index_settings(choice, rule=rule, bits=self.scheme.bits)
        scheme = new.scheme

        def work(conn: Connection) -> None:
            version = read_meta(conn).get("schema_version")
            if scheme != self.scheme or version != str(SCHEMA_VERSION):
                rekey(conn, scheme)
            write_scheme(conn, scheme, new.rule)

        self._transactions.run(work, locks=None)  # the database-wide lock
        self._set_scheme(scheme, new.rule)
        self.database_rule = new.rule
        log.info("reindexed %s: %s", self.display_url, scheme.in_words())

    # -- connections
    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for read-only reports over schema.py's models)."""
        return self._engine

    def checkpoint(self) -> bool:
        """Copy SQLite's WAL into the file now (False: a reader kept frames, or no WAL)."""
        return self._checkpointer is not None and self._checkpointer.copied_all()

    def close(self) -> None:
        """Release every connection."""
        self._cursors.close()
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._engine.dispose()
        if self.writer_queue is not None:
            self.writer_queue.close()

    def __enter__(self) -> FingerprintStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FingerprintStore({self.display_url!r}, {self.scheme.describe()})"

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._errors(), self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _cursor_reads(self) -> Iterator[Execute]:
        """Reads on a cursor of a kept connection (no transaction: each statement its own
        snapshot; a database error leaves as a StoreError)."""
        with self._cursors.cursor() as cursor:
            yield cursor_execute(cursor)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        with database_errors(self.display_url):
            yield
