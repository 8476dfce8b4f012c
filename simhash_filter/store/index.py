"""``FingerprintStore``: the band-indexed fingerprint database.

Every write is one transaction that decides and records together (DESIGN.md
invariant 3) and is committed before the method returns (invariant 4):

- SQLite: ``BEGIN IMMEDIATE`` takes the database's write lock before the check reads,
  so writers from every thread and process run one after another; a lock in the
  process queues its own threads so they do not spin in SQLite's busy handler.
- PostgreSQL: ``pg_advisory_xact_lock`` on a hash of each of the page's band keys and
  of its URL, taken in sorted order at the start of the transaction. Two pages within
  distance k share a band key, so their transactions serialize; pages that share none
  run in parallel. Bulk loads (``add_many``) and ``reindex`` take one exclusive
  database-wide advisory lock instead (every single write holds it shared).

Single writes and bulk loads share one decision routine (``_Batch``): a batch is
checked against the database *and* against its own earlier rows (the paper's batch
mode), so ``add_many(rows)`` returns exactly the verdicts that ``check_and_add`` would
have returned row by row.

Nothing is cached in memory but the scheme: memory does not grow with the database.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import mmh3
from sqlalchemy import (
    Engine,
    Select,
    bindparam,
    delete,
    func,
    insert,
    inspect,
    literal,
    literal_column,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from simhash_filter.bands import DEFAULT_MAX_DISTANCE, BandScheme

from .engine import (
    WRITE_OPTION,
    WriterQueue,
    busy_timeout,
    display_url,
    is_sqlite,
    make_engine,
    parse_url,
    sqlite_path,
)
from .records import (
    DatabaseNotFoundError,
    DuplicateRecord,
    Match,
    PageRecord,
    SchemeMismatchError,
    StoreError,
    StoreStats,
    Verdict,
    VerdictKind,
)
from .schema import (
    SCHEMA_VERSION,
    Base,
    UInt64,
    bands_table,
    duplicates_table,
    meta_table,
    pages_table,
)
from .urls import canonical_url, url_domain

log = logging.getLogger(__name__)

T = TypeVar("T")

_U64 = 1 << 64
_MAX_PARAMS = 20_000  # bound parameters per probe statement (SQLite allows 32766)
_WRITE_ATTEMPTS = 8
_KEY_LOCKED_BATCH = 64
"""add_many batches up to this size lock their band keys (like check_and_add) instead of
the whole database: at 15 tables that is at most ~1,000 advisory locks per transaction,
well within PostgreSQL's lock table (max_locks_per_transaction x max_connections)."""
_KEPT_READERS = 4  # SQLite connections near() keeps between calls (see _raw_cursor)
_GLOBAL_LOCK = 0x53696D4861736846  # "SimHashF": bulk writers exclusive, single writers shared
_SCHEMA_LOCK = 0x53696D4861736853  # "SimHashS": creating the tables
_RETRY_SQLSTATES = {"40001", "40P01", "23505"}  # serialization, deadlock, unique violation


def band_lock_id(table_no: int, key: int) -> int:
    """The PostgreSQL advisory lock id (signed 64-bit) of one band key."""
    return int(mmh3.hash64(key.to_bytes(8, "little"), seed=table_no, signed=True)[0])


def url_lock_id(url: str) -> int:
    """The PostgreSQL advisory lock id of a canonical URL."""
    return int(mmh3.hash64(url.encode("utf-8"), seed=0x55524C, signed=True)[0])


def _check_fingerprint(fingerprint: int, bits: int) -> int:
    if isinstance(fingerprint, bool) or not isinstance(fingerprint, int):
        raise ValueError(f"fingerprint must be an int, got {fingerprint!r}")
    if not 0 <= fingerprint < (1 << bits):
        raise ValueError(f"fingerprint must be an unsigned {bits}-bit int, got {fingerprint!r}")
    return fingerprint


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def spec_difference(old: str, new: str) -> str:
    """What differs between two spec strings, item by item (they are ';'-joined)."""
    old_items, new_items = old.split(";"), new.split(";")
    only_old = [item for item in old_items if item not in new_items]
    only_new = [item for item in new_items if item not in old_items]
    if not only_old and not only_new:  # same items, other order
        return f"stored {old!r}, requested {new!r}"
    parts = []
    if only_old:
        parts.append(f"stored spec has {';'.join(only_old)!r}")
    if only_new:
        parts.append(f"requested spec has {';'.join(only_new)!r}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- batches


@dataclass(slots=True)
class _Row:
    url: str
    domain: str
    fingerprint: int
    text_length: int
    keys: list[int]


@dataclass(slots=True)
class _Decision:
    kind: VerdictKind
    row: _Row
    ref: int | None = None  # the page this row is (NEW/UNCHANGED/CHANGED)
    previous: int | None = None
    match: tuple[int, int, int] | None = None  # (ref, fingerprint, distance) for DUPLICATE
    matches: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass(slots=True)
class _PageState:
    ref: int  # page id (> 0) or a temporary id for a page new in this batch (< 0)
    url: str
    domain: str
    stored_fp: int | None  # fingerprint in the database before the batch (None: new)
    fingerprint: int
    text_length: int
    seen: bool = False  # last_seen must be updated


class _Batch:
    """Decides a batch of rows against the database and against itself, then writes."""

    def __init__(self, store: FingerprintStore, conn: Connection, rows: list[_Row]) -> None:
        self.store = store
        self.conn = conn
        self.rows = rows
        self.k = store.scheme.max_distance
        self.pages: dict[int, _PageState] = {}  # ref -> state, pages touched by the batch
        self.by_url: dict[str, int] = {}
        self.index: dict[tuple[int, int], list[int]] = defaultdict(list)  # batch pages
        self.db_candidates: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.next_tmp = -1

    def run(self, now: datetime) -> list[Verdict]:
        self._load()
        decisions = [self._decide(row) for row in self.rows]
        return self._write(decisions, now)

    # -- read
    def _load(self) -> None:
        urls = sorted({row.url for row in self.rows})
        for chunk in _chunks(urls, 5_000):
            result: Sequence[tuple[int, str, str, int, int]]
            if len(chunk) == 1:  # the check_and_add hot path: a pre-compiled statement
                result = self.store._page_by_url(self.conn, chunk[0])
            else:
                rows = self.conn.execute(
                    select(
                        pages_table.c.id,
                        pages_table.c.url,
                        pages_table.c.domain,
                        pages_table.c.fingerprint,
                        pages_table.c.text_length,
                    ).where(pages_table.c.url.in_(chunk))
                )
                result = [(r[0], r[1], r[2], r[3], r[4]) for r in rows]
            for page_id, url, domain, fingerprint, text_length in result:
                self.pages[page_id] = _PageState(
                    page_id, url, domain, fingerprint, fingerprint, text_length
                )
                self.by_url[url] = page_id
        if len(self.rows) == 1:
            self.db_candidates = self.store._probe_one(self.conn, self.rows[0].keys)
            return
        wanted = {(t, key) for row in self.rows for t, key in enumerate(row.keys)}
        self.db_candidates = self.store._probe(self.conn, wanted)

    # -- decide
    def _decide(self, row: _Row) -> _Decision:
        ref = self.by_url.get(row.url)
        if ref is not None:
            state = self.pages[ref]
            distance = (state.fingerprint ^ row.fingerprint).bit_count()
            if distance <= self.k:
                state.seen = True
                return _Decision(VerdictKind.UNCHANGED, row, ref=ref, previous=state.fingerprint)
        matches = self._matches(row, exclude=ref)
        if matches:
            return _Decision(VerdictKind.DUPLICATE, row, matches=matches)
        if ref is not None:
            state = self.pages[ref]
            previous = state.fingerprint
            state.fingerprint, state.text_length, state.seen = (
                row.fingerprint,
                row.text_length,
                True,
            )
            self._index(ref, row.keys)
            return _Decision(VerdictKind.CHANGED, row, ref=ref, previous=previous)
        ref = self.next_tmp
        self.next_tmp -= 1
        self.pages[ref] = _PageState(
            ref, row.url, row.domain, None, row.fingerprint, row.text_length
        )
        self.by_url[row.url] = ref
        self._index(ref, row.keys)
        return _Decision(VerdictKind.NEW, row, ref=ref)

    def _index(self, ref: int, keys: list[int]) -> None:
        for t, key in enumerate(keys):
            self.index[(t, key)].append(ref)

    def _matches(self, row: _Row, exclude: int | None) -> list[tuple[int, int, int]]:
        """(ref, fingerprint, distance) of every page within k of ``row``."""
        found: dict[int, tuple[int, int, int]] = {}
        fingerprint, k = row.fingerprint, self.k
        for t, key in enumerate(row.keys):
            for page_id, stored in self.db_candidates.get((t, key), ()):
                if page_id == exclude or page_id in found:
                    continue
                state = self.pages.get(page_id)
                current = stored if state is None else state.fingerprint
                distance = (current ^ fingerprint).bit_count()
                if distance <= k:
                    found[page_id] = (page_id, current, distance)
            for ref in self.index.get((t, key), ()):
                if ref == exclude or ref in found:
                    continue
                current = self.pages[ref].fingerprint
                distance = (current ^ fingerprint).bit_count()
                if distance <= k:
                    found[ref] = (ref, current, distance)
        return list(found.values())

    # -- write
    def _write(self, decisions: list[_Decision], now: datetime) -> list[Verdict]:
        conn, scheme = self.conn, self.store.scheme
        new_refs = [ref for ref, state in self.pages.items() if ref < 0]
        ids: dict[int, int] = {}  # temporary ref -> page id (refs > 0 are page ids)
        if new_refs:
            states = [self.pages[ref] for ref in new_refs]
            result = conn.execute(
                insert(pages_table).returning(pages_table.c.id, sort_by_parameter_order=True),
                [
                    {
                        "url": s.url,
                        "domain": s.domain,
                        "fingerprint": s.fingerprint,
                        "text_length": s.text_length,
                        "first_seen": now,
                        "last_seen": now,
                    }
                    for s in states
                ],
            )
            for ref, (page_id,) in zip(new_refs, result.all(), strict=True):
                ids[ref] = page_id
        band_deletes: list[dict[str, int]] = []
        band_inserts: list[tuple[int, int, int, int]] = []  # table_no, key, page_id, fp
        page_updates: list[dict[str, Any]] = []
        for ref, state in self.pages.items():
            page_id = ids.get(ref, ref)
            new_keys = scheme.keys(state.fingerprint)
            if state.stored_fp is None:
                band_inserts.extend(
                    (t, key, page_id, state.fingerprint) for t, key in enumerate(new_keys)
                )
                continue
            if state.fingerprint != state.stored_fp:
                old_keys = scheme.keys(state.stored_fp)
                for t, (old, new) in enumerate(zip(old_keys, new_keys, strict=True)):
                    band_deletes.append({"t": t, "k": old, "p": page_id})
                    band_inserts.append((t, new, page_id, state.fingerprint))
            if state.seen:
                page_updates.append(
                    {
                        "p": page_id,
                        "fingerprint": state.fingerprint,
                        "text_length": state.text_length,
                        "last_seen": now,
                    }
                )
        if band_deletes:
            conn.execute(
                delete(bands_table).where(
                    bands_table.c.table_no == bindparam("t"),
                    bands_table.c.key == bindparam("k", type_=UInt64()),
                    bands_table.c.page_id == bindparam("p"),
                ),
                band_deletes,
            )
        if band_inserts:
            self.store._insert_bands(conn, band_inserts)
        if page_updates:
            conn.execute(
                update(pages_table)
                .where(pages_table.c.id == bindparam("p"))
                .values(
                    fingerprint=bindparam("fingerprint"),
                    text_length=bindparam("text_length"),
                    last_seen=bindparam("last_seen"),
                ),
                page_updates,
            )

        # nearest match of each drop: by distance, then URL
        dup_decisions = [d for d in decisions if d.kind is VerdictKind.DUPLICATE]
        urls = {ref: state.url for ref, state in self.pages.items()}
        unknown = sorted({m[0] for d in dup_decisions for m in d.matches if m[0] not in urls})
        for chunk in _chunks(unknown, 5_000):
            rows = conn.execute(
                select(pages_table.c.id, pages_table.c.url).where(pages_table.c.id.in_(chunk))
            )
            urls.update({page_id: url for page_id, url in rows})
        dup_rows = []
        for d in dup_decisions:
            d.match = min(d.matches, key=lambda m: (m[2], urls[m[0]]))
            dup_rows.append(
                {
                    "url": d.row.url,
                    "domain": d.row.domain,
                    "fingerprint": d.row.fingerprint,
                    "duplicate_of": ids.get(d.match[0], d.match[0]),
                    "distance": d.match[2],
                    "seen_at": now,
                }
            )
        if dup_rows:
            conn.execute(insert(duplicates_table), dup_rows)

        verdicts = []
        for d in decisions:
            match = None
            if d.match is not None:
                ref, fingerprint, distance = d.match
                match = Match(urls[ref], fingerprint, distance, ids.get(ref, ref))
            verdicts.append(
                Verdict(
                    kind=d.kind,
                    url=d.row.url,
                    fingerprint=d.row.fingerprint,
                    duplicate_of=match,
                    previous_fingerprint=d.previous,
                )
            )
        return verdicts


# --------------------------------------------------------------------------- the store


class FingerprintStore:
    """Admitted pages and their band keys in SQLite or PostgreSQL (see the module doc).

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
        scheme: BandScheme,
        writer_queue: WriterQueue | None = None,
    ) -> None:
        self._engine = engine
        self._url = url
        self.display_url = display_url(url)
        self.spec = spec
        self.dialect = engine.dialect.name
        self._sqlite = is_sqlite(url)
        self._busy_timeout = busy_timeout(url) if self._sqlite else 0.0
        if writer_queue is None and self._sqlite:
            writer_queue = WriterQueue(sqlite_path(url), self._busy_timeout)
        self._writer_queue = writer_queue
        self._write_lock: AbstractContextManager[Any] = self._writer_queue or nullcontext()
        self._readers: deque[Any] = deque()  # see _raw_cursor
        self._closed = False
        self._uint64 = UInt64()
        self._band_columns = ("table_no", "key", "page_id", "fingerprint")
        band_insert = insert(bands_table).compile(
            dialect=engine.dialect, column_keys=list(self._band_columns)
        )
        self._band_insert_sql = band_insert.string
        self._band_order = list(band_insert.positiontup or self._band_columns)
        self._set_scheme(scheme)

    # -- opening
    @classmethod
    def open(
        cls,
        url: str | URL,
        *,
        spec: str,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        blocks: int | None = None,
        create: bool = True,
        bits: int = 64,
        durable: bool = False,
    ) -> FingerprintStore:
        """Open (and with ``create`` make) the database at ``url`` for fingerprints made
        under ``spec``, found within ``max_distance`` through ``blocks`` blocks.

        ``blocks=None`` takes the database's own block count when it has one (blocks
        change speed, not results), else :func:`~simhash_filter.bands.default_blocks`.
        ``durable=True`` makes SQLite commits survive a power cut too
        (``synchronous=FULL``), not only a killed process.

        Raises SchemeMismatchError when the database was made with another spec, bit
        width or max_distance (or explicitly other blocks), DatabaseNotFoundError when
        ``create`` is False and there is no database, StoreError for anything else.
        """
        if not isinstance(spec, str) or not spec:
            raise ValueError(f"spec must be a non-empty string, got {spec!r}")
        requested = BandScheme(bits=bits, max_distance=max_distance, blocks=blocks)
        sa_url = parse_url(url)
        engine = make_engine(sa_url, create=create, durable=durable)
        queue = (
            WriterQueue(sqlite_path(sa_url), busy_timeout(sa_url)) if is_sqlite(sa_url) else None
        )
        try:
            # Turning a new SQLite file to WAL and creating its tables take the exclusive
            # lock from a shared one; two processes doing that at once deadlock and SQLite
            # answers one of them "database is locked" at once, without the busy timeout:
            # creators queue behind the file's writer lock.
            with queue if queue is not None and create else nullcontext():
                stored = _init_schema(engine, sa_url, spec=spec, scheme=requested, create=create)
            stored_spec, stored_scheme = stored
            _compare(sa_url, stored_spec, stored_scheme, spec, requested, blocks is not None)
            return cls(
                engine, url=sa_url, spec=stored_spec, scheme=stored_scheme, writer_queue=queue
            )
        except BaseException:
            engine.dispose()
            if queue is not None:
                queue.close()
            raise

    @classmethod
    def open_existing(cls, url: str | URL) -> FingerprintStore:
        """Open a database made earlier, with the spec and scheme stored in it; never
        creates anything (DatabaseNotFoundError when it is not there)."""
        sa_url = parse_url(url)
        engine = make_engine(sa_url, create=False)
        try:
            spec, scheme = _init_schema(engine, sa_url, spec=None, scheme=None, create=False)
            return cls(engine, url=sa_url, spec=spec, scheme=scheme)
        except BaseException:
            engine.dispose()
            raise

    def _set_scheme(self, scheme: BandScheme) -> None:
        self.scheme = scheme
        tables = range(scheme.n_tables)
        cols = (bands_table.c.table_no, bands_table.c.key, bands_table.c.page_id,
                bands_table.c.fingerprint)  # fmt: skip
        self._probe_stmt = union_all(
            *[
                select(*cols).where(
                    bands_table.c.table_no == literal(t),
                    bands_table.c.key.in_(bindparam(f"k{t}", expanding=True, type_=UInt64())),
                )
                for t in tables
            ]
        )
        # near()'s hot path: one pre-compiled statement run on the DB-API cursor,
        # skipping SQLAlchemy's per-call statement processing (measured: about 4x
        # faster on SQLite). Values still go through UInt64, the one conversion point.
        single = union_all(
            *[
                select(*cols).where(
                    bands_table.c.table_no == literal_column(str(t)),
                    bands_table.c.key == bindparam(f"k{t}", type_=UInt64()),
                )
                for t in tables
            ]
        )
        url_compiled = (
            select(pages_table.c.url)
            .where(pages_table.c.id == bindparam("p"))
            .compile(dialect=self._engine.dialect)
        )
        self._url_sql = url_compiled.string
        p = pages_table.c
        self._page_sql = (
            select(p.id, p.url, p.domain, p.fingerprint, p.text_length)
            .where(p.url == bindparam("u"))
            .compile(dialect=self._engine.dialect)
            .string
        )
        compiled = single.compile(dialect=self._engine.dialect)
        self._near_sql = compiled.string
        self._near_order = [f"k{t}" for t in tables]
        if self._engine.dialect.positional:
            assert compiled.positiontup is not None
            self._near_order = list(compiled.positiontup)
        self._near_plain_keys = (
            self._engine.dialect.positional
            and self._near_order == [f"k{t}" for t in tables]
            and max(table.key_bits for table in scheme.tables) < 63
        )

    @contextmanager
    def _raw_cursor(self) -> Iterator[Any]:
        """A DB-API cursor on a pooled connection (autocommit reads on SQLite).

        On SQLite up to :data:`_KEPT_READERS` connections stay checked out between calls
        (a pool checkout and reset cost about as much as a probe's SQL at 100k pages);
        they hold no transaction, so they block no writer and no checkpoint.
        """
        with self._errors():
            try:
                raw = self._readers.pop()
            except IndexError:
                raw = self._engine.raw_connection()
            healthy = False
            try:
                cursor = raw.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
                healthy = True
            except self._engine.dialect.loaded_dbapi.Error as exc:
                raise StoreError(f"database error on {self.display_url}: {_reason(exc)}") from exc
            finally:
                if not healthy:
                    raw.invalidate()
                elif self._sqlite and not self._closed and len(self._readers) < _KEPT_READERS:
                    self._readers.append(raw)
                else:
                    raw.close()

    def _near_candidates(self, cursor: Any, fingerprint: int) -> list[tuple[int, int]]:
        """(page_id, fingerprint) of every band row sharing a key with ``fingerprint``."""
        dialect = self._engine.dialect
        to_sql, from_sql = self._uint64.process_bind_param, self._uint64.process_result_value
        keys = self.scheme.keys(fingerprint)
        params: Any
        if self._near_plain_keys:  # keys under 2**63 are the same ints signed or not
            params = keys
        else:
            by_name = {f"k{t}": to_sql(key, dialect) for t, key in enumerate(keys)}
            params = [by_name[name] for name in self._near_order] if dialect.positional else by_name
        cursor.execute(self._near_sql, params)
        return [
            (page_id, from_sql(stored, dialect) or 0)
            for _t, _key, page_id, stored in cursor.fetchall()
        ]

    def _probe_one(
        self, conn: Connection, keys: list[int]
    ) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """``_probe`` for one fingerprint's keys, in ``conn``'s transaction, through the
        pre-compiled statement (the check_and_add hot path)."""
        dialect = self._engine.dialect
        to_sql, from_sql = self._uint64.process_bind_param, self._uint64.process_result_value
        by_name = {f"k{t}": to_sql(key, dialect) for t, key in enumerate(keys)}
        params: Any = (
            tuple(by_name[name] for name in self._near_order) if dialect.positional else by_name
        )
        found: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for t, key, page_id, stored in conn.exec_driver_sql(self._near_sql, params):
            found[(t, from_sql(key, dialect) or 0)].append(
                (page_id, from_sql(stored, dialect) or 0)
            )
        return found

    def _insert_bands(self, conn: Connection, rows: list[tuple[int, int, int, int]]) -> None:
        """Insert (table_no, key, page_id, fingerprint) rows: a pre-compiled INSERT on the
        driver (bulk loads write C(b, k) band rows per page; SQLAlchemy's per-row
        parameter processing was most of their cost). Values go through UInt64."""
        dialect = self._engine.dialect
        to_sql = self._uint64.process_bind_param
        converted = [
            (t, to_sql(key, dialect), page_id, to_sql(fp, dialect)) for t, key, page_id, fp in rows
        ]
        params: Any
        if dialect.positional:
            order = [self._band_columns.index(name) for name in self._band_order]
            params = [tuple(row[i] for i in order) for row in converted]
        else:
            params = [dict(zip(self._band_columns, row, strict=True)) for row in converted]
        conn.exec_driver_sql(self._band_insert_sql, params)

    def _page_by_url(self, conn: Connection, url: str) -> list[tuple[int, str, str, int, int]]:
        """(id, url, domain, fingerprint, text_length) of the page stored under ``url``."""
        dialect = self._engine.dialect
        params: Any = (url,) if dialect.positional else {"u": url}
        from_sql = self._uint64.process_result_value
        return [
            (page_id, page_url, domain, from_sql(fp, dialect) or 0, text_length)
            for page_id, page_url, domain, fp, text_length in conn.exec_driver_sql(
                self._page_sql, params
            )
        ]

    def _url_params(self, page_id: int) -> Any:
        return [page_id] if self._engine.dialect.positional else {"p": page_id}

    def count_candidates(self, fingerprint: int) -> int:
        """How many band rows one probe for ``fingerprint`` reads (a cost diagnostic:
        about ``scheme.expected_candidates(pages)`` for random fingerprints)."""
        _check_fingerprint(fingerprint, self.scheme.bits)
        with self._raw_cursor() as cursor:
            return len(self._near_candidates(cursor, fingerprint))

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for read-only reports over schema.py's models)."""
        return self._engine

    def close(self) -> None:
        """Release every connection."""
        self._closed = True
        while self._readers:
            self._readers.pop().close()
        self._engine.dispose()
        if self._writer_queue is not None:
            self._writer_queue.close()

    def __enter__(self) -> FingerprintStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FingerprintStore({self.display_url!r}, {self.scheme.describe()})"

    # -- transactions
    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._errors(), self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"database error on {self.display_url}: {_reason(exc)}") from exc

    def _write(self, work: Callable[[Connection], T], *, bulk: bool = False,
               lock_ids: Iterable[int] = ()) -> T:  # fmt: skip
        """Run ``work`` in one write transaction, committed on return; retried when the
        database reports a deadlock, a serialization failure or a lost insert race."""
        lock_list = sorted(set(lock_ids))
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            began = time.monotonic()
            try:
                with self._write_lock, self._engine.connect() as conn:
                    conn.execution_options(**{WRITE_OPTION: True})
                    with conn.begin():
                        if not self._sqlite:
                            self._pg_locks(conn, bulk=bulk, lock_ids=lock_list)
                        return work(conn)
            except (IntegrityError, OperationalError) as exc:
                if self._sqlite and "database is locked" in _reason(exc):
                    waited = time.monotonic() - began
                    if waited >= self._busy_timeout:  # the busy timeout ran out: do not wait again
                        raise StoreError(
                            f"database error on {self.display_url}: database is locked "
                            f"(another process held the write lock for more than {waited:.3g} s; "
                            "?timeout=<seconds> in the URL waits longer)"
                        ) from exc
                if attempt == _WRITE_ATTEMPTS or not _retryable(exc):
                    raise StoreError(
                        f"database error on {self.display_url}: {_reason(exc)}"
                    ) from exc
                log.debug("write conflict (attempt %d), retrying: %s", attempt, _reason(exc))
                time.sleep(0.005 * attempt)
            except SQLAlchemyError as exc:
                raise StoreError(f"database error on {self.display_url}: {_reason(exc)}") from exc
        raise AssertionError("unreachable")

    @staticmethod
    def _pg_locks(conn: Connection, *, bulk: bool, lock_ids: list[int]) -> None:
        if bulk:
            conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": _GLOBAL_LOCK})
            return
        conn.execute(text("SELECT pg_advisory_xact_lock_shared(:g)"), {"g": _GLOBAL_LOCK})
        if lock_ids:
            # unnest keeps the array's (sorted) order: locks are taken in that order
            conn.execute(
                text(
                    "SELECT count(pg_advisory_xact_lock(x)) "
                    "FROM unnest(CAST(:ids AS bigint[])) WITH ORDINALITY AS u(x, i)"
                ),
                {"ids": lock_ids},
            )

    # -- probing
    def _probe(
        self, conn: Connection, wanted: Iterable[tuple[int, int]]
    ) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """Band rows for the wanted (table_no, key) pairs: {(t, key): [(page_id, fp)]}."""
        per_table: list[list[int]] = [[] for _ in range(self.scheme.n_tables)]
        for t, key in wanted:
            per_table[t].append(key)
        found: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        width = max((len(keys) for keys in per_table), default=0)
        step = max(1, _MAX_PARAMS // max(1, self.scheme.n_tables))
        for start in range(0, width, step):
            params = {f"k{t}": keys[start : start + step] for t, keys in enumerate(per_table)}
            for t, key, page_id, fingerprint in conn.execute(self._probe_stmt, params):
                found[(t, key)].append((page_id, fingerprint))
        return found

    # -- public API
    def _row(self, url: str, fingerprint: int, text_length: int) -> _Row:
        canonical = canonical_url(url)
        _check_fingerprint(fingerprint, self.scheme.bits)
        return _Row(
            canonical,
            url_domain(canonical),
            fingerprint,
            int(text_length),
            self.scheme.keys(fingerprint),
        )

    def check_and_add(self, url: str, fingerprint: int, *, text_length: int = 0) -> Verdict:
        """Decide and record one page, atomically, committed on return.

        NEW: no stored page within k, admitted. DUPLICATE: within k of another stored
        page, the drop is logged and nothing else changes. UNCHANGED: the URL is stored
        and within k of its stored fingerprint (last_seen updated). CHANGED: the URL is
        stored, beyond k of its old fingerprint and of every other page: updated.
        """
        row = self._row(url, fingerprint, text_length)
        lock_ids = [band_lock_id(t, key) for t, key in enumerate(row.keys)]
        lock_ids.append(url_lock_id(row.url))
        now = datetime.now(UTC)
        return self._write(lambda conn: _Batch(self, conn, [row]).run(now)[0], lock_ids=lock_ids)

    def add_many(
        self, rows: Iterable[tuple[str, int, int]], *, batch_size: int = 1000
    ) -> list[Verdict]:
        """Bulk ``check_and_add`` of (url, fingerprint, text_length) rows: one
        transaction per batch, each batch checked against the database and itself.
        Returns the verdicts in input order (the same ones single calls would give)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        verdicts: list[Verdict] = []
        batch: list[_Row] = []
        for url, fingerprint, text_length in rows:
            batch.append(self._row(url, fingerprint, text_length))
            if len(batch) >= batch_size:
                verdicts.extend(self._add_batch(batch))
                batch = []
        if batch:
            verdicts.extend(self._add_batch(batch))
        return verdicts

    def _add_batch(self, batch: list[_Row]) -> list[Verdict]:
        now = datetime.now(UTC)
        if len(batch) > _KEY_LOCKED_BATCH:  # a bulk load: one exclusive database-wide lock
            return self._write(lambda conn: _Batch(self, conn, batch).run(now), bulk=True)
        # a small batch (the pipeline's group commit): the rows' own band-key and URL locks,
        # so batches of different crawler processes serialize only where they could collide
        lock_ids = [band_lock_id(t, key) for row in batch for t, key in enumerate(row.keys)]
        lock_ids.extend(url_lock_id(row.url) for row in batch)
        return self._write(lambda conn: _Batch(self, conn, batch).run(now), lock_ids=lock_ids)

    def near(self, fingerprint: int, k: int | None = None) -> list[Match]:
        """Stored pages within ``k`` (default: the scheme's max_distance) of
        ``fingerprint``, sorted by distance, then URL."""
        _check_fingerprint(fingerprint, self.scheme.bits)
        limit = self.scheme.max_distance if k is None else k
        if not 0 <= limit <= self.scheme.max_distance:
            raise ValueError(
                f"k must be in 0..{self.scheme.max_distance} (the index's max_distance), got {k!r}"
            )
        hits: dict[int, tuple[int, int]] = {}
        urls: dict[int, str] = {}
        with self._raw_cursor() as cursor:
            for page_id, stored in self._near_candidates(cursor, fingerprint):
                distance = (stored ^ fingerprint).bit_count()
                if distance <= limit:
                    hits[page_id] = (stored, distance)
            for page_id in hits:  # usually none or one; pages are never deleted
                cursor.execute(self._url_sql, self._url_params(page_id))
                row = cursor.fetchone()
                if row is not None:
                    urls[page_id] = row[0]
        matches = [
            Match(urls[page_id], stored, distance, page_id)
            for page_id, (stored, distance) in hits.items()
            if page_id in urls
        ]
        matches.sort(key=lambda m: (m.distance, m.url))
        return matches

    def lookup(self, url: str) -> PageRecord | None:
        """The stored page of ``url`` (canonicalized), or None."""
        canonical = canonical_url(url)
        p = pages_table.c
        with self._read() as conn:
            row = conn.execute(
                select(p.id, p.url, p.fingerprint, p.text_length, p.first_seen, p.last_seen)
                .where(p.url == canonical)
            ).first()  # fmt: skip
        if row is None:
            return None
        return PageRecord(*row)

    def duplicates(
        self,
        *,
        domain: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> Iterator[DuplicateRecord]:
        """Logged drops, newest first, optionally of one domain, since a time."""
        d, p = duplicates_table.c, pages_table.c
        stmt: Select[Any] = (
            select(d.id, d.url, d.fingerprint, p.url, p.fingerprint, d.distance, d.seen_at)
            .join(pages_table, p.id == d.duplicate_of)
            .order_by(d.seen_at.desc(), d.id.desc())
        )
        if domain is not None:
            stmt = stmt.where(d.domain == domain.lower())
        if since is not None:
            if since.tzinfo is None:
                since = since.replace(tzinfo=UTC)
            stmt = stmt.where(d.seen_at >= since)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self._read() as conn:
            for row in conn.execution_options(yield_per=1000).execute(stmt):
                yield DuplicateRecord(*row)

    def stats(self) -> StoreStats:
        """Page and drop counts, and the settings the database was made with."""
        with self._read() as conn:
            pages = conn.execute(select(func.count()).select_from(pages_table)).scalar_one()
            dups = conn.execute(select(func.count()).select_from(duplicates_table)).scalar_one()
            meta = _read_meta(conn)
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
                "created_at": meta.get("created_at", ""),
            },
        )

    def reindex(self, *, blocks: int, max_distance: int) -> None:
        """Rebuild every band row for a new scheme (same bits) and record it in meta.

        Pages already admitted stay admitted, even if a larger max_distance would now
        call some of them near-duplicates. Other processes must reopen the database
        afterwards (their open would fail on the old scheme anyway).
        """
        scheme = BandScheme(bits=self.scheme.bits, max_distance=max_distance, blocks=blocks)

        def work(conn: Connection) -> None:
            conn.execute(delete(bands_table))
            last = None
            while True:
                stmt = select(pages_table.c.id, pages_table.c.fingerprint).order_by(
                    pages_table.c.id
                )
                if last is not None:
                    stmt = stmt.where(pages_table.c.id > last)
                chunk = conn.execute(stmt.limit(10_000)).all()
                if not chunk:
                    break
                conn.execute(
                    insert(bands_table),
                    [
                        {"table_no": t, "key": key, "page_id": page_id, "fingerprint": fp}
                        for page_id, fp in chunk
                        for t, key in enumerate(scheme.keys(fp))
                    ],
                )
                last = chunk[-1][0]
            for key, value in (
                ("max_distance", str(scheme.max_distance)),
                ("blocks", str(scheme.n_blocks)),
            ):
                conn.execute(update(meta_table).where(meta_table.c.key == key).values(value=value))

        self._write(work, bulk=True)
        self._set_scheme(scheme)
        log.info("reindexed %s: %s", self.display_url, scheme.describe())


# --------------------------------------------------------------------------- helpers


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]


def _retryable(exc: DBAPIError) -> bool:
    if exc.connection_invalidated:  # the server went away; the pool reconnects
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _RETRY_SQLSTATES:
        return True
    message = str(exc.orig).lower()
    return "database is locked" in message or "unique constraint failed: pages.url" in message


def _init_schema(
    engine: Engine,
    url: URL,
    *,
    spec: str | None,
    scheme: BandScheme | None,
    create: bool,
) -> tuple[str, BandScheme]:
    """Make the tables and meta rows if needed (race-safe), return the stored spec and
    scheme."""
    where = display_url(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: create})
            with conn.begin():
                if engine.dialect.name == "postgresql" and create:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": _SCHEMA_LOCK})
                inspector = inspect(conn)
                if not inspector.has_table(meta_table.name):
                    if not create:
                        raise DatabaseNotFoundError(
                            f"{where} holds no simhash-filter index (no meta table)"
                        )
                    present = [
                        t.name
                        for t in (pages_table, bands_table, duplicates_table)
                        if inspector.has_table(t.name)
                    ]
                    if present:
                        raise StoreError(
                            f"{where} has table(s) {', '.join(present)} but no meta table: "
                            "not a simhash-filter database, or a damaged one"
                        )
                    assert spec is not None
                    assert scheme is not None
                    Base.metadata.create_all(conn, checkfirst=True)
                    conn.execute(
                        insert(meta_table),
                        [
                            {"key": key, "value": value}
                            for key, value in _meta_values(spec, scheme).items()
                        ],
                    )
                    log.info("created fingerprint index %s (%s)", where, scheme.describe())
                    return spec, scheme
                meta = _read_meta(conn)
    except StoreError:
        raise
    except DBAPIError as exc:
        reason = _reason(exc)
        if "does not exist" in reason and "database" in reason:
            raise DatabaseNotFoundError(f"no database at {where}: {reason}") from None
        if "not a database" in reason or "malformed" in reason:
            raise StoreError(f"{where} is not a usable SQLite database: {reason}") from None
        raise StoreError(f"cannot open {where}: {reason}") from None
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {where}: {_reason(exc)}") from None
    return _parse_meta(where, meta)


def _read_meta(conn: Connection) -> dict[str, str]:
    # not dict(result): a Result has .keys(), so dict() would take it for a mapping
    return {key: value for key, value in conn.execute(select(meta_table.c.key, meta_table.c.value))}


def _meta_values(spec: str, scheme: BandScheme) -> dict[str, str]:
    return {
        "schema_version": str(SCHEMA_VERSION),
        "spec": spec,
        "bits": str(scheme.bits),
        "max_distance": str(scheme.max_distance),
        "blocks": str(scheme.n_blocks),
        "created_at": datetime.now(UTC).isoformat(),
    }


def _parse_meta(where: str, meta: dict[str, str]) -> tuple[str, BandScheme]:
    missing = [k for k in ("schema_version", "spec", "bits", "max_distance", "blocks")
               if k not in meta]  # fmt: skip
    if missing:
        raise StoreError(f"{where}: meta table lacks {', '.join(missing)} (damaged database?)")
    try:
        version = int(meta["schema_version"])
        scheme = BandScheme(
            bits=int(meta["bits"]),
            max_distance=int(meta["max_distance"]),
            blocks=int(meta["blocks"]),
        )
    except ValueError as exc:
        raise StoreError(f"{where}: unreadable meta table: {exc}") from None
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{where} has schema version {version}; this simhash-filter reads version "
            f"{SCHEMA_VERSION}"
        )
    return meta["spec"], scheme


def _compare(
    url: URL,
    stored_spec: str,
    stored: BandScheme,
    spec: str,
    requested: BandScheme,
    blocks_given: bool,
) -> None:
    where = display_url(url)
    if stored_spec != spec:
        raise SchemeMismatchError(
            f"{where} holds fingerprints made with another spec "
            f"({spec_difference(stored_spec, spec)}). Fingerprints of different specs "
            "cannot be compared: use a new database, re-crawl, or re-fingerprint the "
            "stored texts with `simhash-filter import`."
        )
    if stored.bits != requested.bits:
        raise SchemeMismatchError(
            f"{where} holds {stored.bits}-bit fingerprints, requested {requested.bits}-bit: "
            "use a new database, or re-fingerprint with `simhash-filter import`."
        )
    differences = []
    if stored.max_distance != requested.max_distance:
        differences.append(
            f"max_distance: stored {stored.max_distance}, requested {requested.max_distance}"
        )
    if blocks_given and stored.blocks != requested.blocks:
        differences.append(f"blocks: stored {stored.blocks}, requested {requested.blocks}")
    if differences:
        raise SchemeMismatchError(
            f"{where} was indexed with another band scheme ({'; '.join(differences)}). "
            f"Re-index it with `simhash-filter reindex --blocks {requested.n_blocks} "
            f"--max-distance {requested.max_distance}`, or open it with the stored "
            "settings."
        )
