"""check-and-add as one server-side function: the PostgreSQL write path in one round trip.

:data:`FUNCTION_SQL` defines ``simhash_filter_check_v1`` and its helpers in PL/pgSQL: the
advisory locks, then for each row in order the page under its URL, the probe, the
judgement of each candidate (nearest first, then by URL) and the writes, all in the one
statement that calls it, in autocommit (one transaction, one round trip, no ``BEGIN``,
no ``COMMIT``). Rows of a batch are decided one after another in that transaction, so a
row sees the pages the earlier rows admitted or changed through the band rows they
wrote, which is what :func:`~simhash_filter.store.batch.check_batch` decides in Python:
the same verdicts and the same rows, which the equivalence tests check case by case.

The judgement is :class:`~simhash_filter.store.batch.Judge` written again in SQL:
the sketch's layout (``signature.decode_sketch``) and ``MatchRule.verify`` (the share of
equal 16-bit slots, the boilerplate flag, a malformed or mismatched sketch judged by
distance alone) with the same float arithmetic. The match rule travels as a parameter,
and so does the way each table's key is cut out of a fingerprint (only needed to delete
a changed page's old band rows), so one function serves every rule and band scheme.

The functions are installed on first use with the schema's objects, under the advisory
lock that guards creating the tables, and their names carry :data:`FUNCTION_VERSION`:
a release that changes them bumps it, so an old and a new crawler sharing one database
each call their own. A server where they cannot be installed (PostgreSQL before 14,
which lacks ``bit_count``, or a role without CREATE on the schema) keeps the two-round-trip
path of :mod:`.pg`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, NamedTuple

from simhash_filter.bands import BandScheme, IndexScheme
from simhash_filter.signature import MatchRule

from .locks import TAKE_LOCKS

FUNCTION_VERSION = 1
CHECK_FUNCTION = f"simhash_filter_check_v{FUNCTION_VERSION}"
MIN_SERVER_VERSION = 140000
"""``bit_count(bit)`` arrived in PostgreSQL 14."""

_V = f"_v{FUNCTION_VERSION}"
_TWO_63 = 1 << 63
_TWO_64 = 1 << 64

FUNCTION_SQL = f"""
-- The parts of a sketch (signature.decode_sketch): {{text slots, page slots, share byte}},
-- or NULL for bytes that are not a sketch.
CREATE OR REPLACE FUNCTION simhash_filter_sketch{_V}(s bytea) RETURNS int4[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    SELECT CASE
        WHEN length(s) < 5 THEN NULL
        WHEN get_byte(s, 0) <> 1 OR get_byte(s, 2) > 15 OR get_byte(s, 3) > 15 THEN NULL
        WHEN length(s) <> 5 + 2 * ((1 << get_byte(s, 2))
            + CASE WHEN get_byte(s, 1) & 1 = 1 THEN 1 << get_byte(s, 3) ELSE 0 END) THEN NULL
        ELSE ARRAY[1 << get_byte(s, 2),
                   CASE WHEN get_byte(s, 1) & 1 = 1 THEN 1 << get_byte(s, 3) ELSE 0 END,
                   get_byte(s, 4)]
    END
$f$;

-- The share of equal 16-bit slots (sketch.agreement) of two sketches' slots starting at
-- byte ``first``.
CREATE OR REPLACE FUNCTION simhash_filter_agreement{_V}(a bytea, b bytea, first int4, slots int4)
RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    SELECT count(*) FILTER (
        WHERE substring(a FROM first + 2 * i + 1 FOR 2) = substring(b FROM first + 2 * i + 1 FOR 2)
    )::float8 / slots
    FROM generate_series(0, slots - 1) AS i
$f$;

-- MatchRule.verify; valid is false where it raises ValueError.
CREATE OR REPLACE FUNCTION simhash_filter_verify{_V}(
    a bytea, b bytea, min_similarity float8, min_page_similarity float8, max_text_share float8,
    OUT valid bool, OUT confirmed bool, OUT similarity float8, OUT boilerplate bool)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
    pa int4[] := simhash_filter_sketch{_V}(a);
    pb int4[] := simhash_filter_sketch{_V}(b);
    page_similarity float8;
BEGIN
    valid := false;
    confirmed := false;
    boilerplate := false;
    IF pa IS NULL OR pb IS NULL OR pa[1] <> pb[1] THEN
        RETURN;
    END IF;
    similarity := simhash_filter_agreement{_V}(a, b, 5, pa[1]);
    confirmed := similarity >= min_similarity;
    IF confirmed AND pa[2] > 0 AND pb[2] > 0 THEN
        IF pa[2] <> pb[2] THEN
            confirmed := false;
            RETURN;
        END IF;
        page_similarity := simhash_filter_agreement{_V}(a, b, 5 + 2 * pa[1], pa[2]);
        boilerplate := pa[3] <> 255 AND pb[3] <> 255
            AND greatest(pa[3]::float8 / 254, pb[3]::float8 / 254) < max_text_share
            AND page_similarity < min_page_similarity;
    END IF;
    valid := true;
END
$f$;

-- batch.Judge: is a page at distance d with sketch b a match of one with sketch a? A
-- copy, or (copy false) boilerplate. rule: NULL (within radius) or {{candidate_distance,
-- min_similarity, fallback_distance, min_page_similarity, max_text_share}}.
CREATE OR REPLACE FUNCTION simhash_filter_judge{_V}(
    d int4, a bytea, b bytea, radius int4, rule float8[],
    OUT matched bool, OUT copy bool, OUT similarity float8)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
    v record;
    stored bytea := b;
BEGIN
    matched := false;
    copy := true;
    IF rule IS NULL THEN
        matched := d <= radius;
        RETURN;
    END IF;
    IF a IS NOT NULL AND stored IS NOT NULL AND d <= rule[1] THEN
        v := simhash_filter_verify{_V}(a, stored, rule[2], rule[4], rule[5]);
        IF v.valid THEN
            IF v.confirmed THEN
                matched := true;
                copy := NOT v.boilerplate;
                similarity := v.similarity;
            END IF;
            RETURN;
        END IF;
        stored := NULL;  -- not a sketch (or not a comparable one): judged by distance
    END IF;
    matched := (a IS NULL OR stored IS NULL) AND d <= rule[3];
END
$f$;

-- check_batch on the server. Rows: p_urls .. p_sketches (one element each), their index
-- keys (n_tables a row) and probe keys (one a probe position, whose tables are
-- p_probe_tables), row after row. p_cut_*: table t's key of a fingerprint fp is the
-- bit_or over its entries of ((fp >> shift) & mask) << left. p_locks NULL: the
-- database-wide lock exclusive; else it shared, then p_locks in their (sorted) order,
-- each shared where p_lock_shared says so (locks.write_locks).
CREATE OR REPLACE FUNCTION {CHECK_FUNCTION}(
    p_urls text[], p_domains text[], p_fps int8[], p_lengths int4[], p_sketches bytea[],
    p_index_keys int8[], p_probe_tables int2[], p_probe_keys int8[],
    p_cut_tables int2[], p_cut_shifts int4[], p_cut_masks int8[], p_cut_lefts int4[],
    p_locks int8[], p_lock_shared bool[], p_global int8, p_async bool, p_now timestamptz,
    p_radius int4, p_rule float8[])
RETURNS TABLE(
    kind text, previous int8,
    match_id int8, match_url text, match_fp int8, match_distance int4, match_similarity float8,
    boiler_id int8, boiler_url text, boiler_fp int8, boiler_distance int4,
    boiler_similarity float8)
LANGUAGE plpgsql AS $f$
DECLARE
    n_tables int4 := cardinality(p_index_keys) / cardinality(p_urls);
    n_probes int4 := cardinality(p_probe_tables);
    i int4;
    fp int8;
    sk bytea;
    own_id int8;
    own_fp int8;
    own_sketch bytea;
    c record;
    j record;
    found_match bool;
    found_boiler bool;
BEGIN
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_locks IS NULL THEN
        PERFORM pg_advisory_xact_lock(p_global);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(p_global);
        PERFORM {TAKE_LOCKS.format(ids="p_locks", shared="p_lock_shared")};
    END IF;
    FOR i IN 1 .. cardinality(p_urls) LOOP
        fp := p_fps[i];
        sk := p_sketches[i];
        kind := NULL;
        previous := NULL;
        match_id := NULL; match_url := NULL; match_fp := NULL;
        match_distance := NULL; match_similarity := NULL;
        boiler_id := NULL; boiler_url := NULL; boiler_fp := NULL;
        boiler_distance := NULL; boiler_similarity := NULL;
        own_id := NULL;
        SELECT p.id, p.fingerprint, p.sketch INTO own_id, own_fp, own_sketch
        FROM pages p WHERE p.url = p_urls[i];
        IF own_id IS NOT NULL THEN
            j := simhash_filter_judge{_V}(
                bit_count((own_fp # fp)::bit(64))::int4, sk, own_sketch, p_radius, p_rule);
            IF j.matched THEN
                UPDATE pages SET last_seen = p_now, sketch = coalesce(pages.sketch, sk)
                WHERE id = own_id;
                kind := 'unchanged';
                previous := own_fp;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;
        found_match := false;
        found_boiler := false;
        FOR c IN
            SELECT h.page_id, p.url, h.fingerprint, h.d, p.sketch
            FROM (SELECT DISTINCT b.page_id, b.fingerprint,
                         bit_count((b.fingerprint # fp)::bit(64))::int4 AS d
                  FROM unnest(p_probe_tables,
                              p_probe_keys[(i - 1) * n_probes + 1 : i * n_probes]) AS q(t, key)
                  JOIN bands b ON b.table_no = q.t AND b.key = q.key
                  WHERE b.page_id IS DISTINCT FROM own_id) AS h
            JOIN pages p ON p.id = h.page_id
            WHERE h.d <= p_radius
            ORDER BY h.d, p.url COLLATE "C"
        LOOP
            j := simhash_filter_judge{_V}(c.d, sk, c.sketch, p_radius, p_rule);
            CONTINUE WHEN NOT j.matched;
            IF j.copy THEN
                match_id := c.page_id; match_url := c.url; match_fp := c.fingerprint;
                match_distance := c.d; match_similarity := j.similarity;
                found_match := true;
                EXIT;
            END IF;
            IF NOT found_boiler THEN
                boiler_id := c.page_id; boiler_url := c.url; boiler_fp := c.fingerprint;
                boiler_distance := c.d; boiler_similarity := j.similarity;
                found_boiler := true;
            END IF;
        END LOOP;
        IF found_match THEN
            boiler_id := NULL; boiler_url := NULL; boiler_fp := NULL;
            boiler_distance := NULL; boiler_similarity := NULL;
            INSERT INTO duplicates
                (url, domain, fingerprint, duplicate_of, distance, similarity, seen_at)
            VALUES (p_urls[i], p_domains[i], fp, match_id, match_distance, match_similarity,
                    p_now);
            kind := 'duplicate';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF own_id IS NOT NULL THEN
            UPDATE pages SET fingerprint = fp, text_length = p_lengths[i], sketch = sk,
                             last_seen = p_now
            WHERE id = own_id;
            DELETE FROM bands b
            USING (SELECT u.t, bit_or(((own_fp >> u.shift) & u.mask) << u.lft) AS key
                   FROM unnest(p_cut_tables, p_cut_shifts, p_cut_masks, p_cut_lefts)
                        AS u(t, shift, mask, lft)
                   GROUP BY u.t) AS old
            WHERE b.table_no = old.t AND b.key = old.key AND b.page_id = own_id;
            kind := 'changed';
            previous := own_fp;
        ELSE
            INSERT INTO pages (url, domain, fingerprint, text_length, sketch, first_seen,
                               last_seen)
            VALUES (p_urls[i], p_domains[i], fp, p_lengths[i], sk, p_now, p_now)
            RETURNING id INTO own_id;
            kind := 'new';
        END IF;
        INSERT INTO bands (table_no, key, page_id, fingerprint)
        SELECT (k.n - 1)::int2, k.key, own_id, fp
        FROM unnest(p_index_keys[(i - 1) * n_tables + 1 : i * n_tables])
            WITH ORDINALITY AS k(key, n);
        RETURN NEXT;
    END LOOP;
END
$f$;
"""

CALL_SQL = (
    f"SELECT * FROM {CHECK_FUNCTION}(%s::text[], %s::text[], %s::int8[], %s::int4[], "
    "%s::bytea[], %s::int8[], %s::int2[], %s::int8[], %s::int2[], %s::int4[], %s::int8[], "
    "%s::int4[], %s::int8[], %s::bool[], %s::int8, %s::bool, %s::timestamptz, %s::int4, "
    "%s::float8[])"
)

INSTALLED_SQL = (
    "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE p.proname = %s AND n.nspname = current_schema()"
)


class KeyCut(NamedTuple):
    """One block's part of a table's key: ``((fp >> shift) & mask) << left``."""

    table_no: int
    shift: int
    mask: int
    left: int


def key_cuts(scheme: IndexScheme) -> list[KeyCut]:
    """How ``scheme.index_keys`` cuts each table's key out of a fingerprint, as rows the
    function's ``p_cut_*`` parameters carry (checked against ``index_keys`` by the tests)."""
    widths = scheme.block_widths
    cuts = []
    for table in scheme.tables:
        # a permuted table's key joins its blocks, the first one highest; a multi-index
        # table's key is its one block
        left = sum(widths[b] for b in table.blocks) if isinstance(scheme, BandScheme) else 0
        for block in table.blocks:
            left -= widths[block] if isinstance(scheme, BandScheme) else 0
            shift, mask = scheme.block_cuts[block]
            cuts.append(KeyCut(table.table_no, shift, mask, left))
    return cuts


def int_array(values: Iterable[int]) -> str:
    """Ints as the text of an ``int8[]`` literal, an unsigned 64-bit one at or above 2**63
    as the negative ``to_sql_int`` makes of it. Sent as one string and cast on the server, a row's
    hundreds of probe keys cost the client one ``join`` rather than a typed wrapper and
    a quoting check per element."""
    return "{" + ",".join([str(v - _TWO_64 if v >= _TWO_63 else v) for v in values]) + "}"


def bool_array(values: Iterable[bool]) -> str:
    """Booleans as the text of a ``bool[]`` literal (one string, as :func:`int_array`)."""
    return "{" + ",".join(["t" if value else "f" for value in values]) + "}"


def text_array(values: Iterable[str]) -> str:
    """Strings as the text of a ``text[]`` literal: each element double-quoted, its
    backslashes and double quotes escaped (so commas, braces, spaces and the word NULL
    stay text)."""
    quoted = ['"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values]
    return "{" + ",".join(quoted) + "}"


def bytea_array(values: Iterable[bytes | None]) -> str:
    """Byte strings (or None) as the text of a ``bytea[]`` literal, each element in
    bytea's hex form (its one backslash escaped inside the array literal)."""
    return "{" + ",".join(["NULL" if v is None else '"\\\\x' + v.hex() + '"' for v in values]) + "}"


class SchemeArrays(NamedTuple):
    """The function's parameters that depend on the band scheme alone, made once."""

    probe_tables: str
    cut_tables: str
    cut_shifts: str
    cut_masks: str
    cut_lefts: str


@functools.lru_cache(maxsize=8)
def scheme_arrays(scheme: IndexScheme) -> SchemeArrays:
    """:class:`SchemeArrays` of ``scheme``: the table of each probe position (every
    query's probe keys come in the same table order) and :func:`key_cuts`."""
    cuts = key_cuts(scheme)
    return SchemeArrays(
        int_array(table for table, _ in scheme.probe_keys(0)),
        int_array(cut.table_no for cut in cuts),
        int_array(cut.shift for cut in cuts),
        int_array(cut.mask for cut in cuts),
        int_array(cut.left for cut in cuts),
    )


@functools.lru_cache(maxsize=8)
def rule_parameter(rule: MatchRule | None) -> str | None:
    """The match rule as the function's ``p_rule``, a ``float8[]`` literal (None: judged
    by distance alone). ``repr`` of a float is the shortest text that reads back as the
    same double, so the server compares with exactly the Python thresholds."""
    if rule is None:
        return None
    values = (
        rule.candidate_distance,
        rule.min_similarity,
        rule.fallback_distance,
        rule.min_page_similarity,
        rule.max_text_share,
    )
    return "{" + ",".join(repr(float(value)) for value in values) + "}"


def server_supports(conn: Any) -> bool:
    """True when the server is new enough for the function (``bit_count``)."""
    return int(conn.info.server_version) >= MIN_SERVER_VERSION
