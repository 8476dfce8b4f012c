"""Direct bulk loaders: write the rows ``add_many`` would write, fast, then open normally.

The store makes the database (schema, meta: spec, scheme, rule) and is closed; the pages
are then written straight into its tables: ``pages`` in id order (page i has id i+1 and
a URL that sorts as its id), the keys from the scheme's public ``index_items``/
``index_keys``, signed by ``encoding.to_sql_int``. SQLite: ``bands`` table by table in
``(table_no, key, page_id)`` order, ``executemany`` in large transactions (journal off
while loading, WAL again after); PostgreSQL: the keys are columns of the page rows
(key_columns.py), so ``pages`` alone, by binary ``COPY`` with the key columns' indexes
dropped and made again after. ``check_loader`` proves on a sample that the rows equal
``add_many``'s.

A finished fill leaves ``<name>.json`` beside it (pages, rows, seconds); a fill without it
is incomplete and is made again.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from simhash_filter import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, canonical_url, url_domain
from simhash_filter.store.encoding import to_sql_int
from simhash_filter.store.key_columns import column_names, index_name, index_sql, key_rows_source

from .corpus import CHUNK, Pool, chunk_signatures, sketch_bytes

SPEC = Fingerprinter().spec
SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"
PG_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
PG_COPY_TRAILER = struct.pack(">h", -1)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def url_of(i: int) -> str:
    """The URL of fill page ``i`` (canonical as is; sorts as its id)."""
    return f"http://p{i:09d}.example/"


def rule_for(kind: str) -> MatchRule:
    """The match rule each index is measured under: the simhash indexes under the rule of
    the multi-index default (k1 = 9); minhash-lsh under its default, no simhash condition
    (``MatchRule.for_distance(64)``)."""
    return MatchRule.for_distance(64) if kind == "minhash-lsh" else MatchRule()


def open_store(url: str, kind: str, **kw: Any) -> FingerprintStore:
    """The store under :func:`rule_for` with the ``kind`` index."""
    return FingerprintStore.open(
        url, StoreOptions(spec=SPEC, rule=rule_for(kind), index=kind, **kw)
    )


def index_items(scheme: Any, fingerprint: int, sketch: bytes | None) -> list[tuple[int, int]]:
    """(table_no, key) pairs a page is stored under, through the scheme's public API."""
    if hasattr(scheme, "index_items"):
        return list(scheme.index_items(fingerprint, sketch))
    return list(enumerate(scheme.index_keys(fingerprint)))


def probe_keys(scheme: Any, fingerprint: int, sketch: bytes | None) -> list[tuple[int, int]]:
    """(table_no, key) pairs a check probes (the sketch where the scheme takes one)."""
    try:
        return list(scheme.probe_keys(fingerprint, sketch))
    except TypeError:
        return list(scheme.probe_keys(fingerprint))


class _Keys:
    """Every page's band keys (signed) in a memory-mapped [n, tables] array.

    With ``kept`` (a path), the keys are kept there for the next fill of the same pages
    and index (``<kept>.done`` and ``<kept>.json``, the table numbers, mark them complete);
    a later fill reads them back and recomputes ``index_items`` for every 1000th page
    only, to check them."""

    def __init__(self, workdir: Path, n: int, scheme: Any, kept: Path | None = None) -> None:
        self.n = n
        self.scheme = scheme
        self.tables: list[int] | None = None
        self.fps = np.empty(n, dtype=np.int64)
        self.keys: Any = None
        self.reused = kept is not None and kept.with_suffix(".done").exists()
        busy = kept is not None and kept.exists() and not self.reused
        self.kept = None if busy else kept
        # one file per fill: two fills at once must not share (truncating a mapped file
        # kills the process that maps it with SIGBUS)
        self.path = self.kept or workdir / f"keys-{os.getpid()}-{n}.tmp.npy"
        if self.reused:
            assert kept is not None
            self.tables = json.loads(kept.with_suffix(".json").read_text())["tables"]
            self.keys = np.load(kept, mmap_mode="r")

    def add_chunk(self, lo: int, fps: list[int], sketches: list[bytes], block: Any) -> None:
        """The keys of pages lo.. (``block``: their table numbers and [P, tables] signed
        keys, None when kept keys are reused: every 1000th page is then recomputed)."""
        self.fps[lo : lo + len(fps)] = [to_sql_int(f) for f in fps]
        if block is None:
            for j in range(-lo % 1000, len(fps), 1000):
                items = index_items(self.scheme, fps[j], sketches[j])
                if [to_sql_int(k) for _t, k in items] != list(self.keys[lo + j]):
                    raise SystemExit(f"page {lo + j}: the kept keys differ from index_items'")
            return
        tables, keys = block
        if self.tables is None:
            self.tables = tables
            self.keys = np.lib.format.open_memmap(
                self.path, mode="w+", dtype=np.int64, shape=(self.n, len(tables))
            )
        if tables != self.tables:
            raise SystemExit(f"pages {lo}..: tables {tables} != {self.tables}")
        self.keys[lo : lo + len(fps)] = keys

    def finish(self) -> None:
        """Every page's keys are in: mark kept keys complete for the next fill."""
        assert self.tables is not None
        if self.kept is not None and not self.reused:
            self.keys.flush()
            self.kept.with_suffix(".json").write_text(json.dumps({"tables": self.tables}))
            self.kept.with_suffix(".done").touch()

    def sorted_tables(self) -> Iterator[tuple[int, Any, Any, Any]]:
        """(table_no, keys, page ids, fingerprints) of each table, in key order."""
        self.finish()
        assert self.tables is not None
        for col, t in enumerate(self.tables):
            keys = np.ascontiguousarray(self.keys[:, col])
            order = np.argsort(keys, kind="stable")  # ids ascending within a key
            yield t, keys[order], order + 1, self.fps[order]

    def close(self) -> None:
        self.keys = None
        if self.kept is None:
            self.path.unlink(missing_ok=True)


_WORK: dict[str, Any] = {}
"""What the forked generator processes inherit: the pool, the seed, the scheme, the cache."""


def _chunk(chunk: int) -> tuple[Any, ...]:
    """One chunk of fill pages (in a generator process): lo, fingerprints, slots, sketches,
    text lengths, and the signed band keys ([P, tables], None when not wanted)."""
    pool, seed, n, scheme = _WORK["pool"], _WORK["seed"], _WORK["n"], _WORK["scheme"]
    lo, hi = chunk * CHUNK, min(n, (chunk + 1) * CHUNK)
    base = _WORK["cache"]
    if base is not None and base.with_suffix(".done").exists():
        fps = np.load(base.with_suffix(".fps.npy"), mmap_mode="r")[lo:hi]
        slots = np.asarray(np.load(base.with_suffix(".slots.npy"), mmap_mode="r")[lo:hi])
        text_len = np.load(base.with_suffix(".len.npy"), mmap_mode="r")[lo:hi]
    else:
        fps, slots, idx = chunk_signatures(pool, seed, chunk)
        text_len = _WORK["lengths"][idx].sum(axis=1) + (idx != pool.size).sum(axis=1) - 1
        fps, slots, text_len = fps[: hi - lo], slots[: hi - lo], text_len[: hi - lo]
    fps_list = [int(f) for f in fps]
    sketches = [sketch_bytes(slots[j]) for j in range(hi - lo)]
    keys = None
    if _WORK["want_keys"]:
        items = [index_items(scheme, f, sk) for f, sk in zip(fps_list, sketches, strict=True)]
        tables = [t for t, _k in items[0]]
        if any([t for t, _k in it] != tables for it in items):
            raise SystemExit(f"chunk {chunk}: pages stored under different tables")
        keys = (tables, np.array([[to_sql_int(k) for _t, k in it] for it in items]))
    return lo, fps_list, slots, sketches, [int(x) for x in text_len], keys


def _pages(
    pool: Pool, seed: int, n: int, cache: Path | None, keys: _Keys, procs: int = 2
) -> Iterator[Any]:
    """(page index, fingerprint, sketch, text length) of fill pages 0..n-1, made by
    ``procs`` forked processes chunk by chunk; their band keys go into ``keys``. With
    ``cache`` (a folder) the composed signatures are kept there for the next fill."""
    import multiprocessing

    base = None if cache is None else cache / f"signatures-s{seed}-{n}"
    done = base is not None and base.with_suffix(".done").exists()
    arrays = None
    if base is not None and not done:
        arrays = [
            np.lib.format.open_memmap(base.with_suffix(suffix), mode="w+", dtype=dt, shape=sh)
            for suffix, dt, sh in (
                (".fps.npy", np.uint64, (n,)),
                (".slots.npy", np.uint16, (n, 256)),
                (".len.npy", np.int32, (n,)),
            )
        ]
    _WORK.update(
        pool=pool, seed=seed, n=n, scheme=keys.scheme, cache=base, want_keys=not keys.reused,
        lengths=np.array([len(t) for t in pool.texts] + [0]),
    )  # fmt: skip
    with multiprocessing.get_context("fork").Pool(procs) as workers:
        for lo, fps, slots, sketches, text_len, block in workers.imap(
            _chunk, range(math.ceil(n / CHUNK))
        ):
            if arrays is not None:
                arrays[0][lo : lo + len(fps)] = fps
                arrays[1][lo : lo + len(fps)] = slots
                arrays[2][lo : lo + len(fps)] = text_len
            keys.add_chunk(lo, fps, sketches, block)
            for j in range(len(fps)):
                yield lo + j, fps[j], sketches[j], text_len[j]
    if base is not None and arrays is not None:
        for array in arrays:
            array.flush()
        base.with_suffix(".done").touch()


def fill_sqlite(
    path: Path,
    kind: str,
    n: int,
    pool: Pool,
    seed: int,
    log: Callable,
    cache: Path | None = None,
    kept: Path | None = None,
) -> dict:
    began = time.perf_counter()
    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    with open_store(f"sqlite:///{path}", kind) as store:
        scheme = store.scheme
    now = datetime.now(UTC).strftime(SQLITE_TIME)
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -1000000"):
        conn.execute(f"PRAGMA {pragma}")
    keys = _Keys(path.parent, n, scheme, kept)
    insert = (
        "INSERT INTO pages (id, url, domain, fingerprint, text_length, sketch, first_seen, "
        "last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    batch: list[tuple[Any, ...]] = []
    conn.execute("BEGIN")
    for i, fp, sketch, length in _pages(pool, seed, n, cache, keys):
        url = url_of(i)
        batch.append((i + 1, url, url[7:-1], to_sql_int(fp), length, sketch, now, now))
        if len(batch) == 50_000:
            conn.executemany(insert, batch)
            batch = []
            if (i + 1) % 1_000_000 == 0:
                conn.execute("COMMIT")
                conn.execute("BEGIN")
                log(f"sqlite {kind} {n:,}: {i + 1:,} pages")
    conn.executemany(insert, batch)
    conn.execute("COMMIT")
    rows = 0
    for t, k, ids, fps in keys.sorted_tables():
        conn.execute("BEGIN")
        for s in range(0, n, 1_000_000):
            conn.executemany(
                "INSERT INTO bands (table_no, key, page_id, fingerprint) VALUES (?, ?, ?, ?)",
                zip(
                    [t] * len(k[s : s + 1_000_000]),
                    k[s : s + 1_000_000].tolist(),
                    ids[s : s + 1_000_000].tolist(),
                    fps[s : s + 1_000_000].tolist(),
                    strict=True,
                ),
            )
        conn.execute("COMMIT")
        rows += n
        log(f"sqlite {kind} {n:,}: table {t} written")
    keys.close()
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return {"pages": n, "band_rows": rows, "seconds": round(time.perf_counter() - began, 1)}


def _page_row(
    page_id: int, url: bytes, domain: bytes, fp: int, length: int, sketch: bytes, now: int,
    keys: bytes, n_keys: int,
) -> bytes:  # fmt: skip
    """One pages row in COPY's binary format: 8 fields, then ``n_keys`` key columns
    (``keys``: their fields, already in the format)."""
    return struct.pack(
        f">hiqi{len(url)}si{len(domain)}siqiii{len(sketch)}siqiq",
        8 + n_keys, 8, page_id, len(url), url, len(domain), domain, 8, fp, 4, length,
        len(sketch), sketch, 8, now, 8, now,
    ) + keys  # fmt: skip


def _key_fields(tables: list[int], n_tables: int) -> np.dtype:
    """COPY's binary fields of the key columns band_0 .. band_<n_tables - 1>: a length and
    an int8 for a table the fill's pages have a key in, the length -1 (NULL) for the rest."""
    fields: list[tuple[str, str]] = []
    for t in range(n_tables):
        fields.append((f"l{t}", ">i4"))
        if t in tables:
            fields.append((f"v{t}", ">i8"))
    return np.dtype(fields)


def fill_pg(
    url: str,
    workdir: Path,
    kind: str,
    n: int,
    pool: Pool,
    seed: int,
    log: Callable,
    cache: Path | None = None,
    kept: Path | None = None,
) -> dict:
    from bench.pg.database import psycopg_connect

    began = time.perf_counter()
    with open_store(url, kind) as store:
        scheme = store.scheme
    n_tables = scheme.n_tables
    now = (datetime.now(UTC) - _PG_EPOCH) // timedelta(microseconds=1)
    keys = _Keys(workdir, n, scheme, kept)
    columns = ", ".join(column_names(n_tables))
    with psycopg_connect(url, autocommit=False) as conn:
        for t in range(n_tables):  # made again once the rows are in: one sorted build each
            conn.execute(f"DROP INDEX {index_name(t)}")
        with conn.cursor().copy(
            "COPY pages (id, url, domain, fingerprint, text_length, sketch, first_seen, "
            f"last_seen, {columns}) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.write(PG_COPY_HEADER)
            buffer = []
            block: Any = None  # the key fields of the pages of one chunk
            for i, fp, sketch, length in _pages(pool, seed, n, cache, keys):
                if i % CHUNK == 0:  # the chunk's keys are in ``keys`` before its pages come
                    assert keys.tables is not None
                    hi = min(n, i + CHUNK)
                    block = np.zeros(hi - i, dtype=_key_fields(keys.tables, n_tables))
                    for t in range(n_tables):
                        block[f"l{t}"] = 8 if t in keys.tables else -1
                    for col, t in enumerate(keys.tables):
                        block[f"v{t}"] = keys.keys[i:hi, col]
                url_i = url_of(i).encode()
                fields = block[i % CHUNK].tobytes()
                row = _page_row(i + 1, url_i, url_i[7:-1], to_sql_int(fp), length, sketch, now,
                                fields, n_tables)  # fmt: skip
                buffer.append(row)
                if len(buffer) == 10_000:
                    copy.write(b"".join(buffer))
                    buffer = []
                if (i + 1) % 1_000_000 == 0:
                    log(f"pg {kind} {n:,}: {i + 1:,} pages")
            copy.write(b"".join(buffer) + PG_COPY_TRAILER)
        conn.execute("SELECT setval(pg_get_serial_sequence('pages', 'id'), %s)", (n,))
        conn.commit()
        conn.execute("SET maintenance_work_mem = '2GB'")
        for t in range(n_tables):
            conn.execute(index_sql(t))
            conn.commit()
            log(f"pg {kind} {n:,}: index of table {t} made")
        rows = n * len(keys.tables or ())
        keys.finish()
    keys.close()
    with psycopg_connect(url) as conn:
        conn.execute("VACUUM ANALYZE")
    return {"pages": n, "band_rows": rows, "seconds": round(time.perf_counter() - began, 1)}


def check_loader(url_a: str, url_b: str, load: Callable[[], Any], kind: str, pool: Pool,
                 seed: int, count: int = 300) -> dict:  # fmt: skip
    """Raise unless the loader's rows (``load()`` into ``url_b``) equal ``add_many``'s
    (into ``url_a``) for the first ``count`` fill pages, timestamps aside."""
    from sqlalchemy import create_engine, text

    with open_store(url_a, kind) as store:
        sample = _Keys(Path(tempfile.gettempdir()), count, store.scheme)
        n_tables = store.scheme.n_tables
        verdicts = store.add_many(
            [
                PageRow(url_of(i), fp, length, sk)
                for i, fp, sk, length in _pages(pool, seed, count, None, sample, procs=1)
            ],
            batch_size=100,
        )
        sample.close()
    kinds = {v.kind.value for v in verdicts}
    if kinds != {"new"}:
        raise SystemExit(f"add_many did not admit every sample page: {kinds}")
    assert all(canonical_url(url_of(i)) == url_of(i) for i in range(count))
    assert all(url_domain(url_of(i)) == url_of(i)[7:-1] for i in range(count))
    load()
    tables = {}
    for url in (url_a, url_b):
        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.connect() as conn:
            tables[url] = {
                "pages": conn.execute(text(
                    "SELECT id, url, domain, fingerprint, text_length, sketch FROM pages "
                    "ORDER BY id"
                )).fetchall(),
                "bands": conn.execute(text(
                    "SELECT table_no, key, page_id, fingerprint FROM "
                    f"{key_rows_source(engine.dialect.name, n_tables)} "
                    "ORDER BY table_no, key, page_id"
                )).fetchall(),
            }  # fmt: skip
        engine.dispose()
    for name in ("pages", "bands"):
        if tables[url_a][name] != tables[url_b][name]:
            raise SystemExit(f"the loader's {name} rows differ from add_many's")
    return {"sample": count, **{k: len(v) for k, v in tables[url_a].items()}}


def write_done(marker: Path, info: dict) -> None:
    marker.write_text(json.dumps(info, indent=2) + "\n")
