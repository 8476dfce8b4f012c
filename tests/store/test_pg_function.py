"""The server-side function's parts (store/pg_function.py) against the Python they rewrite:
the sketch's layout and MatchRule.verify, batch.Judge, and each table's key of a
fingerprint, for both band schemes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.core.signature import MatchRule, encode_sketch
from simhash_filter.index.schemes import MinHashLshScheme, MultiIndexScheme, PermutedScheme
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.batch import Judge
from simhash_filter.store.encoding import to_sql_int
from simhash_filter.store.pg_function import (
    KeyCut,
    decide_function,
    function_source,
    function_sql,
    key_cuts,
    rule_parameter,
    scheme_arrays,
)

pytestmark = pytest.mark.postgres

TABLES = MinHashLshScheme().n_tables  # the fixture's store installs the function of these
V = f"_{decide_function(TABLES).digest}"
SCHEMES = [
    PermutedScheme(max_distance=0, blocks=1),
    PermutedScheme(max_distance=0, blocks=2),
    PermutedScheme(max_distance=3),
    PermutedScheme(max_distance=4),
    PermutedScheme(bits=32, max_distance=3),
    MultiIndexScheme(max_distance=7, blocks=4),
    MultiIndexScheme(max_distance=9),
    MultiIndexScheme(max_distance=2, blocks=1),
    MultiIndexScheme(bits=48, max_distance=5),
]


@pytest.fixture(scope="module")
def conn() -> Iterator[Any]:
    """A psycopg connection to a database with the function installed (by a first write)."""
    import psycopg

    from crawler.services import create_pg_database, drop_pg_database

    try:
        url = create_pg_database("sf_test")
    except Exception as exc:
        from tests.conftest import _unavailable

        _unavailable("PostgreSQL", exc)
    try:
        with FingerprintStore.open(url, StoreOptions(spec="test;fn", index="minhash-lsh")) as store:
            assert store.write_path == "pg-function"
            assert store.scheme.n_tables == TABLES
            store.check_and_add("http://install.example/", 1)
        with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as connection:
            yield connection
    finally:
        drop_pg_database(url)


def key_of(cuts: list[KeyCut], table_no: int, fingerprint: int) -> int:
    """Table ``table_no``'s key of ``fingerprint`` as the function computes it from
    ``cuts`` (signed 64-bit arithmetic, an arithmetic right shift, ``<<`` wrapping)."""
    signed = to_sql_int(fingerprint)
    key = 0
    for cut in cuts:
        if cut.table_no == table_no:
            key |= ((signed >> cut.shift) & to_sql_int(cut.mask)) << cut.left
    return to_sql_int(key & ((1 << 64) - 1))


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.describe())
def test_key_cuts_give_every_table_key(
    scheme: PermutedScheme | MultiIndexScheme, conn: Any
) -> None:
    rng = random.Random(1)
    cuts = key_cuts(scheme)
    fingerprints = [0, (1 << scheme.bits) - 1, 1 << (scheme.bits - 1)]
    fingerprints += [rng.getrandbits(scheme.bits) for _ in range(200)]
    for fp in fingerprints:
        assert [(t, key_of(cuts, t, fp)) for t, _ in scheme.index_items(fp)] == [
            (t, to_sql_int(key)) for t, key in scheme.index_items(fp)
        ]
    rows = conn.execute(
        "SELECT f.n, u.t, bit_or(((f.fp >> u.shift) & u.mask) << u.lft) "
        "FROM unnest(%s::int8[]) WITH ORDINALITY AS f(fp, n), "
        "unnest(%s::int2[], %s::int4[], %s::int8[], %s::int4[]) AS u(t, shift, mask, lft) "
        "GROUP BY f.n, u.t ORDER BY f.n, u.t",
        (
            [to_sql_int(fp) for fp in fingerprints],
            [c.table_no for c in cuts],
            [c.shift for c in cuts],
            [to_sql_int(c.mask) for c in cuts],
            [c.left for c in cuts],
        ),
    ).fetchall()
    expected = [
        (n, t, to_sql_int(key))
        for n, fp in enumerate(fingerprints, 1)
        for t, key in scheme.index_items(fp)
    ]
    assert rows == expected


LSH_SCHEMES = [
    MinHashLshScheme(),
    MinHashLshScheme(blocks=16, rows=8),
    MinHashLshScheme(blocks=25, rows=10),
    MinHashLshScheme(blocks=20, rows=6),
    MinHashLshScheme(blocks=3, rows=1),
    PermutedScheme(max_distance=3),
    MultiIndexScheme(max_distance=9),
]


@pytest.mark.parametrize("scheme", LSH_SCHEMES, ids=lambda s: s.describe())
def test_sql_index_keys_are_the_schemes(scheme: Any, conn: Any) -> None:
    """simhash_filter_keys (a stored page's old band rows) gives index_items exactly: band
    keys of sketches of every size and layout, fallback keys without a usable sketch."""
    rng = np.random.default_rng(7)
    pages: list[tuple[int, bytes | None]] = [(0, None), ((1 << 64) - 1, None)]
    for _ in range(40):
        fp = int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2))
        pages.append((fp, _sketch(rng, 256, 64 if rng.random() < 0.5 else None, 0.5)))
    pages.append((5, _sketch(rng, 64, None, None)))  # too few slots for most schemes
    pages.append((6, b"\x01\x00\x08"))  # not a sketch
    pages.append((7, _sketch(rng, 256, None, None)[:-1]))  # truncated
    arrays = scheme_arrays(scheme)
    for fp, sketch in pages:
        rows = conn.execute(
            f"SELECT t, key FROM simhash_filter_keys{V}(%s, %s, %s::int4[], %s::int2[], "
            "%s::int4[], %s::int8[], %s::int4[])",
            (
                to_sql_int(fp),
                sketch,
                arrays.lsh,
                arrays.cut_tables,
                arrays.cut_shifts,
                arrays.cut_masks,
                arrays.cut_lefts,
            ),
        ).fetchall()
        assert rows == [(t, to_sql_int(key)) for t, key in scheme.index_items(fp, sketch)]


def test_the_function_name_is_a_digest_of_its_sql() -> None:
    """An edited body never runs under an old name: the name is the installed text's digest."""
    source = function_source()
    sql, digest = function_sql(source, TABLES)
    assert digest == decide_function(TABLES).digest
    assert f"simhash_filter_check_{digest}" == decide_function(TABLES).name
    assert f"simhash_filter_check_{digest}(" in sql
    assert "__" not in sql.replace("__V__", "")  # every mark filled in
    assert "__V__" not in sql
    edited = source.replace("p_now", "p_now ", 1)
    assert function_sql(edited, TABLES)[1] != digest
    # another table count names other columns: another name
    assert function_sql(source, TABLES + 1)[1] != digest
    assert f"band_{TABLES - 1}" in sql
    assert f"band_{TABLES}" not in sql


def _sketch(rng: np.random.Generator, slots: int, page: int | None, share: float | None) -> bytes:
    text = rng.integers(0, 1 << 16, slots, dtype=np.uint16)
    page_slots = None if page is None else rng.integers(0, 1 << 16, page, dtype=np.uint16)
    return encode_sketch(text, page_slots, share)


def _similar(rng: np.random.Generator, sketch: bytes, changed: int) -> bytes:
    """``sketch`` with ``changed`` random bytes of its body replaced."""
    data = bytearray(sketch)
    for pos in rng.choice(np.arange(5, len(data)), size=min(changed, len(data) - 5), replace=False):
        data[pos] = int(rng.integers(0, 256))
    return bytes(data)


def _as_listing(sketch: bytes, listing: bool) -> bytes:
    """``sketch`` with its listing flag (header bit 2) set or cleared."""
    flags = sketch[1] | 2 if listing else sketch[1] & ~2
    return sketch[:1] + bytes([flags]) + sketch[2:] if len(sketch) > 1 else sketch


def _python_verify(
    rule: MatchRule, a: bytes, b: bytes
) -> tuple[bool, bool, float | None, bool, bool]:
    try:
        v = rule.verify(a, b)
    except ValueError:
        return (False, False, None, False, False)
    return (True, v.confirmed, v.similarity, v.boilerplate, v.listing)


def _sql_verify(conn: Any, rule: MatchRule, pairs: list[tuple[bytes, bytes]]) -> list[Any]:
    rows = conn.execute(
        f"SELECT (simhash_filter_verify{V}(a, b, %s, %s, %s)).* "
        "FROM unnest(%s::bytea[], %s::bytea[]) WITH ORDINALITY AS u(a, b, n) ORDER BY n",
        (
            rule.min_similarity,
            rule.min_page_similarity,
            rule.max_text_share,
            [a for a, _ in pairs],
            [b for _, b in pairs],
        ),
    ).fetchall()
    return [
        (valid, confirmed, similarity if valid else None, boilerplate, listing)
        for valid, confirmed, similarity, boilerplate, listing in rows
    ]


def test_verify_is_match_rule_verify(conn: Any) -> None:
    """Sketches with and without the page part, every share, listings or not, similar and
    unrelated pairs, sizes that do not match, and bytes that are not sketches."""
    rng = np.random.default_rng(7)
    rule = MatchRule()
    pairs: list[tuple[bytes, bytes]] = []
    for _ in range(300):
        slots = int(rng.choice([16, 64, 256]))
        page = None if rng.random() < 0.3 else int(rng.choice([16, 64]))
        share = None if rng.random() < 0.2 else float(rng.choice([0.0, 0.05, 0.0999, 0.1, 0.5]))
        a = _sketch(rng, slots, page, share)
        b = _similar(rng, a, int(rng.integers(0, 200)))
        pairs.append((_as_listing(a, rng.random() < 0.3), _as_listing(b, rng.random() < 0.3)))
        pairs.append((a, _sketch(rng, slots, page, float(rng.random()))))
        pairs.append((a, _sketch(rng, int(rng.choice([16, 64, 256])), page, share)))
        pairs.append((a, _sketch(rng, slots, 16 if page == 64 else 64, share)))
    broken = [
        b"",
        b"\x01",
        b"\x02\x00\x04\x00\xff" + bytes(32),
        b"\x01\x00\x04\x00\xff" + bytes(31),
    ]
    broken += [b"\x01\x00\x10\x00\xff" + bytes(32), b"\x01\x00\x04\x10\xff" + bytes(32)]
    valid = _sketch(rng, 16, None, None)
    pairs += [(valid, bad) for bad in broken] + [(bad, valid) for bad in broken]
    expected = [_python_verify(rule, a, b) for a, b in pairs]
    assert _sql_verify(conn, rule, pairs) == expected
    outcomes = {(v, c, bp, ls) for v, c, _, bp, ls in expected}
    # every outcome is among the cases: invalid, rejected, confirmed, boilerplate, listing
    assert outcomes >= {
        (False, False, False, False),
        (True, False, False, False),
        (True, True, False, False),
        (True, True, True, False),
        (True, True, False, True),
    }


def _as_unsure(sketch: bytes, unsure: bool) -> bytes:
    """``sketch`` with its unsure flag (header bit 4) set or cleared."""
    flags = sketch[1] | 4 if unsure else sketch[1] & ~4
    return sketch[:1] + bytes([flags]) + sketch[2:]


def test_verify_of_unsure_pages_is_match_rule_verify(conn: Any) -> None:
    """A page signed before its host's template was known (the unsure flag) is judged with
    the stricter share (signature.UNSURE_TEXT_SHARE) in SQL as in Python: shares on both
    sides of 0.1 and 0.3, either page unsure or neither."""
    rng = np.random.default_rng(43)
    rule = MatchRule()
    pairs: list[tuple[bytes, bytes]] = []
    for _ in range(200):
        shares = [float(rng.choice([0.05, 0.0999, 0.1, 0.2, 0.2999, 0.3, 0.5])) for _ in "ab"]
        a = _sketch(rng, 64, 16, shares[0])
        b = _similar(rng, a, int(rng.integers(0, 40)))
        b = b[:4] + bytes([round(shares[1] * 254)]) + b[5:]
        pairs.append((_as_unsure(a, rng.random() < 0.5), _as_unsure(b, rng.random() < 0.5)))
    expected = [_python_verify(rule, a, b) for a, b in pairs]
    assert _sql_verify(conn, rule, pairs) == expected
    unsure_boilerplate = [
        v for (a, b), v in zip(pairs, expected, strict=True)
        if v[3] and max(a[4], b[4]) / 254 >= 0.1
    ]  # fmt: skip
    assert unsure_boilerplate  # the stricter share decided some pairs


@settings(max_examples=60, deadline=None)
@given(
    distance=st.integers(0, 12),
    has_a=st.booleans(),
    has_b=st.booleans(),
    changed=st.integers(0, 120),
    candidate=st.integers(0, 10),
    fallback=st.integers(0, 10),
    threshold=st.sampled_from([0.5, 0.7, 0.9]),
    with_rule=st.booleans(),
    listings=st.sampled_from([(False, False), (True, False), (False, True), (True, True)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_judge_is_batch_judge(
    conn: Any,
    distance: int,
    has_a: bool,
    has_b: bool,
    changed: int,
    candidate: int,
    fallback: int,
    threshold: float,
    with_rule: bool,
    listings: tuple[bool, bool],
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    rule = MatchRule(candidate, threshold, fallback) if with_rule else None
    radius = 6
    judge = Judge(radius, rule)
    a = _sketch(rng, 64, 16, 0.05 if rng.random() < 0.5 else 0.5)
    b = _similar(rng, a, changed)
    a, b = _as_listing(a, listings[0]), _as_listing(b, listings[1])
    query, stored = (a if has_a else None), (b if has_b else None)
    expected = judge(distance, query, stored)
    (matched, copy, similarity, listing) = conn.execute(
        f"SELECT (simhash_filter_judge{V}(%s, %s, %s, %s, %s::float8[])).*",
        (distance, query, stored, judge.radius, rule_parameter(rule)),
    ).fetchone()
    if expected is None:
        assert not matched
    else:
        assert matched
        assert (copy, similarity, listing) == tuple(expected)


def test_array_literals_read_back_as_the_values(conn: Any) -> None:
    """The literals the function's parameters travel as (one string each, cast on the
    server) hold exactly the values: URLs with quotes, backslashes, commas, braces,
    spaces and the word NULL; sketches and None; signed and unsigned 64-bit ints; lock
    modes; the rule's thresholds as doubles."""
    from simhash_filter.store.encoding import bool_array, bytea_array, int_array, text_array

    texts = ['http://a.example/"q"', "x\\y", "a,b", "{c}", " s p ", "NULL", "ü日本", "", "'"]
    blobs = [b"", b"\x00\x01\\\xff", None, bytes(range(256))]
    ints = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, -5]
    flags = [True, False, True]
    row = conn.execute(
        "SELECT %s::text[], %s::bytea[], %s::int8[], %s::bool[], %s::float8[]",
        (
            text_array(texts),
            bytea_array(blobs),
            int_array(ints),
            bool_array(flags),
            rule_parameter(MatchRule(9, 0.7, 3, 0.8, 0.1)),
        ),
    ).fetchone()
    assert row[0] == texts
    assert [None if b is None else bytes(b) for b in row[1]] == blobs
    assert row[2] == [to_sql_int(v) if v >= 0 else v for v in ints]
    assert row[3] == flags
    assert row[4] == [9.0, 0.7, 3.0, 0.8, 0.1]
