-- check-and-add as one server-side function (store/pg_function.py loads this file).
-- __V__ becomes a digest of this text as installed: an edited body always gets a new name.
-- A page's table keys are the columns band_0 .. band_<T-1> of its pages row
-- (key_columns.py); the marks BAND_COLUMNS (their names), BAND_HITS (the pages under a
-- row's probe keys), TABLE_KEYS (each column's key among rows k(t, key)) and TABLES (T),
-- each between double underscores below, are filled in for the scheme's table count T,
-- which the digest covers.


-- The parts of a sketch (signature.decode_sketch): {text slots, page slots, share byte,
-- listing flag (2 or 0), unsure flag (4 or 0)}, or NULL for bytes that are not a sketch.
CREATE OR REPLACE FUNCTION simhash_filter_sketch__V__(s bytea) RETURNS int4[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    SELECT CASE
        WHEN length(s) < 5 THEN NULL
        WHEN get_byte(s, 0) <> 1 OR get_byte(s, 2) > 15 OR get_byte(s, 3) > 15 THEN NULL
        WHEN length(s) <> 5 + 2 * ((1 << get_byte(s, 2))
            + CASE WHEN get_byte(s, 1) & 1 = 1 THEN 1 << get_byte(s, 3) ELSE 0 END) THEN NULL
        ELSE ARRAY[1 << get_byte(s, 2),
                   CASE WHEN get_byte(s, 1) & 1 = 1 THEN 1 << get_byte(s, 3) ELSE 0 END,
                   get_byte(s, 4),
                   get_byte(s, 1) & 2,
                   get_byte(s, 1) & 4]
    END
$f$;

-- The share of equal 16-bit slots (sketch.agreement) of two sketches' slots starting at
-- byte ``first``.
CREATE OR REPLACE FUNCTION simhash_filter_agreement__V__(a bytea, b bytea, first int4, slots int4)
RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    SELECT count(*) FILTER (
        WHERE substring(a FROM first + 2 * i + 1 FOR 2) = substring(b FROM first + 2 * i + 1 FOR 2)
    )::float8 / slots
    FROM generate_series(0, slots - 1) AS i
$f$;

-- MatchRule.verify; valid is false where it raises ValueError.
CREATE OR REPLACE FUNCTION simhash_filter_verify__V__(
    a bytea, b bytea, min_similarity float8, min_page_similarity float8, max_text_share float8,
    OUT valid bool, OUT confirmed bool, OUT similarity float8, OUT boilerplate bool,
    OUT listing bool)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
    pa int4[] := simhash_filter_sketch__V__(a);
    pb int4[] := simhash_filter_sketch__V__(b);
    page_similarity float8;
BEGIN
    valid := false;
    confirmed := false;
    boilerplate := false;
    listing := false;
    IF pa IS NULL OR pb IS NULL OR pa[1] <> pb[1] THEN
        RETURN;
    END IF;
    similarity := simhash_filter_agreement__V__(a, b, 5, pa[1]);
    confirmed := similarity >= min_similarity;
    IF confirmed AND pa[2] > 0 AND pb[2] > 0 THEN
        IF pa[2] <> pb[2] THEN
            confirmed := false;
            RETURN;
        END IF;
        page_similarity := simhash_filter_agreement__V__(a, b, 5 + 2 * pa[1], pa[2]);
        boilerplate := pa[3] <> 255 AND pb[3] <> 255
            AND greatest(pa[3]::float8 / 254, pb[3]::float8 / 254) < max_text_share
            AND page_similarity < min_page_similarity;
        -- an unsure page (signed before its host's template was known): signature's
        -- UNSURE_TEXT_SHARE (0.3), UNSURE_SAME_TEMPLATE (0.4), UNSURE_MIN_SIMILARITY (0.9)
        IF NOT boilerplate AND pa[3] <> 255 AND pb[3] <> 255 AND (pa[5] <> 0 OR pb[5] <> 0) THEN
            boilerplate := greatest(pa[3]::float8 / 254, pb[3]::float8 / 254) < 0.3
                AND page_similarity >= 0.4
                AND (page_similarity < min_page_similarity OR similarity < 0.9);
        END IF;
    END IF;
    listing := confirmed AND NOT boilerplate AND pa[4] <> pb[4];
    valid := true;
END
$f$;

-- batch.Judge: is a page at distance d with sketch b a match of one with sketch a? A
-- copy, or (copy false) boilerplate, or (copy false, listing) a listing and a page that is
-- not one. rule: NULL (within radius) or {candidate_distance,
-- min_similarity, fallback_distance, min_page_similarity, max_text_share}.
CREATE OR REPLACE FUNCTION simhash_filter_judge__V__(
    d int4, a bytea, b bytea, radius int4, rule float8[],
    OUT matched bool, OUT copy bool, OUT similarity float8, OUT listing bool)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
    v record;
    stored bytea := b;
BEGIN
    matched := false;
    copy := true;
    listing := false;
    IF rule IS NULL THEN
        matched := d <= radius;
        RETURN;
    END IF;
    IF a IS NOT NULL AND stored IS NOT NULL AND d <= rule[1] THEN
        v := simhash_filter_verify__V__(a, stored, rule[2], rule[4], rule[5]);
        IF v.valid THEN
            IF v.confirmed THEN
                matched := true;
                copy := NOT (v.boilerplate OR v.listing);
                listing := v.listing;
                similarity := v.similarity;
            END IF;
            RETURN;
        END IF;
        stored := NULL;  -- not a sketch (or not a comparable one): judged by distance
    END IF;
    matched := (a IS NULL OR stored IS NULL) AND d <= rule[3];
END
$f$;

-- The (table, key) pairs a page is stored under (the keys of its band columns): bands.MinHashLshScheme.index_items when
-- lsh = {bands, rows} has bands > 0 and the sketch has enough slots (band b: the slots
-- b, b + bands, ..., their bytes zero-padded to whole 8-byte words read big-endian and
-- folded by exclusive-or), else the fingerprint's keys cut by cut_* (table t's key: the
-- bit_or over its entries of ((fp >> shift) & mask) << left), as the simhash schemes'.
CREATE OR REPLACE FUNCTION simhash_filter_keys__V__(
    fp int8, s bytea, lsh int4[],
    cut_tables int2[], cut_shifts int4[], cut_masks int8[], cut_lefts int4[])
RETURNS TABLE(t int2, key int8) LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
    parts int4[] := CASE WHEN s IS NULL THEN NULL ELSE simhash_filter_sketch__V__(s) END;
BEGIN
    IF lsh[1] > 0 AND parts IS NOT NULL AND parts[1] >= lsh[1] * lsh[2] THEN
        RETURN QUERY
        SELECT band.b::int2,
               (SELECT bit_xor(('x' || encode(substring(
                           substring(band.bytes FROM 1 + 8 * w FOR 8)
                           || decode('0000000000000000', 'hex') FROM 1 FOR 8), 'hex'))
                           ::bit(64)::int8)
                FROM generate_series(0, (2 * lsh[2] + 7) / 8 - 1) AS w)
        FROM (SELECT g.b, string_agg(substring(s FROM 6 + 2 * (g.b + lsh[1] * r.i) FOR 2),
                                     ''::bytea ORDER BY r.i) AS bytes
              FROM generate_series(0, lsh[1] - 1) AS g(b), generate_series(0, lsh[2] - 1) AS r(i)
              GROUP BY g.b) AS band
        ORDER BY band.b;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT u.t, bit_or(((fp >> u.shift) & u.mask) << u.lft)
    FROM unnest(cut_tables, cut_shifts, cut_masks, cut_lefts) AS u(t, shift, mask, lft)
    GROUP BY u.t ORDER BY u.t;
END
$f$;

-- decide_batch on the server. Rows: p_urls .. p_sketches (one element each); row i's index
-- keys are p_index_tables/p_index_keys (p_index_ends[i - 1] + 1 .. p_index_ends[i], with
-- p_index_ends[0] read as 0); its probe keys in table t (of T) are p_probe_keys
-- (p_probe_ends[(i - 1) * T + t] + 1 .. p_probe_ends[(i - 1) * T + t + 1]). The probe
-- reads each table's keys as one array (band_t = ANY(...)), a plan made once: the function
-- forces generic plans, since a custom plan of the probe's T branches would be made again at
-- every call (it costs more than the probe). p_lsh and p_cut_*: the
-- scheme, as simhash_filter_keys takes it (a stored page's keys once its sketch is filled
-- in). p_locks NULL: the database-wide lock exclusive; else it shared, then p_locks in
-- their (sorted) order, each shared where p_lock_shared says so (locks.write_locks).
CREATE OR REPLACE FUNCTION simhash_filter_check__V__(
    p_urls text[], p_domains text[], p_fps int8[], p_lengths int4[], p_sketches bytea[],
    p_index_tables int2[], p_index_keys int8[], p_index_ends int4[],
    p_probe_keys int8[], p_probe_ends int4[],
    p_lsh int4[], p_cut_tables int2[], p_cut_shifts int4[], p_cut_masks int8[], p_cut_lefts int4[],
    p_locks int8[], p_lock_shared bool[], p_global int8, p_async bool, p_now timestamptz,
    p_radius int4, p_rule float8[])
RETURNS TABLE(
    kind text, previous int8,
    match_id int8, match_url text, match_fp int8, match_distance int4, match_similarity float8,
    boiler_id int8, boiler_url text, boiler_fp int8, boiler_distance int4,
    boiler_similarity float8,
    listing_id int8, listing_url text, listing_fp int8, listing_distance int4,
    listing_similarity float8)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $f$
DECLARE
    i int4;
    first_index int4;
    probe_base int4;
    fp int8;
    sk bytea;
    own_id int8;
    own_fp int8;
    own_sketch bytea;
    own_dropped bool;
    c record;
    j record;
    found_match bool;
    found_boiler bool;
    found_listing bool;
BEGIN
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_locks IS NULL THEN
        PERFORM pg_advisory_xact_lock(p_global);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(p_global);
        PERFORM __TAKE_LOCKS__;
    END IF;
    FOR i IN 1 .. cardinality(p_urls) LOOP
        fp := p_fps[i];
        sk := p_sketches[i];
        first_index := coalesce(p_index_ends[i - 1], 0) + 1;
        probe_base := (i - 1) * __TABLES__;
        kind := NULL;
        previous := NULL;
        match_id := NULL; match_url := NULL; match_fp := NULL;
        match_distance := NULL; match_similarity := NULL;
        boiler_id := NULL; boiler_url := NULL; boiler_fp := NULL;
        boiler_distance := NULL; boiler_similarity := NULL;
        listing_id := NULL; listing_url := NULL; listing_fp := NULL;
        listing_distance := NULL; listing_similarity := NULL;
        own_id := NULL;
        own_dropped := false;
        SELECT p.id, p.fingerprint, p.sketch, p.dropped_at IS NOT NULL
        INTO own_id, own_fp, own_sketch, own_dropped
        FROM pages p WHERE p.url = p_urls[i];
        -- a URL out of the index (dropped_at set) has no stored version to match
        IF own_id IS NOT NULL AND NOT own_dropped THEN
            j := simhash_filter_judge__V__(
                bit_count((own_fp # fp)::bit(64))::int4, sk, own_sketch, p_radius, p_rule);
            IF j.matched THEN
                IF own_sketch IS NULL AND sk IS NOT NULL AND p_lsh[1] > 0 THEN
                    -- the sketch filled in moves a sketch-keyed page to its table keys
                    UPDATE pages SET last_seen = p_now, sketch = sk, (__BAND_COLUMNS__) = (
                        SELECT __TABLE_KEYS__
                        FROM simhash_filter_keys__V__(own_fp, sk, p_lsh, p_cut_tables,
                                                      p_cut_shifts, p_cut_masks, p_cut_lefts) AS k)
                    WHERE id = own_id;
                ELSE
                    UPDATE pages SET last_seen = p_now, sketch = coalesce(pages.sketch, sk)
                    WHERE id = own_id;
                END IF;
                kind := 'unchanged';
                previous := own_fp;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;
        found_match := false;
        found_boiler := false;
        found_listing := false;
        FOR c IN
            SELECT h.id AS page_id, h.url, h.fingerprint, h.d, h.sketch
            FROM (SELECT DISTINCT ON (b.id) b.id, b.url, b.fingerprint, b.sketch,
                         bit_count((b.fingerprint # fp)::bit(64))::int4 AS d
                  FROM __BAND_HITS__ AS b
                  WHERE b.id IS DISTINCT FROM own_id) AS h
            WHERE h.d <= p_radius
            ORDER BY h.d, h.url COLLATE "C"
        LOOP
            j := simhash_filter_judge__V__(c.d, sk, c.sketch, p_radius, p_rule);
            CONTINUE WHEN NOT j.matched;
            IF j.copy THEN
                match_id := c.page_id; match_url := c.url; match_fp := c.fingerprint;
                match_distance := c.d; match_similarity := j.similarity;
                found_match := true;
                EXIT;
            END IF;
            IF j.listing THEN
                IF NOT found_listing THEN
                    listing_id := c.page_id; listing_url := c.url; listing_fp := c.fingerprint;
                    listing_distance := c.d; listing_similarity := j.similarity;
                    found_listing := true;
                END IF;
            ELSIF NOT found_boiler THEN
                boiler_id := c.page_id; boiler_url := c.url; boiler_fp := c.fingerprint;
                boiler_distance := c.d; boiler_similarity := j.similarity;
                found_boiler := true;
            END IF;
        END LOOP;
        IF found_match THEN
            boiler_id := NULL; boiler_url := NULL; boiler_fp := NULL;
            boiler_distance := NULL; boiler_similarity := NULL;
            listing_id := NULL; listing_url := NULL; listing_fp := NULL;
            listing_distance := NULL; listing_similarity := NULL;
            INSERT INTO duplicates
                (url, domain, fingerprint, duplicate_of, distance, similarity, seen_at)
            VALUES (p_urls[i], p_domains[i], fp, match_id, match_distance, match_similarity,
                    p_now);
            IF own_id IS NOT NULL AND NOT own_dropped THEN
                -- its content is a copy of another page now: the old version leaves the index
                UPDATE pages SET last_seen = p_now, dropped_at = p_now, (__BAND_COLUMNS__) = (
                    SELECT __TABLE_KEYS__
                    FROM unnest('{}'::int2[], '{}'::int8[]) AS k(t, key))
                WHERE id = own_id;
            END IF;
            kind := 'duplicate';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF own_id IS NOT NULL THEN
            UPDATE pages SET fingerprint = fp, text_length = p_lengths[i], sketch = sk,
                             last_seen = p_now, dropped_at = NULL, (__BAND_COLUMNS__) = (
                SELECT __TABLE_KEYS__
                FROM unnest(p_index_tables[first_index : p_index_ends[i]],
                            p_index_keys[first_index : p_index_ends[i]]) AS k(t, key))
            WHERE id = own_id;
            kind := 'changed';
            previous := own_fp;
        ELSE
            INSERT INTO pages (url, domain, fingerprint, text_length, sketch, first_seen,
                               last_seen, __BAND_COLUMNS__)
            SELECT p_urls[i], p_domains[i], fp, p_lengths[i], sk, p_now, p_now, __TABLE_KEYS__
            FROM unnest(p_index_tables[first_index : p_index_ends[i]],
                        p_index_keys[first_index : p_index_ends[i]]) AS k(t, key)
            RETURNING id INTO own_id;
            kind := 'new';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$f$;
