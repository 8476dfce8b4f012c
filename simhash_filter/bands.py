"""Band schemes: the permuted tables of Manku, Jain & Das Sarma (WWW 2007, §3.1).

The ``bits`` of a fingerprint are cut into ``blocks`` contiguous blocks (sizes as even
as possible, the high-order blocks taking the extra bit). A *table* is one choice of
``blocks - max_distance`` blocks; its key is the concatenation of those blocks' bits.
Two fingerprints within Hamming distance ``max_distance`` differ in at most
``max_distance`` blocks, so they agree on every block of at least one table and share
that table's key (pigeonhole). There are ``C(blocks, max_distance)`` tables.

Keys are plain unsigned ints, compact (at most ``bits`` wide, usually far fewer), so a
database stores them in few bytes. Pure code: no I/O, no state beyond the frozen scheme.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

MAX_TABLES = 1024
"""A scheme with more tables than this is almost certainly a typo (e.g. blocks=64)."""

DEFAULT_MAX_DISTANCE = 4
"""k, the default: on the labelled near-duplicates of bench/bench_fingerprint.py, k=4
is the smallest distance with F1 >= 0.97 on English and Chinese (k=3, the paper's,
misses 5-12% of lightly edited copies); README.md has the figures and the index cost."""

MIN_DEFAULT_KEY_BITS = 16
"""The narrowest table key a default scheme allows (the paper's k=3 scheme has 16)."""


def min_key_bits(bits: int, max_distance: int, blocks: int) -> int:
    """The narrowest table key of ``BandScheme(bits, max_distance, blocks)``, without
    building it: the ``blocks - max_distance`` narrowest blocks put together."""
    base, extra = divmod(bits, blocks)  # ``extra`` blocks are one bit wider
    chosen = blocks - max_distance
    return chosen * base + max(0, extra - max_distance)


def default_blocks(max_distance: int, bits: int = 64) -> int:
    """The fewest blocks whose tables all have keys of at least 16 bits.

    Fewer blocks mean fewer tables (index rows per page); wider keys mean fewer
    candidates per probe. k=3 gives the paper's 4 tables of 16 bits; k=4 gives 6 blocks,
    15 tables of 20-22 bits (5 blocks would leave 12-13-bit keys: ~N/8192 candidates per
    table, about 730 a probe at a million pages). When no scheme within ``MAX_TABLES``
    tables reaches 16 bits (short fingerprints, or k > 10 at 64 bits) it is
    ``max_distance + 1``, the fewest tables.
    """
    if not isinstance(max_distance, int) or max_distance < 0:
        raise ValueError(f"max_distance must be an int >= 0, got {max_distance!r}")
    for blocks in range(max_distance + 1, bits + 1):
        if math.comb(blocks, max_distance) > MAX_TABLES:
            break
        if min_key_bits(bits, max_distance, blocks) >= MIN_DEFAULT_KEY_BITS:
            return blocks
    return max_distance + 1


@dataclass(frozen=True, slots=True)
class BandTable:
    """One table: which blocks make its key, and how to cut them out of a fingerprint."""

    table_no: int
    blocks: tuple[int, ...]  # block indexes, 0 = the most significant block
    key_bits: int


@dataclass(frozen=True, slots=True)
class BandScheme:
    """``bits``-bit fingerprints, found within ``max_distance`` via ``blocks`` blocks.

    ``blocks`` defaults to :func:`default_blocks` (the fewest tables with keys of at least
    16 bits: ``max_distance + 1`` for k <= 3).
    """

    bits: int = 64
    max_distance: int = DEFAULT_MAX_DISTANCE
    blocks: int | None = None
    block_widths: tuple[int, ...] = field(init=False, repr=False, compare=False)
    tables: tuple[BandTable, ...] = field(init=False, repr=False, compare=False)
    _cuts: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _joins: tuple[tuple[tuple[int, int], ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 1 <= self.bits <= 64:
            raise ValueError(f"bits must be an int in 1..64, got {self.bits!r}")
        if not isinstance(self.max_distance, int) or self.max_distance < 0:
            raise ValueError(f"max_distance must be an int >= 0, got {self.max_distance!r}")
        blocks = (
            default_blocks(self.max_distance, self.bits) if self.blocks is None else self.blocks
        )
        if not isinstance(blocks, int):
            raise ValueError(f"blocks must be an int, got {blocks!r}")
        if blocks <= self.max_distance:
            raise ValueError(
                f"blocks must be greater than max_distance={self.max_distance}, got {blocks}"
            )
        if blocks > self.bits:
            raise ValueError(f"blocks must be at most bits={self.bits}, got {blocks}")
        n_tables = math.comb(blocks, self.max_distance)
        if n_tables > MAX_TABLES:
            raise ValueError(
                f"blocks={blocks} with max_distance={self.max_distance} makes {n_tables} "
                f"tables (more than {MAX_TABLES}); choose fewer blocks"
            )
        object.__setattr__(self, "blocks", blocks)

        base, extra = divmod(self.bits, blocks)
        widths = tuple(base + 1 if i < extra else base for i in range(blocks))
        # shift of each block: block 0 holds the most significant bits
        shifts = []
        low = self.bits
        for width in widths:
            low -= width
            shifts.append(low)
        tables = []
        # keys() cuts every block once, then joins each table's blocks: block i shifted
        # left by the widths of the table's blocks after it (the probe's hot path)
        joins = []
        chosen_sets = itertools.combinations(range(blocks), blocks - self.max_distance)
        for table_no, chosen in enumerate(chosen_sets):
            key_bits = sum(widths[i] for i in chosen)
            tables.append(BandTable(table_no=table_no, blocks=chosen, key_bits=key_bits))
            lefts = []
            for i in chosen:
                key_bits -= widths[i]
                lefts.append((i, key_bits))
            joins.append(tuple(lefts))
        object.__setattr__(self, "block_widths", widths)
        object.__setattr__(self, "tables", tuple(tables))
        object.__setattr__(
            self, "_cuts", tuple((shifts[i], (1 << widths[i]) - 1) for i in range(blocks))
        )
        object.__setattr__(self, "_joins", tuple(joins))

    @property
    def n_blocks(self) -> int:
        """``blocks`` as a plain int (never None after construction)."""
        assert self.blocks is not None
        return self.blocks

    @property
    def n_tables(self) -> int:
        """How many tables (``C(blocks, max_distance)``)."""
        return len(self.tables)

    def keys(self, fingerprint: int) -> list[int]:
        """One key per table, in table order."""
        if not 0 <= fingerprint < (1 << self.bits):
            raise ValueError(
                f"fingerprint must be an unsigned {self.bits}-bit int, got {fingerprint!r}"
            )
        cut = [(fingerprint >> shift) & mask for shift, mask in self._cuts]
        if self.n_blocks - self.max_distance == 2:  # k=4 b=6, the default
            return [(cut[i] << left) | cut[j] for (i, left), (j, _) in self._joins]
        return [sum(cut[i] << left for i, left in join) for join in self._joins]

    def index_keys(self, fingerprint: int) -> list[int]:
        """The keys stored for a page: one per table, in table order (:meth:`keys`)."""
        return self.keys(fingerprint)

    def probe_keys(self, fingerprint: int) -> list[tuple[int, int]]:
        """The (table_no, key) pairs looked up for a query: its own key in every table
        (a page within max_distance shares at least one)."""
        return list(enumerate(self.keys(fingerprint)))

    def min_key_bits(self) -> int:
        """The narrowest table key: candidates per probe grow as N / 2**min_key_bits."""
        return min(table.key_bits for table in self.tables)

    def expected_candidates(self, n_pages: int) -> float:
        """Expected candidates one probe of all tables returns among ``n_pages`` random
        fingerprints (the query's own near-duplicates not counted)."""
        return sum(n_pages / (1 << table.key_bits) for table in self.tables)

    def describe(self) -> str:
        """One line naming the scheme, e.g. ``f=64 k=3 b=4 tables=4 key_bits=16``."""
        key_bits = sorted({t.key_bits for t in self.tables})
        bits_text = "/".join(str(b) for b in key_bits)
        return (
            f"f={self.bits} k={self.max_distance} b={self.n_blocks} "
            f"tables={self.n_tables} key_bits={bits_text}"
        )
