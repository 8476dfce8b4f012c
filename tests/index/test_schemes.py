"""Band schemes: the pigeonhole guarantee, block layout and parameter validation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import flip

from simhash_filter.index.schemes import (
    DEFAULT_MAX_DISTANCE,
    MAX_TABLES,
    PermutedScheme,
    default_blocks,
    min_key_bits,
)

U64 = st.integers(min_value=0, max_value=2**64 - 1)


def test_default_is_k4_with_six_blocks_of_20_to_22_bit_keys() -> None:
    scheme = PermutedScheme()
    assert DEFAULT_MAX_DISTANCE == 4
    assert (scheme.bits, scheme.max_distance, scheme.blocks) == (64, 4, 6)
    assert scheme.n_tables == 15 == math.comb(6, 4)
    assert scheme.block_widths == (11, 11, 11, 11, 10, 10)
    assert sorted({t.key_bits for t in scheme.tables}) == [20, 21, 22]
    assert scheme.min_key_bits() == 20
    assert scheme == PermutedScheme(bits=64, max_distance=4, blocks=6)


def test_paper_scheme_is_the_k3_default_four_blocks_of_16_bits() -> None:
    scheme = PermutedScheme(max_distance=3)
    assert (scheme.bits, scheme.max_distance, scheme.blocks) == (64, 3, 4)
    assert scheme.n_tables == 4
    assert scheme.block_widths == (16, 16, 16, 16)
    assert [t.key_bits for t in scheme.tables] == [16, 16, 16, 16]
    assert scheme == PermutedScheme(bits=64, max_distance=3, blocks=4)


def test_default_blocks_k3_is_the_papers_and_k4_is_six() -> None:
    assert default_blocks(3) == 4
    assert default_blocks(4) == 6
    assert [default_blocks(k) for k in range(9)] == [1, 2, 3, 4, 6, 7, 8, 10, 11]


@pytest.mark.parametrize("k", range(9))
def test_default_blocks_are_the_fewest_with_16_bit_keys(k: int) -> None:
    scheme = PermutedScheme(max_distance=k)
    assert scheme.n_blocks == default_blocks(k)
    assert scheme.min_key_bits() >= 16
    # the fewest: every scheme with fewer blocks has a key narrower than 16 bits
    for fewer in range(k + 1, scheme.n_blocks):
        assert PermutedScheme(max_distance=k, blocks=fewer).min_key_bits() < 16


def test_min_key_bits_matches_the_built_scheme() -> None:
    for bits in (64, 32, 17, 8):
        for blocks in range(1, bits + 1):
            for k in range(blocks):
                if math.comb(blocks, k) <= MAX_TABLES:
                    scheme = PermutedScheme(bits=bits, max_distance=k, blocks=blocks)
                    assert min_key_bits(bits, k, blocks) == scheme.min_key_bits()


def test_default_blocks_falls_back_to_k_plus_one_when_16_bits_are_out_of_reach() -> None:
    # 16-bit fingerprints cannot have 16-bit keys for k >= 1; k=11 at 64 bits would
    # need more than MAX_TABLES tables
    assert default_blocks(3, bits=16) == 4
    assert default_blocks(11) == 12
    assert PermutedScheme(max_distance=11).n_tables == 12
    with pytest.raises(ValueError, match="max_distance must be an int >= 0, got -1"):
        default_blocks(-1)


@pytest.mark.parametrize(
    ("blocks", "tables", "widths"),
    [
        (5, 10, (13, 13, 13, 13, 12)),
        (6, 20, (11, 11, 11, 11, 10, 10)),
    ],
)
def test_more_blocks_make_more_tables_with_longer_keys(
    blocks: int, tables: int, widths: tuple[int, ...]
) -> None:
    scheme = PermutedScheme(max_distance=3, blocks=blocks)
    assert scheme.n_tables == tables == math.comb(blocks, 3)
    assert scheme.block_widths == widths
    assert sum(widths) == 64
    assert {len(t.blocks) for t in scheme.tables} == {blocks - 3}
    assert len({t.blocks for t in scheme.tables}) == tables


def test_keys_concatenate_the_chosen_blocks() -> None:
    scheme = PermutedScheme(max_distance=3, blocks=4)
    fp = 0x1111_2222_3333_4444
    assert scheme.keys(fp) == [0x1111, 0x2222, 0x3333, 0x4444]
    two = PermutedScheme(bits=64, max_distance=2, blocks=4)  # tables of 2 blocks
    assert two.keys(fp)[0] == 0x1111_2222
    assert two.keys(fp)[-1] == 0x3333_4444
    assert PermutedScheme(max_distance=0, blocks=1).keys(2**64 - 1) == [2**64 - 1]


@given(fp=U64)
def test_keys_fit_their_table_width(fp: int) -> None:
    scheme = PermutedScheme(blocks=6)
    keys = scheme.keys(fp)
    assert len(keys) == scheme.n_tables
    for table, key in zip(scheme.tables, keys, strict=True):
        assert 0 <= key < 2**table.key_bits


@st.composite
def scheme_and_flips(draw: st.DrawFn) -> tuple[PermutedScheme, int, set[int]]:
    k = draw(st.integers(min_value=0, max_value=5))
    blocks = draw(st.integers(min_value=k + 1, max_value=k + 4))
    scheme = PermutedScheme(max_distance=k, blocks=blocks)
    fp = draw(U64)
    positions = draw(st.sets(st.integers(min_value=0, max_value=63), max_size=k))
    return scheme, fp, positions


@settings(max_examples=500)
@given(case=scheme_and_flips())
def test_within_k_always_shares_a_table_key(case: tuple[PermutedScheme, int, set[int]]) -> None:
    scheme, fp, positions = case
    other = flip(fp, positions)
    assert (fp ^ other).bit_count() <= scheme.max_distance
    shared = [a == b for a, b in zip(scheme.keys(fp), scheme.keys(other), strict=True)]
    assert any(shared)


@given(fp=U64, positions=st.sets(st.integers(min_value=0, max_value=63), min_size=4, max_size=4))
def test_four_flips_can_escape_every_table_of_the_paper_scheme(
    fp: int, positions: set[int]
) -> None:
    # the guarantee is exactly k: 4 flips, one in each 16-bit block, share no key
    scheme = PermutedScheme(max_distance=3)
    spread = {block * 16 + (p % 16) for block, p in enumerate(sorted(positions))}
    other = flip(fp, spread)
    assert not any(a == b for a, b in zip(scheme.keys(fp), scheme.keys(other), strict=True))


@settings(max_examples=300)
@given(fp=U64, data=st.data())
def test_k_plus_one_flips_can_escape_every_table_of_the_default_scheme(
    fp: int, data: st.DataObject
) -> None:
    # the guarantee is exactly k for the default too: k+1 flips in k+1 distinct blocks
    scheme = PermutedScheme()
    k = scheme.max_distance
    starts = [sum(scheme.block_widths[:i]) for i in range(scheme.n_blocks)]
    chosen = data.draw(
        st.lists(st.integers(0, scheme.n_blocks - 1), min_size=k + 1, max_size=k + 1, unique=True)
    )
    spread = {
        63 - (starts[b] + data.draw(st.integers(0, scheme.block_widths[b] - 1))) for b in chosen
    }
    other = flip(fp, spread)
    assert (fp ^ other).bit_count() == k + 1
    assert not any(a == b for a, b in zip(scheme.keys(fp), scheme.keys(other), strict=True))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"blocks": 4}, "blocks must be greater than max_distance=4, got 4"),
        ({"max_distance": 3, "blocks": 3}, "blocks must be greater than max_distance=3, got 3"),
        ({"max_distance": 2, "blocks": 1}, "got 1"),
        ({"blocks": 65}, "blocks must be at most bits=64, got 65"),
        ({"bits": 65}, "bits must be an int in 1..64, got 65"),
        ({"bits": 0}, "got 0"),
        ({"max_distance": -1}, "max_distance must be an int >= 0, got -1"),
        ({"max_distance": 10, "blocks": 40}, "tables"),
    ],
)
def test_invalid_schemes_name_the_value(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PermutedScheme(**kwargs)


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_keys_reject_values_outside_64_bits(bad: int) -> None:
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        PermutedScheme().keys(bad)


def test_describe_and_expected_candidates() -> None:
    assert PermutedScheme().describe() == "f=64 k=4 b=6 tables=15 key_bits=20/21/22"
    paper = PermutedScheme(max_distance=3)
    assert paper.describe() == "f=64 k=3 b=4 tables=4 key_bits=16"
    three_six = PermutedScheme(max_distance=3, blocks=6)
    assert three_six.describe() == "f=64 k=3 b=6 tables=20 key_bits=31/32/33"
    assert paper.expected_candidates(2**16) == pytest.approx(4.0)
    assert three_six.expected_candidates(1_000_000) < 0.01
    # default: 1 table of 20 bits, 8 of 21, 6 of 22 (keys from blocks 11,11,11,11,10,10)
    default = PermutedScheme()
    assert sorted(t.key_bits for t in default.tables) == [20] + [21] * 8 + [22] * 6
    assert default.expected_candidates(2**22) == pytest.approx(4 + 8 * 2 + 6)


def test_default_multi_index_blocks_keep_the_probe_within_the_lock_bound() -> None:
    from simhash_filter.index.schemes import MAX_DEFAULT_PROBES, MultiIndexScheme

    for k in range(0, 12):
        scheme = MultiIndexScheme(max_distance=k)
        assert len(scheme.probe_keys(0x0123_4567_89AB_CDEF)) == scheme.n_probes
        assert scheme.n_probes <= MAX_DEFAULT_PROBES
    assert MultiIndexScheme(max_distance=8).n_blocks == 3  # 718 probes: the fewest rows read
    assert MultiIndexScheme(max_distance=9).n_blocks == 4  # 3 blocks would probe 2,258 keys


@settings(max_examples=60, deadline=None)
@given(
    fp=U64,
    kind=st.sampled_from(["permuted", "multi-index", "minhash-lsh"]),
    slots=st.none() | st.sampled_from([64, 256]),
    seed=st.integers(0, 1000),
)
def test_page_keys_are_index_items_and_probe_keys(
    fp: int, kind: str, slots: int | None, seed: int
) -> None:
    # the store makes a page's keys with page_keys (band keys once): the same as asked apart
    import numpy as np

    from simhash_filter.core.signature import encode_sketch
    from simhash_filter.index.schemes import make_scheme

    scheme = make_scheme(kind, max_distance=64 if kind == "minhash-lsh" else 3)
    sketch = None
    if slots is not None:  # 64 slots: too few for the bands, the fallback keys
        rng = np.random.default_rng(seed)
        sketch = encode_sketch(rng.integers(0, 1 << 16, slots, dtype=np.uint16))
    assert scheme.page_keys(fp, sketch) == (
        scheme.index_items(fp, sketch),
        scheme.probe_keys(fp, sketch),
    )


@pytest.mark.parametrize(("bands", "rows"), [(18, 8), (5, 3), (16, 16), (32, 5), (1, 1)])
def test_band_keys_are_the_xor_of_each_strided_bands_big_endian_words(
    bands: int, rows: int
) -> None:
    # the definition in MinHashLshScheme's doc, computed on NumPy arrays (the crawl process
    # computes it without NumPy; the SQL spelling is pinned in tests/store/test_pg_function.py)
    import random

    import numpy as np

    from simhash_filter.core.signature import encode_slots
    from simhash_filter.index.minhash_lsh import MinHashLshScheme

    scheme = MinHashLshScheme(blocks=bands, rows=rows)
    rng = random.Random(bands * 100 + rows)
    for _ in range(30):
        slots = 1 << (bands * rows - 1).bit_length()
        raw = rng.randbytes(2 * slots)
        layout = np.frombuffer(raw[: 2 * bands * rows], dtype=np.uint8).reshape(rows, bands, 2)
        width = 2 * rows
        body = np.zeros((bands, 8 * -(-width // 8)), dtype=np.uint8)
        body[:, :width] = layout.transpose(1, 0, 2).reshape(bands, width)
        expected = [int(key) for key in np.bitwise_xor.reduce(body.view(">u8"), axis=1)]
        assert scheme.band_keys(encode_slots(raw)) == expected
