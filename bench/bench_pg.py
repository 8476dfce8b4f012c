"""PostgreSQL write path benchmark: the project's check_and_add against a one-round-trip floor.

    .venv/bin/python -m bench.bench_pg             # ~6 min here (--rounds 3: ~13 min)
    .venv/bin/python -m bench.bench_pg --seconds 5 --procs 1,4
    .venv/bin/python -m bench.bench_pg --rule legacy   # the old k=4 configuration

One run, one PostgreSQL server, one throw-away database holding ``--pages`` stored pages,
new random pages for every call. ``--rule`` chooses what the database is made with:

- ``default`` (the project's default): the match rule of ``Config().match_rule()``
  (candidates within k1=9 bits, confirmed when the sketches agree on at least 70% of
  their slots; a page without a sketch within 3 bits) over the default multi-index
  scheme (4 blocks of 16 bits, 308 probe keys a page). Every page, stored or new, has a
  random fingerprint and a valid random sketch of 256 text slots (``encode_sketch``
  without the page part, so the boilerplate check never applies);
- ``legacy``: the configuration this bench was first written for: no rule, k=4 over the
  permuted tables (15 tables), no sketches;
- ``default,k1=7,blocks=4`` (either option alone too): the default rule at another
  candidate distance (``MatchRule.for_distance``) and block count, e.g. the cheaper index
  of 4 blocks probed at radius 1 (68 probe keys a page).

The stored pages are written by a bulk loader here (``COPY`` of the rows ``add_many``
would write: pages, and band rows from ``scheme.index_keys``), after checking that no
two of them match under the rule (random fingerprints have a few pairs within 9 bits
among 100k: their random sketches must reject them), and that on a small sample the
loader's rows equal ``add_many``'s on a second database. The variants:

- ``store``: ``FingerprintStore.check_and_add``, one page a call;
- ``store-2rt`` (only when the store has a server-side function path,
  ``PgPath.server_function``): the same with it switched off (the two-round-trip path);
- ``store-batch16``: ``FingerprintStore.add_many`` of 16 pages a call (the pipeline's
  group commit). Under the default rule 16 pages need ~5,000 key locks, more than
  ``MAX_KEY_LOCKS``, so the store writes them in parts within that bound (3 pages a
  part), one transaction each (the run reports the lock count);
- ``store-async``: as ``store``, opened with ``durable=False`` (``synchronous_commit=off``);
- ``floor``: a minimal hand-written equivalent written here, one server-side PL/pgSQL
  function called once per page (one round trip, autocommit, a prepared statement with
  typed parameters): the same advisory locks, probe, decision (candidates nearest first,
  confirmed by the sketches' agreement, the fallback distance without a sketch) and rows
  as the store. The run first replays a mixed stream (new pages, near copies with
  similar sketches, near fingerprints with dissimilar sketches, pages without sketches,
  unchanged and changed re-crawls) through the store and through the function on two
  fresh databases and stops unless verdicts and table contents agree;
- ``floor-async``: the same with ``SET LOCAL synchronous_commit = off``;
- ``pgbench``: ``pgbench -N -M prepared`` (scale 1: 100k accounts) as a yardstick, when
  installed.

``store-generic`` and ``store-generic-batch16`` (the store's SQLAlchemy path, what
PostgreSQL used before store/pg.py) are left out of the default list to keep the run
short; ``--variants`` still takes them.

Each with 1, 2 and 4 processes (``--procs``), ``--seconds`` each, variants interleaved per
process count, ``--rounds`` times in alternating order (the median round is reported). Per
variant: pages/s (all processes), calls/s, client CPU per page (the worker processes' CPU
time), server CPU per page (utime + stime of the backends serving the benchmark database,
sampled from /proc every 50 ms), latency p50/p99 per call. Round trips and statements per
page and per call come from a separate short run of one process through a counting TCP
proxy (a round trip: the client sends after having received; a statement: an Execute or
Query message). ``near()`` p50/p99 and its round trips are measured at the loaded size,
before the write variants add pages.

Raw results go to ``bench/results/bench_pg-<time>.json``; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import selectors
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from bench._common import ROOT, create_pg_database, drop_pg_database, machine, write_results

if TYPE_CHECKING:
    from simhash_filter.bands import IndexScheme
    from simhash_filter.signature import MatchRule
    from simhash_filter.store import FingerprintStore

SPEC = "bench;random-fingerprints"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_U63 = 1 << 63
_U64 = 1 << 64
SKETCH_SLOTS = 256
"""Text slots of the bench's sketches (the default of simhash_filter.sketch)."""
DEFAULT_VARIANTS = "store,store-2rt,store-batch16,store-async,floor,floor-async,pgbench"

# --------------------------------------------------------------------------- the setup


class Page(NamedTuple):
    """One page to check or store: URL, fingerprint, text length, sketch (or None)."""

    url: str
    fingerprint: int
    text_length: int
    sketch: bytes | None


@dataclass(frozen=True)
class Setup:
    """What the database is made with (``--rule``): the match rule (None: a page within
    k bits is a duplicate), the band blocks, and whether pages carry sketches. ``name``
    is ``legacy``, ``default``, or ``default`` with options: ``default,k1=7,blocks=4``
    (the default rule at another candidate distance, ``MatchRule.for_distance``)."""

    name: str

    def _options(self) -> dict[str, int]:
        kind, *options = self.name.split(",")
        if kind not in ("default", "legacy") or (kind == "legacy" and options):
            raise ValueError(f"--rule: not a rule: {self.name!r}")
        values = dict(option.partition("=")[::2] for option in options)
        if not set(values) <= {"k1", "blocks"}:
            raise ValueError(f"--rule: options are k1= and blocks=, got {self.name!r}")
        return {key: int(value) for key, value in values.items()}

    @property
    def rule(self) -> MatchRule | None:
        from simhash_filter.config import Config
        from simhash_filter.signature import MatchRule

        if not self.sketches:
            return None
        k1 = self._options().get("k1")
        return Config().match_rule() if k1 is None else MatchRule.for_distance(k1)

    @property
    def blocks(self) -> int | None:
        return self._options().get("blocks")

    @property
    def sketches(self) -> bool:
        return self.name.split(",")[0] == "default"

    def open(
        self, url: str, *, create: bool = True, durable: bool | None = None
    ) -> FingerprintStore:
        """The store as a crawler opens it (rule given; index and blocks: the defaults)."""
        from simhash_filter.store import FingerprintStore

        return FingerprintStore.open(
            url, spec=SPEC, rule=self.rule, blocks=self.blocks, create=create, durable=durable
        )

    def judge_params(self, scheme: IndexScheme) -> tuple[int, int, float, int]:
        """The floor's (radius, candidate_distance, min_similarity, fallback_distance).
        Without a rule, no page has a sketch, so "within k, by distance alone" is the
        fallback at k."""
        rule = self.rule
        if rule is None:
            k = scheme.max_distance
            return k, k, 1.0, k
        return (
            rule.max_distance,
            rule.candidate_distance,
            rule.min_similarity,
            rule.fallback_distance,
        )

    def sketch(self, rng: random.Random) -> bytes | None:
        return random_sketch(rng) if self.sketches else None


def random_sketch(rng: random.Random) -> bytes:
    """A valid sketch of random slots (no page part)."""
    import numpy as np

    from simhash_filter.signature import encode_sketch

    return encode_sketch(np.frombuffer(rng.randbytes(2 * SKETCH_SLOTS), dtype="<u2"))


def similar_sketch(rng: random.Random, sketch: bytes, changed: int) -> bytes:
    """``sketch`` with ``changed`` of its text slots replaced by other values."""
    import numpy as np

    from simhash_filter.signature import decode_sketch, encode_sketch

    slots = decode_sketch(sketch).text.copy()
    for i in rng.sample(range(len(slots)), changed):
        slots[i] = (int(slots[i]) + rng.randint(1, 0xFFFF)) & 0xFFFF
    return encode_sketch(np.asarray(slots, dtype=np.uint16))


# --------------------------------------------------------------------------- the floor

FLOOR_SQL = r"""
CREATE OR REPLACE FUNCTION sf_bench_judge(
    d int4, q bytea, s bytea, p_candidate int4, p_min_similarity float8, p_fallback int4,
    OUT is_match bool, OUT similarity float8)
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
    -- batch.Judge: with both sketches, a candidate within candidate_distance is a match
    -- when the share of equal 16-bit text slots (after the 5-byte header) reaches
    -- min_similarity; without either sketch, the distance alone within fallback_distance
    IF q IS NOT NULL AND s IS NOT NULL THEN
        IF d <= p_candidate THEN
            SELECT count(*) FILTER (WHERE substr(q, 6 + 2 * i, 2) = substr(s, 6 + 2 * i, 2))
                   ::float8 / h.n
            INTO similarity
            FROM (SELECT 1 << get_byte(q, 2) AS n) AS h, generate_series(0, h.n - 1) AS i
            GROUP BY h.n;
            is_match := similarity >= p_min_similarity;
        ELSE
            is_match := false;
        END IF;
    ELSE
        is_match := d <= p_fallback;
    END IF;
    IF NOT is_match THEN
        similarity := NULL;
    END IF;
END
$f$;

CREATE OR REPLACE FUNCTION sf_bench_check(
    p_url text, p_domain text, p_fp int8, p_len int4, p_sketch bytea,
    p_index_keys int8[], p_probe_tables int2[], p_probe_keys int8[],
    p_locks int8[], p_lock_shared bool[], p_global int8,
    p_radius int4, p_candidate int4, p_min_similarity float8, p_fallback int4,
    p_now timestamptz, p_async bool)
RETURNS TABLE(kind text, match_id int8, match_url text, match_fp int8, match_distance int4,
              match_similarity float8, previous int8)
LANGUAGE plpgsql AS $f$
DECLARE
    v_id int8;
    v_fp int8;
    v_sketch bytea;
    v_match bool;
    v_similarity float8;
    c record;
BEGIN
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_locks IS NULL THEN  -- more key locks than MAX_KEY_LOCKS: the database-wide one
        PERFORM pg_advisory_xact_lock(p_global);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(p_global);
        -- the store's locks.write_locks: URL and index keys exclusive, probe keys shared
        PERFORM count(CASE WHEN s THEN pg_advisory_xact_lock_shared(x)
                           ELSE pg_advisory_xact_lock(x) END)
        FROM unnest(p_locks, p_lock_shared) WITH ORDINALITY AS u(x, s, i);
    END IF;
    -- the URL's stored version: UNCHANGED when it matches
    SELECT id, fingerprint, sketch INTO v_id, v_fp, v_sketch FROM pages WHERE url = p_url;
    IF v_id IS NOT NULL THEN
        SELECT m.is_match INTO v_match
        FROM sf_bench_judge(bit_count((v_fp # p_fp)::bit(64))::int4, p_sketch, v_sketch,
                            p_candidate, p_min_similarity, p_fallback) AS m;
        IF v_match THEN
            UPDATE pages SET last_seen = p_now, sketch = coalesce(sketch, p_sketch)
            WHERE id = v_id;
            RETURN QUERY SELECT 'unchanged'::text, NULL::int8, NULL::text, NULL::int8,
                                NULL::int4, NULL::float8, v_fp;
            RETURN;
        END IF;
    END IF;
    -- other pages within the radius, nearest first, then by URL: the first match is kept
    FOR c IN
        SELECT h.page_id, p.url, h.fingerprint, h.d, p.sketch
        FROM (SELECT DISTINCT b.page_id, b.fingerprint,
                     bit_count((b.fingerprint # p_fp)::bit(64))::int4 AS d
              FROM unnest(p_probe_tables, p_probe_keys) AS q(t, key)
              JOIN bands b ON b.table_no = q.t AND b.key = q.key) AS h
        JOIN pages p ON p.id = h.page_id
        WHERE h.d <= p_radius AND h.page_id IS DISTINCT FROM v_id
        ORDER BY h.d, p.url COLLATE "C"
    LOOP
        SELECT m.is_match, m.similarity INTO v_match, v_similarity
        FROM sf_bench_judge(c.d, p_sketch, c.sketch, p_candidate, p_min_similarity,
                            p_fallback) AS m;
        IF v_match THEN
            INSERT INTO duplicates (url, domain, fingerprint, duplicate_of, distance,
                                    similarity, seen_at)
            VALUES (p_url, p_domain, p_fp, c.page_id, c.d, v_similarity, p_now);
            RETURN QUERY SELECT 'duplicate'::text, c.page_id, c.url, c.fingerprint, c.d,
                                v_similarity, NULL::int8;
            RETURN;
        END IF;
    END LOOP;
    IF v_id IS NOT NULL THEN
        UPDATE pages SET fingerprint = p_fp, text_length = p_len, sketch = p_sketch,
                         last_seen = p_now
        WHERE id = v_id;
        -- bands has no index on page_id: a scan, only ever taken by the equivalence replay
        DELETE FROM bands WHERE page_id = v_id;
        INSERT INTO bands (table_no, key, page_id, fingerprint)
        SELECT (t - 1)::int2, key, v_id, p_fp
        FROM unnest(p_index_keys) WITH ORDINALITY AS q(key, t);
        RETURN QUERY SELECT 'changed'::text, NULL::int8, NULL::text, NULL::int8, NULL::int4,
                            NULL::float8, v_fp;
        RETURN;
    END IF;
    INSERT INTO pages (url, domain, fingerprint, text_length, sketch, first_seen, last_seen)
    VALUES (p_url, p_domain, p_fp, p_len, p_sketch, p_now, p_now) RETURNING id INTO v_id;
    INSERT INTO bands (table_no, key, page_id, fingerprint)
    SELECT (t - 1)::int2, key, v_id, p_fp FROM unnest(p_index_keys) WITH ORDINALITY AS q(key, t);
    RETURN QUERY SELECT 'new'::text, NULL::int8, NULL::text, NULL::int8, NULL::int4,
                        NULL::float8, NULL::int8;
END
$f$;
"""

FLOOR_CALL = (
    "SELECT * FROM sf_bench_check(%s::text, %s::text, %s::int8, %s::int4, %s::bytea, "
    "%s::int8[], %s::int2[], %s::int8[], %s::int8[], %s::bool[], %s::int8, "
    "%s::int4, %s::int4, %s::float8, %s::int4, %s::timestamptz, %s::bool)"
)


def signed(value: int) -> int:
    return value - _U64 if value >= _U63 else value


def int8_literal(values: Iterable[int]) -> str:
    """Unsigned or signed 64-bit ints as the text of an ``int8[]`` literal (cast on the
    server: one string instead of a typed wrapper per element, as the store sends them)."""
    return "{" + ",".join([str(signed(v)) for v in values]) + "}"


def bool_literal(values: Iterable[bool]) -> str:
    """Booleans as the text of a ``bool[]`` literal (as the store sends its lock modes)."""
    return "{" + ",".join(["t" if value else "f" for value in values]) + "}"


def unsigned(value: int | None) -> int | None:
    if value is None:
        return None
    return value + _U64 if value < 0 else value


class FloorClient:
    """One psycopg connection calling ``sf_bench_check`` once per page."""

    def __init__(self, conninfo: str, setup: Setup, *, durable: bool = True) -> None:
        import psycopg
        from psycopg.types.numeric import Int4, Int8

        from simhash_filter.store import FingerprintStore

        self._int4, self._int8 = Int4, Int8
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.durable = durable
        store = FingerprintStore.open_existing(sqlalchemy_url(conninfo))
        self.scheme = store.scheme
        store.close()
        self.judge_params = setup.judge_params(self.scheme)
        self.probe_tables = int8_literal(t for t, _ in self.scheme.probe_keys(0))

    def check(self, page: Page) -> tuple[Any, ...]:
        from simhash_filter.store import canonical_url, url_domain
        from simhash_filter.store.locks import GLOBAL_LOCK, MAX_KEY_LOCKS, write_locks

        Int4, Int8 = self._int4, self._int8
        canonical = canonical_url(page.url)
        fingerprint = page.fingerprint
        index_keys = self.scheme.index_keys(fingerprint)
        probe_keys = self.scheme.probe_keys(fingerprint)
        locks = write_locks([(canonical, list(enumerate(index_keys)), probe_keys)])
        too_many = len(locks.ids) > MAX_KEY_LOCKS
        radius, candidate, min_similarity, fallback = self.judge_params
        row = self.conn.execute(
            FLOOR_CALL,
            (
                canonical,
                url_domain(canonical),
                Int8(signed(fingerprint)),
                Int4(page.text_length),
                page.sketch,
                int8_literal(index_keys),
                self.probe_tables,
                int8_literal(key for _, key in probe_keys),
                None if too_many else int8_literal(locks.ids),
                None if too_many else bool_literal(locks.shared),
                Int8(GLOBAL_LOCK),
                Int4(radius),
                Int4(candidate),
                float(min_similarity),
                Int4(fallback),
                datetime.now(UTC),
                not self.durable,
            ),
            prepare=True,
        ).fetchone()
        assert row is not None
        return tuple(row)

    def close(self) -> None:
        self.conn.close()


# --------------------------------------------------------------------------- databases


def sqlalchemy_url(conninfo: str) -> str:
    return conninfo.replace("postgresql://", "postgresql+psycopg://", 1)


def libpq_url(url: str) -> str:
    return re.sub(r"^postgresql\+\w+://", "postgresql://", url)


def database_name(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).database)


def psycopg_connect(url: str, *, autocommit: bool = True) -> Any:
    import psycopg

    return psycopg.connect(libpq_url(url), autocommit=autocommit)


def install_floor(url: str) -> None:
    with psycopg_connect(url) as conn:
        conn.execute(FLOOR_SQL)


def has_server_function(url: str, setup: Setup) -> bool:
    """Whether this checkout's store has the switchable server-side function path."""
    with setup.open(url, create=False) as store:
        return hasattr(store._pg, "server_function")


# --------------------------------------------------------------------------- loading


def stored_pages(setup: Setup, count: int, seed: int) -> Iterator[Page]:
    """The ``count`` pages loaded before the run: random fingerprints (and sketches)."""
    rng = random.Random(seed)
    for i in range(count):
        yield Page(f"http://stored.example/{i}", rng.getrandbits(64), 1000, setup.sketch(rng))


def near_pairs(fingerprints: Sequence[int], scheme: IndexScheme) -> list[tuple[int, int, int]]:
    """Every pair (i, j, distance), i < j, within ``scheme.max_distance`` bits, found
    with the scheme's own probe (every index key within each table's probe masks) in
    NumPy."""
    import numpy as np

    n = len(fingerprints)
    if n < 2:
        return []
    masks = scheme.probe_keys(0)  # (table, key ^ mask) is a probe key of key's page
    probe = fingerprints[n // 2]
    own = scheme.index_keys(probe)
    assert scheme.probe_keys(probe) == [(t, own[t] ^ m) for t, m in masks], "not an xor probe"
    fps = np.array(fingerprints, dtype=np.uint64)
    keys = np.array([scheme.index_keys(fp) for fp in fingerprints], dtype=np.uint64)
    found: set[tuple[int, int, int]] = set()
    ids = np.arange(n)
    for t in range(keys.shape[1]):
        order = np.argsort(keys[:, t], kind="stable")
        ordered = keys[order, t]
        for _, mask in (tm for tm in masks if tm[0] == t):
            target = keys[:, t] ^ np.uint64(mask)
            lo = np.searchsorted(ordered, target, side="left")
            hi = np.searchsorted(ordered, target, side="right")
            counts = hi - lo
            total = int(counts.sum())
            if not total:
                continue
            src = np.repeat(ids, counts)
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            dst = order[np.repeat(lo, counts) + offsets]
            keep = src < dst
            src, dst = src[keep], dst[keep]
            distance = np.bitwise_count(fps[src] ^ fps[dst])
            near = distance <= scheme.max_distance
            found.update(
                zip(src[near].tolist(), dst[near].tolist(), distance[near].tolist(), strict=True)
            )
    return sorted(found)


def check_no_matches(pages: Sequence[Page], setup: Setup, scheme: IndexScheme) -> dict[str, int]:
    """Raise unless no stored page matches an earlier one under the rule (then
    ``add_many`` would admit every page, as the bulk loader does)."""
    from simhash_filter.store.batch import Judge

    judge = Judge(scheme.max_distance, setup.rule)
    pairs = near_pairs([page.fingerprint for page in pages], scheme)
    for i, j, distance in pairs:
        if judge(distance, pages[j].sketch, pages[i].sketch) is not None:
            raise SystemExit(
                f"stored page {j} matches page {i} (distance {distance}): add_many would "
                "drop it; choose another --seed"
            )
    return {"pairs_within_radius": len(pairs), "matched": 0}


def bulk_load(url: str, setup: Setup, pages: Sequence[Page]) -> None:
    """Make the database and write ``pages`` as ``add_many`` would (all NEW): one page
    row each (ids in order) and one band row per table, by COPY."""
    from simhash_filter.store import canonical_url, url_domain
    from simhash_filter.store.schema import to_sql_int

    with setup.open(url) as store:
        scheme = store.scheme
    now = datetime.now(UTC)
    with psycopg_connect(url, autocommit=False) as conn:
        with conn.cursor().copy(
            "COPY pages (url, domain, fingerprint, text_length, sketch, first_seen, last_seen) "
            "FROM STDIN"
        ) as copy:
            for page in pages:
                canonical = canonical_url(page.url)
                copy.write_row(
                    (
                        canonical,
                        url_domain(canonical),
                        to_sql_int(page.fingerprint),
                        page.text_length,
                        page.sketch,
                        now,
                        now,
                    )
                )
        ids = dict(conn.execute("SELECT url, id FROM pages").fetchall())
        with conn.cursor().copy(
            "COPY bands (table_no, key, page_id, fingerprint) FROM STDIN"
        ) as copy:
            for page in pages:
                page_id = ids[canonical_url(page.url)]
                fp = to_sql_int(page.fingerprint)
                for t, key in enumerate(scheme.index_keys(page.fingerprint)):
                    copy.write_row((t, to_sql_int(key), page_id, fp))
        conn.commit()
    with psycopg_connect(url) as conn:
        conn.execute("VACUUM ANALYZE")


def check_loader(setup: Setup, sample: Sequence[Page]) -> dict[str, Any]:
    """Raise unless the bulk loader writes exactly ``add_many``'s rows (timestamps
    aside) for ``sample``, on two fresh databases."""
    from simhash_filter.store import PageRow

    urls = [create_pg_database("sf_bench_load"), create_pg_database("sf_bench_load")]
    try:
        with setup.open(urls[0]) as store:
            verdicts = store.add_many([PageRow(*page) for page in sample], batch_size=100)
        kinds = Counter(v.kind.value for v in verdicts)
        if kinds != {"new": len(sample)}:
            raise SystemExit(f"add_many did not admit every sample page: {dict(kinds)}")
        bulk_load(urls[1], setup, sample)
        a, b = table_contents(urls[0]), table_contents(urls[1])
        for table in a:
            if a[table] != b[table]:
                raise SystemExit(f"the bulk loader's {table} rows differ from add_many's")
        return {"sample": len(sample), "rows": {t: len(r) for t, r in a.items()}}
    finally:
        for url in urls:
            drop_pg_database(url)


def load_pages(url: str, setup: Setup, count: int, seed: int) -> dict[str, Any]:
    """Check the loader on a sample, then load ``count`` pages; what it checked and took."""
    start = time.perf_counter()
    pages = list(stored_pages(setup, count, seed))
    loader = check_loader(setup, pages[:300])
    with setup.open(url) as store:
        scheme = store.scheme
    checked = check_no_matches(pages, setup, scheme)
    bulk_load(url, setup, pages)
    return {
        "seconds": round(time.perf_counter() - start, 1),
        "scheme": scheme.describe(),
        "loader_check": loader,
        **checked,
    }


# --------------------------------------------------------------------------- equivalence


def mixed_stream(setup: Setup, seed: int, count: int) -> list[tuple[str, Page]]:
    """(case, page) pairs that hit every verdict and every branch of the rule: new pages;
    near copies with similar sketches (dropped; some at the similarity threshold); near
    fingerprints with dissimilar sketches (kept); pages without a sketch (the fallback
    distance); re-crawls within reach (unchanged) and beyond it (changed); re-crawls
    that became a copy of another page."""
    rng = random.Random(seed)
    stream: list[tuple[str, Page]] = []
    seen: list[Page] = []
    radius = setup.judge_params(setup_scheme(setup))[0]
    slots = SKETCH_SLOTS

    def flip(fp: int, bits: int) -> int:
        for bit in rng.sample(range(64), bits):
            fp ^= 1 << bit
        return fp

    def sketch_like(base: bytes | None) -> bytes | None:
        if base is None or rng.random() < 0.15:
            return setup.sketch(rng) if rng.random() < 0.5 else None
        # below, at and above the threshold (0.7 of 256 slots: 180 equal confirm, 179 not)
        changed = rng.choice([0, 5, 20, 60, 76, 77, 120])
        return similar_sketch(rng, base, min(changed, slots))

    for i in range(count):
        roll = rng.random()
        if not seen or roll < 0.25:
            case = "new"
            page = Page(
                f"http://eq{i % 7}.example/p{i}",
                rng.getrandbits(64),
                rng.randint(0, 5000),
                setup.sketch(rng) if rng.random() < 0.8 else None,
            )
        elif roll < 0.45:
            case = "near copy"
            base = rng.choice(seen)
            page = Page(
                f"http://copy.example/c{i}",
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                sketch_like(base.sketch),
            )
        elif roll < 0.55:
            case = "near, dissimilar sketch"
            base = rng.choice(seen)
            page = Page(
                f"http://other.example/o{i}",
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                setup.sketch(rng),
            )
        elif roll < 0.65:
            case = "near, no sketch"
            base = rng.choice(seen)
            page = Page(
                f"http://bare.example/b{i}",
                flip(base.fingerprint, rng.randint(0, 5)),
                rng.randint(0, 5000),
                None,
            )
        elif roll < 0.8:
            case = "re-crawl within reach"
            base = rng.choice(seen)
            page = Page(
                base.url,
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                sketch_like(base.sketch),
            )
        elif roll < 0.9:
            case = "re-crawl beyond reach"
            base = rng.choice(seen)
            page = Page(
                base.url,
                flip(base.fingerprint, rng.randint(radius + 1, 20)),
                rng.randint(0, 5000),
                setup.sketch(rng) if rng.random() < 0.8 else None,
            )
        else:
            case = "re-crawl into a copy"
            other = rng.choice(seen)
            page = Page(
                rng.choice(seen).url,
                flip(other.fingerprint, rng.randint(0, 3)),
                rng.randint(0, 5000),
                sketch_like(other.sketch),
            )
        stream.append((case, page))
        seen.append(page)
    return stream


def setup_scheme(setup: Setup) -> IndexScheme:
    """The scheme a new database gets under ``setup`` (what ``open`` makes)."""
    from simhash_filter.bands import DEFAULT_MAX_DISTANCE, make_scheme

    rule = setup.rule
    return make_scheme(
        None,
        max_distance=DEFAULT_MAX_DISTANCE if rule is None else rule.max_distance,
        blocks=setup.blocks,
    )


def table_contents(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row that matters, in a stable order (timestamps only as "seen again")."""
    with psycopg_connect(url) as conn:
        return {
            "pages": conn.execute(
                "SELECT id, url, domain, fingerprint, text_length, sketch, "
                "last_seen > first_seen FROM pages ORDER BY id"
            ).fetchall(),
            "bands": conn.execute(
                "SELECT table_no, key, page_id, fingerprint FROM bands "
                "ORDER BY table_no, key, page_id"
            ).fetchall(),
            "duplicates": conn.execute(
                "SELECT id, url, domain, fingerprint, duplicate_of, distance, similarity "
                "FROM duplicates ORDER BY id"
            ).fetchall(),
        }


def check_floor_equivalence(setup: Setup, count: int = 600) -> dict[str, Any]:
    """Replay one mixed stream through the store and through the floor function on two
    fresh databases; raise unless verdicts and rows agree, and unless the stream reached
    every branch (see :func:`mixed_stream`)."""
    stream = mixed_stream(setup, 7, count)
    urls = [create_pg_database("sf_bench_eq"), create_pg_database("sf_bench_eq")]
    try:
        with setup.open(urls[0]) as store:
            expected = []
            for _, page in stream:
                v = store.check_and_add(
                    page.url, page.fingerprint, text_length=page.text_length, sketch=page.sketch
                )
                m = v.duplicate_of
                expected.append(
                    (
                        v.kind.value,
                        m.page_id if m else None,
                        m.url if m else None,
                        m.fingerprint if m else None,
                        m.distance if m else None,
                        m.similarity if m else None,
                        v.previous_fingerprint,
                    )
                )
        setup.open(urls[1]).close()
        install_floor(urls[1])
        floor = FloorClient(libpq_url(urls[1]), setup)
        got = []
        for _, page in stream:
            kind, mid, murl, mfp, md, msim, prev = floor.check(page)
            got.append((kind, mid, murl, unsigned(mfp), md, msim, unsigned(prev)))
        floor.close()
        bad = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        if bad:
            i = bad[0]
            raise SystemExit(
                f"floor disagrees with the store at call {i} ({stream[i][0]}): {stream[i][1]} "
                f"-> store {expected[i]}, floor {got[i]}"
            )
        a, b = table_contents(urls[0]), table_contents(urls[1])
        for table in a:
            if a[table] != b[table]:
                raise SystemExit(f"floor and store rows differ in {table}")
        outcomes = Counter(
            f"{case} -> {verdict[0]}" + (", by sketch" if verdict[5] is not None else "")
            for (case, _), verdict in zip(stream, expected, strict=True)
        )
        needed = [
            "new -> new",
            "re-crawl within reach -> unchanged",
            "re-crawl beyond reach -> changed",
        ]
        if setup.sketches:
            needed += [
                "near copy -> duplicate, by sketch",
                "near, dissimilar sketch -> new",
                "near, no sketch -> duplicate",
                "near, no sketch -> new",
            ]
        else:
            needed += ["near copy -> duplicate"]
        missing = [outcome for outcome in needed if not outcomes[outcome]]
        if missing:
            raise SystemExit(f"the equivalence stream missed {missing}: {dict(outcomes)}")
        return {
            "calls": count,
            "verdicts": dict(Counter(v[0] for v in expected)),
            "outcomes": dict(sorted(outcomes.items())),
            "rows": {t: len(r) for t, r in a.items()},
        }
    finally:
        for url in urls:
            drop_pg_database(url)


# --------------------------------------------------------------------------- workers


def worker_main(spec: dict[str, Any]) -> None:
    """One benchmark process: warm up, say "ready", wait for "go", run, print JSON."""
    from simhash_filter.store import PageRow

    kind, url, seconds = spec["kind"], spec["url"], spec["seconds"]
    setup = Setup(spec["rule"])
    calls_limit = spec.get("calls")
    rng = random.Random(spec["seed"])
    prefix = f"http://w{spec['seed']}.new.example/"
    counter = iter(range(10**9))

    def new_page() -> Page:
        return Page(f"{prefix}{next(counter)}", rng.getrandbits(64), 1000, setup.sketch(rng))

    call: Callable[[], int]
    closer: Callable[[], None]
    if kind.startswith("floor"):
        floor = FloorClient(libpq_url(url), setup, durable=kind == "floor")

        def call() -> int:
            floor.check(new_page())
            return 1

        closer = floor.close
    else:
        store = setup.open(url, create=False, durable=False if kind == "store-async" else None)
        if "-generic" in kind:
            store._pg = None  # the SQLAlchemy path (statements.py), as before store/pg.py
        if kind == "store-2rt":
            store._pg.server_function = False  # type: ignore[union-attr]
        if kind.endswith("batch16"):

            def call() -> int:
                store.add_many([PageRow(*new_page()) for _ in range(16)], batch_size=16)
                return 16

        elif kind.startswith("near"):

            def call() -> int:
                store.near(rng.getrandbits(64))
                return 1

        else:

            def call() -> int:
                page = new_page()
                store.check_and_add(
                    page.url, page.fingerprint, text_length=page.text_length, sketch=page.sketch
                )
                return 1

        closer = store.close

    for _ in range(spec.get("warmup", 30)):
        call()
    print("ready", flush=True)
    sys.stdin.readline()
    latencies: list[int] = []
    pages = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        t0 = time.perf_counter_ns()
        pages += call()
        latencies.append(time.perf_counter_ns() - t0)
        if calls_limit is not None:
            if len(latencies) >= calls_limit:
                break
        elif time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    closer()
    print(
        json.dumps(
            {
                "pages": pages,
                "calls": len(latencies),
                "elapsed": elapsed,
                "cpu": cpu,
                "latencies_ns": latencies,
            }
        ),
        flush=True,
    )


@dataclass
class Cell:
    """One variant at one process count."""

    variant: str
    procs: int
    pages: int = 0
    calls: int = 0
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def row(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "procs": self.procs,
            "pages": self.pages,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "pages_per_s": round(self.rate, 1),
            "calls_per_s": round(self.calls / self.seconds, 1) if self.seconds else 0.0,
            "client_cpu_ms_per_page": round(1000 * self.client_cpu / max(1, self.pages), 3),
            "server_cpu_ms_per_page": round(1000 * self.server_cpu / max(1, self.pages), 3),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            **self.extra,
        }


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- server CPU


def _backend_pids(database: str) -> list[int]:
    """Backends serving ``database`` (from their process titles)."""
    pids = []
    needle = f" {database} ".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                title = f.read()
        except OSError:
            continue
        if title.startswith(b"postgres: ") and needle in title:
            pids.append(int(entry.name))
    return pids


def _cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


class BackendCpu:
    """CPU time of the backends of one database over a window, sampled every 50 ms (a
    backend that exits loses at most its last 50 ms; one that starts counts whole)."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = False

    def _sample(self) -> None:
        for pid in _backend_pids(self.database):
            cpu = _cpu_seconds(pid)
            if cpu is None:
                continue
            if pid not in self.first:
                self.first[pid] = cpu if not self._started else 0.0
            self.last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> BackendCpu:
        self._sample()
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


# --------------------------------------------------------------------------- runs


def start_workers(specs: list[dict[str, Any]]) -> list[subprocess.Popen[str]]:
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.bench_pg", "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for spec in specs
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            _, err = proc.communicate(timeout=60)
            raise RuntimeError(f"worker failed: {line} {err[-3000:]}")
    return procs


def finish_workers(procs: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed: {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def go(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def run_python_cell(
    variant: str, setup: Setup, url: str, database: str, n_procs: int, seconds: float, seed: int
) -> Cell:
    specs = [
        {"kind": variant, "rule": setup.name, "url": url, "seconds": seconds, "seed": seed + w}
        for w in range(n_procs)
    ]
    procs = start_workers(specs)
    with BackendCpu(database) as server:
        go(procs)
        reports = finish_workers(procs)
    latencies = [ns / 1e6 for r in reports for ns in r["latencies_ns"]]
    return Cell(
        variant=variant,
        procs=n_procs,
        pages=sum(r["pages"] for r in reports),
        calls=sum(r["calls"] for r in reports),
        seconds=max(r["elapsed"] for r in reports),
        client_cpu=sum(r["cpu"] for r in reports),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


def pgbench_binary() -> str | None:
    return shutil.which("pgbench")


def pgbench_args(url: str) -> list[str]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    args = ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres"]
    return [*args, u.database or "postgres"]


def pgbench_env(url: str) -> dict[str, str]:
    from sqlalchemy.engine import make_url

    env = dict(os.environ)
    password = make_url(url).password
    if password:
        env["PGPASSWORD"] = str(password)
    return env


def run_pgbench_cell(binary: str, url: str, database: str, n_procs: int, seconds: float) -> Cell:
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            binary, "-N", "-M", "prepared", "-n", "-c", str(n_procs), "-j", str(min(n_procs, 2)),
            "-T", str(max(1, round(seconds))), "--log", f"--log-prefix={tmp}/pgb",
            *pgbench_args(url),
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with BackendCpu(database) as server:
            result = subprocess.run(
                args, capture_output=True, text=True, env=pgbench_env(url), timeout=600
            )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            raise RuntimeError(result.stderr[-2000:])
        latencies: list[float] = []
        for path in Path(tmp).glob("pgb*"):
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3:
                    latencies.append(int(parts[2]) / 1000)
    done = re.search(r"number of transactions actually processed: (\d+)", result.stdout)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", result.stdout)
    pages = int(done.group(1)) if done else len(latencies)
    rate = float(tps.group(1)) if tps else 0.0
    return Cell(
        variant="pgbench -N",
        procs=n_procs,
        pages=pages,
        calls=pages,
        seconds=pages / rate if rate else seconds,
        client_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


# --------------------------------------------------------------------------- round trips


class CountingProxy:
    """A TCP proxy in front of PostgreSQL that counts, over all its connections, round
    trips and statements (Execute and Query messages of the frontend protocol; the server
    must not use SSL).

    A round trip: the client sends after having received, and after having asked for a
    response (its last message was a Sync, a Flush, a simple Query or the start-up
    message). The second condition keeps a large result from counting twice: the server
    streams rows once its send buffer fills, which may be before the client's Flush or
    Sync of the same request has reached it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.round_trips = 0
        self.statements = 0
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.round_trips, self.statements

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, None)
        peers: dict[socket.socket, tuple[socket.socket, dict[str, Any], bool]] = {}
        while not self._stop:
            for key, _ in sel.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    server = socket.create_connection(self.target)
                    for s in (client, server):
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    state: dict[str, Any] = {
                        "last": "server",
                        "buf": b"",
                        "started": False,
                        "waiting": True,
                    }
                    peers[client] = (server, state, True)
                    peers[server] = (client, state, False)
                    sel.register(client, selectors.EVENT_READ, None)
                    sel.register(server, selectors.EVENT_READ, None)
                    continue
                if sock not in peers:  # closed with its peer earlier in this round
                    continue
                other, state, from_client = peers[sock]
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for s in (sock, other):
                        sel.unregister(s)
                        s.close()
                        peers.pop(s, None)
                    continue
                with self._lock:
                    if from_client:
                        if state["last"] == "server" and state["waiting"]:
                            self.round_trips += 1
                        state["last"] = "client"
                        self.statements += self._parse(state, data)
                    else:
                        state["last"] = "server"
                other.sendall(data)

    @staticmethod
    def _parse(state: dict[str, Any], data: bytes) -> int:
        buf = state["buf"] + data
        count = 0
        state["waiting"] = False  # until a complete message that asks for a response
        while True:
            if not state["started"]:  # untyped: SSL/GSS requests, then the startup message
                if len(buf) < 8:
                    break
                length, code = struct.unpack("!ii", buf[:8])
                if len(buf) < length:
                    break
                buf = buf[length:]
                if code not in (80877103, 80877104, 80877102):
                    state["started"] = True
                state["waiting"] = True
                continue
            if len(buf) < 5:
                break
            kind = buf[:1]
            (length,) = struct.unpack("!i", buf[1:5])
            if len(buf) < 1 + length:
                break
            if kind in (b"E", b"Q"):
                count += 1
            state["waiting"] = kind in (b"S", b"H", b"Q", b"p")
            buf = buf[1 + length :]
        state["buf"] = buf
        return count

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.listener.close()


def count_round_trips(
    variant: str, setup: Setup, url: str, calls: int, seed: int
) -> dict[str, float]:
    """Round trips and statements per page and per call of one worker, through the
    counting proxy."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        spec = {
            "kind": variant,
            "rule": setup.name,
            "url": proxied,
            "seconds": 0,
            "calls": calls,
            "seed": seed,
        }
        procs = start_workers([spec])
        rt0, st0 = proxy.snapshot()
        go(procs)
        (report,) = finish_workers(procs)
        time.sleep(0.2)  # let the proxy pass on the close
        rt1, st1 = proxy.snapshot()
    finally:
        proxy.close()
    pages, calls = report["pages"], report["calls"]
    return {
        "round_trips_per_page": round((rt1 - rt0) / pages, 3),
        "statements_per_page": round((st1 - st0) / pages, 3),
        "round_trips_per_call": round((rt1 - rt0) / calls, 3),
    }


def count_pgbench_round_trips(binary: str, url: str, transactions: int) -> dict[str, float]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        subprocess.run(
            [
                binary,
                "-N",
                "-M",
                "prepared",
                "-n",
                "-c",
                "1",
                "-t",
                str(transactions),
                *pgbench_args(proxied),
            ],
            capture_output=True,
            check=True,
            env=pgbench_env(url),
            timeout=300,
        )
        time.sleep(0.2)
        rt, st = proxy.snapshot()
    finally:
        proxy.close()
    # the connection set-up's few round trips are included (< 0.01 per transaction)
    return {
        "round_trips_per_page": round(rt / transactions, 3),
        "statements_per_page": round(st / transactions, 3),
        "round_trips_per_call": round(rt / transactions, 3),
    }


def measure_near(kind: str, setup: Setup, url: str, database: str, calls: int) -> dict[str, Any]:
    """near() latency of one process at the stored pages, and its round trips."""
    spec = {"kind": kind, "rule": setup.name, "url": url, "seconds": 0, "calls": calls, "seed": 77}
    procs = start_workers([spec])
    with BackendCpu(database) as server:
        go(procs)
        (report,) = finish_workers(procs)
    latencies = [ns / 1e6 for ns in report["latencies_ns"]]
    return {
        "calls": report["calls"],
        "p50_ms": round(percentile(latencies, 0.5), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "client_cpu_ms_per_call": round(1000 * report["cpu"] / report["calls"], 3),
        "server_cpu_ms_per_call": round(1000 * server.seconds / report["calls"], 3),
        **count_round_trips(kind, setup, url, 200, seed=78),
    }


# --------------------------------------------------------------------------- main


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def markdown(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| variant | procs | pages/s | calls/s | round trips / call | round trips / page "
        "| statements / page | client CPU / page | server CPU / page | p50 | p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def number(value: Any) -> str:
        return "" if value is None else f"{value:g}"

    for c in cells:
        lines.append(
            f"| {c['variant']} | {c['procs']} | {c['pages_per_s']:,.0f} | "
            f"{c['calls_per_s']:,.0f} | {number(c.get('round_trips_per_call'))} | "
            f"{number(c.get('round_trips_per_page'))} | "
            f"{number(c.get('statements_per_page'))} | {c['client_cpu_ms_per_page']:.2f} ms | "
            f"{c['server_cpu_ms_per_page']:.2f} ms | {c['p50_ms']:.2f} ms | "
            f"{c['p99_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def ratios(cells: list[dict[str, Any]]) -> dict[str, float]:
    """Each store variant's rate over the floor's (async over floor-async) per procs."""
    rate = {(c["variant"], c["procs"]): c["pages_per_s"] for c in cells}
    out = {}
    for (variant, n), value in rate.items():
        base = "floor-async" if variant == "store-async" else "floor"
        if variant.startswith("store") and rate.get((base, n)):
            out[f"{variant}/{base} x{n}"] = round(value / rate[(base, n)], 3)
    return out


def batch_locks(setup: Setup, size: int = 16) -> dict[str, Any]:
    """How many advisory locks a batch of ``size`` new pages needs, and how many
    transactions the store writes it in (parts within MAX_KEY_LOCKS, ``lock_parts``)."""
    from simhash_filter.store import canonical_url
    from simhash_filter.store.locks import MAX_KEY_LOCKS, lock_parts, write_locks

    scheme = setup_scheme(setup)
    rng = random.Random(5)
    keys = []
    for i in range(size):
        fp = rng.getrandbits(64)
        keys.append(
            (
                canonical_url(f"http://x.example/{i}"),
                list(enumerate(scheme.index_keys(fp))),
                scheme.probe_keys(fp),
            )
        )
    single, batch = len(write_locks(keys[:1]).ids), len(write_locks(keys).ids)
    return {
        "locks_per_page": single,
        f"locks_per_batch_of_{size}": batch,
        "max_key_locks": MAX_KEY_LOCKS,
        "transactions_per_batch": len(lock_parts(keys)),
        "page_takes_database_lock": single > MAX_KEY_LOCKS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument(
        "--rule",
        default="default",
        help="default: the match rule at k1=9 over the multi-index scheme, pages with "
        "sketches; legacy: k=4, permuted tables, no sketches; default,k1=K,blocks=B: the "
        "default rule at another k1 and block count (default)",
    )
    parser.add_argument("--pages", type=int, default=100_000, help="stored pages (100000)")
    parser.add_argument("--seed", type=int, default=1, help="of the stored pages (1)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per cell (10)")
    parser.add_argument("--procs", default="1,2,4", help="process counts (1,2,4)")
    parser.add_argument(
        "--variants",
        default=DEFAULT_VARIANTS,
        help="which variants, in this order within each process count; store-generic and "
        f"store-generic-batch16 are known too ({DEFAULT_VARIANTS})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every cell this many times (in alternating order) and report the "
        "median round (1)",
    )
    parser.add_argument("--near", type=int, default=2000, help="near() calls to time (2000)")
    parser.add_argument("--label", default="", help="a word stored with the results")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(json.loads(args.worker))
        return 0

    setup = Setup(args.rule)
    variants = [v for v in args.variants.split(",") if v]
    procs = [int(p) for p in args.procs.split(",")]
    pgbench = pgbench_binary() if "pgbench" in variants else None
    if "pgbench" in variants and pgbench is None:
        log("pgbench is not installed: skipping it (apt-get install postgresql-contrib)")
    results: dict[str, Any] = {
        "label": args.label,
        "rule": args.rule,
        "machine_at_start": machine(),
        "pages": args.pages,
        "seconds_per_cell": args.seconds,
        "batch16_locks": batch_locks(setup),
        "cells": [],
    }
    log(f"{args.rule} rule: {results['batch16_locks']}")
    log("checking the floor function against the store on a mixed stream")
    results["floor_equivalence"] = check_floor_equivalence(setup)
    log(f"floor equivalence: {results['floor_equivalence']}")
    url = create_pg_database("sf_bench_pg")
    pg_url = create_pg_database("sf_bench_pgbench") if pgbench is not None else ""
    try:
        bench_db = database_name(url)
        log(f"loading {args.pages:,} pages into {bench_db}")
        results["load"] = load_pages(url, setup, args.pages, seed=args.seed)
        log(f"loaded: {results['load']}")
        install_floor(url)
        if "store-2rt" in variants and not has_server_function(url, setup):
            log("the store has no server-side function path (server_function): no store-2rt")
            variants.remove("store-2rt")
        with psycopg_connect(url) as conn:
            results["server"] = conn.execute("SELECT version()").fetchone()[0]
            results["server_settings"] = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]
                for name in ("synchronous_commit", "fsync", "shared_buffers", "wal_level")
            }
        if args.near:  # at the loaded size, before the write variants add pages
            results["near"] = {"near": measure_near("near", setup, url, bench_db, args.near)}
            log(f"near: {results['near']['near']}")
        if pgbench is not None:
            subprocess.run(
                [pgbench, "-i", "-s", "1", "-q", *pgbench_args(pg_url)],
                capture_output=True,
                check=True,
                env=pgbench_env(pg_url),
                timeout=300,
            )
        round_trips: dict[str, dict[str, float]] = {}
        for variant in variants:
            if variant == "pgbench":
                if pgbench is not None:
                    round_trips[variant] = count_pgbench_round_trips(pgbench, pg_url, 500)
            else:
                round_trips[variant] = count_round_trips(variant, setup, url, 200, seed=900)
            log(f"round trips {variant}: {round_trips.get(variant)}")
        seed = 1000
        measured: dict[tuple[str, int], list[Cell]] = {}
        for round_no in range(args.rounds):
            order = variants if round_no % 2 == 0 else variants[::-1]
            for n in procs:
                for variant in order:
                    if variant == "pgbench":
                        if pgbench is None:
                            continue
                        cell = run_pgbench_cell(
                            pgbench, pg_url, database_name(pg_url), n, args.seconds
                        )
                    else:
                        cell = run_python_cell(variant, setup, url, bench_db, n, args.seconds, seed)
                    seed += 100
                    measured.setdefault((variant, n), []).append(cell)
                    log(
                        f"{variant} x{n}: {cell.rate:,.0f} pages/s, client "
                        f"{1000 * cell.client_cpu / max(1, cell.pages):.3f} ms, server "
                        f"{1000 * cell.server_cpu / max(1, cell.pages):.3f} ms, "
                        f"p50 {cell.p50_ms:.3f} ms"
                    )
        for n in procs:
            for variant in variants:
                cells = sorted(measured.get((variant, n), []), key=lambda c: c.rate)
                if not cells:
                    continue
                cell = cells[(len(cells) - 1) // 2]  # the median round (the lower of two)
                cell.extra.update(round_trips.get(variant, {}))
                row = cell.row()
                row["pages_per_s_each_round"] = [round(c.rate, 1) for c in cells]
                results["cells"].append(row)
        results["ratios"] = ratios(results["cells"])
        with psycopg_connect(url) as conn:
            results["pages_at_end"] = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    finally:
        if not args.keep:
            for db in (url, pg_url):
                if db:
                    drop_pg_database(db)
    print(markdown(results["cells"]))
    print()
    print("ratios to the floor:", json.dumps(results["ratios"]))
    if "near" in results:
        print("near():", json.dumps(results["near"]["near"]))
    log(f"raw results: {write_results('bench_pg', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
