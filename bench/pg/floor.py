"""The floor: a hand-written, one-round-trip PL/pgSQL equivalent of ``check_and_add``.

A deliberate lower bound, kept apart from the store on purpose: one server-side function
called once per page (autocommit, a prepared statement with typed parameters) that takes
the same advisory locks, probes the same keys, makes the same decision (candidates nearest
first, confirmed by the sketches' agreement, the fallback distance without a sketch) and
writes the same rows as the store, with nothing else around it. The bench reports the
store's rate as a share of the floor's. It is a third copy of the decision (after
``store.batch`` and the store's own SQL function), so it is only trusted after
:func:`bench.pg.equivalence.check_floor_equivalence` has replayed a mixed stream through
both and found the same verdicts and rows; the bench runs that check before every run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.pg.database import psycopg_connect, sqlalchemy_url
from bench.pg.setup import Page, Setup
from simhash_filter.store.encoding import bool_array, int_array, to_sql_int
from simhash_filter.store.key_columns import column_names, hits_sql

__all__ = ["FLOOR_CALL", "FLOOR_SQL", "FloorClient", "install_floor"]

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
        SELECT h.id AS page_id, h.url, h.fingerprint, h.d, h.sketch
        FROM (SELECT DISTINCT ON (b.id) b.id, b.url, b.fingerprint, b.sketch,
                     bit_count((b.fingerprint # p_fp)::bit(64))::int4 AS d
              FROM unnest(p_probe_tables, p_probe_keys) AS q(t, key)
              CROSS JOIN LATERAL __HITS__ AS b) AS h
        WHERE h.d <= p_radius AND h.id IS DISTINCT FROM v_id
        ORDER BY h.d, h.url COLLATE "C"
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
                         last_seen = p_now, (__COLUMNS__) = (SELECT __INDEX_KEYS__)
        WHERE id = v_id;
        RETURN QUERY SELECT 'changed'::text, NULL::int8, NULL::text, NULL::int8, NULL::int4,
                            NULL::float8, v_fp;
        RETURN;
    END IF;
    INSERT INTO pages (url, domain, fingerprint, text_length, sketch, first_seen, last_seen,
                       __COLUMNS__)
    VALUES (p_url, p_domain, p_fp, p_len, p_sketch, p_now, p_now, __INDEX_KEYS__)
    RETURNING id INTO v_id;
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
        self.probe_tables = int_array(t for t, _ in self.scheme.probe_keys(0))

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
                Int8(to_sql_int(fingerprint)),
                Int4(page.text_length),
                page.sketch,
                int_array(index_keys),
                self.probe_tables,
                int_array(key for _, key in probe_keys),
                None if too_many else int_array(locks.ids),
                None if too_many else bool_array(locks.shared),
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


def floor_sql(n_tables: int) -> str:
    """:data:`FLOOR_SQL` for a scheme of ``n_tables`` tables, each table's key (the
    ``p_index_keys`` element of its number: the floor's schemes key every table) a column
    of the page row (the store's key_columns.py layout)."""
    return (
        FLOOR_SQL.replace("__COLUMNS__", ", ".join(column_names(n_tables)))
        .replace("__HITS__", hits_sql(n_tables, "q.t", "q.key", "id, url, fingerprint, sketch"))
        .replace("__INDEX_KEYS__", ", ".join(f"p_index_keys[{t + 1}]" for t in range(n_tables)))
    )


def install_floor(url: str) -> None:
    from simhash_filter.store import FingerprintStore

    store = FingerprintStore.open_existing(sqlalchemy_url(url))
    n_tables = store.scheme.n_tables
    store.close()
    with psycopg_connect(url) as conn:
        conn.execute(floor_sql(n_tables))
