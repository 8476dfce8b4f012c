"""The simhash schemes of blocks and tables: the paper's permuted tables
(:class:`PermutedScheme`) and multi-index hashing (:class:`MultiIndexScheme`), with what every
scheme shares (:class:`TableScheme`). :mod:`simhash_filter.index.schemes` says how they find every
fingerprint within ``max_distance`` bits. Pure code: no I/O, no state beyond the frozen
scheme.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import ClassVar

TableKey = tuple[int, int]
"""(table_no, key): one index key."""

MAX_TABLES = 1024
"""A scheme with more tables than this is almost certainly a typo (e.g. blocks=64)."""

DEFAULT_MAX_DISTANCE = 4
"""k, the default when no match rule sets it (the choice is argued in docs/design.md)."""

MAX_PROBES = 10_000
"""A multi-index scheme probing more keys than this per query is almost certainly a typo."""

PERMUTED = "permuted"
MULTI_INDEX = "multi-index"
MINHASH_LSH = "minhash-lsh"
INDEX_KINDS = (MINHASH_LSH, PERMUTED, MULTI_INDEX)
"""The names of the scheme kinds (stored in the database's meta)."""
MIN_DEFAULT_KEY_BITS = 16
"""The narrowest table key a default scheme allows (the paper's k=3 scheme has 16)."""


def min_key_bits(bits: int, max_distance: int, blocks: int) -> int:
    """The narrowest table key of ``PermutedScheme(bits, max_distance, blocks)``, without
    building it: the ``blocks - max_distance`` narrowest blocks put together."""
    base, extra = divmod(bits, blocks)  # ``extra`` blocks are one bit wider
    chosen = blocks - max_distance
    return chosen * base + max(0, extra - max_distance)


def default_blocks(max_distance: int, bits: int = 64) -> int:
    """The fewest blocks whose tables all have keys of at least 16 bits.

    Fewer blocks mean fewer tables (index rows per page); wider keys mean fewer
    candidates per probe (N / 2**key_bits per table). k=3 gives the paper's 4 tables of
    16 bits; k=4 gives 6 blocks, 15 tables of 20-22 bits (5 blocks would leave 12-13-bit
    keys). When no scheme within ``MAX_TABLES``
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
class BlockTable:
    """One table: which blocks make its key, and how to cut them out of a fingerprint."""

    table_no: int
    blocks: tuple[int, ...]  # block indexes, 0 = the most significant block
    key_bits: int


class TableScheme:
    """What every scheme answers the same way (a mixin of the frozen scheme dataclasses)."""

    __slots__ = ()
    blocks: int | None
    tables: tuple[BlockTable, ...]

    @property
    def n_blocks(self) -> int:
        """``blocks`` as a plain int (never None after construction): the simhash's blocks,
        or the sketch's bands."""
        assert self.blocks is not None
        return self.blocks

    @property
    def n_tables(self) -> int:
        """How many tables (permuted: ``C(blocks, max_distance)``; multi-index: one a block;
        minhash-lsh: one a band and the fallback tables)."""
        return len(self.tables)


class _BlockScheme(TableScheme):
    """What the simhash schemes of blocks and tables answer the same way."""

    __slots__ = ()
    _cuts: tuple[tuple[int, int], ...]

    @property
    def block_cuts(self) -> tuple[tuple[int, int], ...]:
        """(shift, mask) of each block, the most significant first: block i of a
        fingerprint is ``(fp >> shift) & mask``."""
        return self._cuts

    sketch_keyed: ClassVar[bool] = False
    """The keys come from the fingerprint alone (the sketch is ignored)."""

    def index_keys(self, fingerprint: int) -> list[int]:
        raise NotImplementedError

    def index_items(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        """The (table_no, key) pairs stored for a page: its key in every table."""
        return list(enumerate(self.index_keys(fingerprint)))

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        raise NotImplementedError

    def page_keys(
        self, fingerprint: int, sketch: bytes | None = None
    ) -> tuple[list[TableKey], list[TableKey]]:
        """:meth:`index_items` and :meth:`probe_keys` of a page."""
        return self.index_items(fingerprint, sketch), self.probe_keys(fingerprint, sketch)


@dataclass(frozen=True, slots=True)
class PermutedScheme(_BlockScheme):
    """``bits``-bit fingerprints, found within ``max_distance`` via ``blocks`` blocks.

    ``blocks`` defaults to :func:`default_blocks` (the fewest tables with keys of at least
    16 bits: ``max_distance + 1`` for k <= 3).
    """

    kind: ClassVar[str] = PERMUTED

    bits: int = 64
    max_distance: int = DEFAULT_MAX_DISTANCE
    blocks: int | None = None
    block_widths: tuple[int, ...] = field(init=False, repr=False, compare=False)
    tables: tuple[BlockTable, ...] = field(init=False, repr=False, compare=False)
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
            tables.append(BlockTable(table_no=table_no, blocks=chosen, key_bits=key_bits))
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

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        """The (table_no, key) pairs looked up for a query: its own key in every table
        (a page within max_distance shares at least one)."""
        return list(enumerate(self.keys(fingerprint)))

    @property
    def n_probes(self) -> int:
        """Keys one query looks up (one per table)."""
        return len(self.tables)

    def min_key_bits(self) -> int:
        """The narrowest table key: candidates per probe grow as N / 2**min_key_bits."""
        return min(table.key_bits for table in self.tables)

    def expected_candidates(self, n_pages: int) -> float:
        """Expected candidates one probe of all tables returns among ``n_pages`` random
        fingerprints (the query's own near-duplicates not counted)."""
        return sum(n_pages / (1 << table.key_bits) for table in self.tables)

    def in_words(self) -> str:
        """The scheme as a user reads it, e.g. ``permuted simhash tables: within 3 bits,
        4 blocks, 4 tables of 16-bit keys``."""
        key_bits = "/".join(str(b) for b in sorted({t.key_bits for t in self.tables}))
        return (
            f"permuted simhash tables: within {self.max_distance} bits, {self.n_blocks} blocks, "
            f"{self.n_tables} tables of {key_bits}-bit keys"
        )

    def describe(self) -> str:
        """One line naming the scheme, e.g. ``f=64 k=3 b=4 tables=4 key_bits=16``."""
        key_bits = sorted({t.key_bits for t in self.tables})
        bits_text = "/".join(str(b) for b in key_bits)
        return (
            f"f={self.bits} k={self.max_distance} b={self.n_blocks} "
            f"tables={self.n_tables} key_bits={bits_text}"
        )


MAX_DEFAULT_PROBES = 1000
"""The most keys a default multi-index scheme probes per query. A PostgreSQL write locks
its probe keys one by one (advisory locks) up to about a thousand, beyond which it takes
the database-wide lock and concurrent crawlers write one at a time."""


def default_multi_index_blocks(bits: int = 64, max_distance: int = DEFAULT_MAX_DISTANCE) -> int:
    """Blocks of about 21 bits (3 at f=64, at least one), or more when those would probe
    more than :data:`MAX_DEFAULT_PROBES` keys a query (f=64: 4 blocks from k=9 on).

    Narrower blocks probe fewer keys but share each key with more stored pages: at
    k = 5..8 and a million pages or more, 3 blocks read the fewest rows per query; at
    k = 9 they probe 2,258 keys, which costs PostgreSQL its per-key locks and its probe
    time, while 4 blocks probe 308 (bench/history/index.md, 2026-11-22)."""
    blocks = max(1, round(bits / 21))
    while blocks < bits and _probe_count(bits, max_distance, blocks) > MAX_DEFAULT_PROBES:
        blocks += 1
    return blocks


def _radii(max_distance: int, blocks: int) -> tuple[int, ...]:
    """Each block's probe radius (Norouzi et al.): the first ``k mod m + 1`` blocks get
    ``k // m``, the rest one less, so two fingerprints within k agree within radius on
    at least one block."""
    r, a = divmod(max_distance, blocks)
    return tuple(r if i <= a else r - 1 for i in range(blocks))


def _widths(bits: int, blocks: int) -> tuple[int, ...]:
    """Block widths, as even as possible, the high-order blocks taking the extra bit."""
    base, extra = divmod(bits, blocks)
    return tuple(base + 1 if i < extra else base for i in range(blocks))


def _probe_count(bits: int, max_distance: int, blocks: int) -> int:
    """Keys a query probes in a multi-index scheme of ``blocks`` blocks."""
    return sum(
        sum(math.comb(w, i) for i in range(min(radius, w) + 1)) if radius >= 0 else 0
        for w, radius in zip(_widths(bits, blocks), _radii(max_distance, blocks), strict=True)
    )


def _masks(width: int, radius: int) -> tuple[int, ...]:
    """Every ``width``-bit XOR mask of at most ``radius`` bits, the empty mask first."""
    masks = [0]
    for r in range(1, radius + 1):
        for positions in itertools.combinations(range(width), r):
            masks.append(sum(1 << p for p in positions))
    return tuple(masks)


@dataclass(frozen=True, slots=True)
class MultiIndexScheme(_BlockScheme):
    """``bits``-bit fingerprints, found within ``max_distance`` by multi-index hashing:
    ``blocks`` blocks (one table each), each probed within its radius (see the module doc).

    ``blocks`` defaults to :func:`default_multi_index_blocks` (3 of 21-22 bits at f=64,
    4 of 16 from k=9 on).
    """

    kind: ClassVar[str] = MULTI_INDEX

    bits: int = 64
    max_distance: int = DEFAULT_MAX_DISTANCE
    blocks: int | None = None
    block_widths: tuple[int, ...] = field(init=False, repr=False, compare=False)
    radii: tuple[int, ...] = field(init=False, repr=False, compare=False)
    tables: tuple[BlockTable, ...] = field(init=False, repr=False, compare=False)
    _cuts: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _masks: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 1 <= self.bits <= 64:
            raise ValueError(f"bits must be an int in 1..64, got {self.bits!r}")
        if not isinstance(self.max_distance, int) or self.max_distance < 0:
            raise ValueError(f"max_distance must be an int >= 0, got {self.max_distance!r}")
        blocks = (
            default_multi_index_blocks(self.bits, self.max_distance)
            if self.blocks is None
            else self.blocks
        )
        if isinstance(blocks, bool) or not isinstance(blocks, int) or not 1 <= blocks <= self.bits:
            raise ValueError(f"blocks must be an int in 1..bits={self.bits}, got {blocks!r}")
        object.__setattr__(self, "blocks", blocks)
        widths = _widths(self.bits, blocks)
        radii = _radii(self.max_distance, blocks)
        n_probes = _probe_count(self.bits, self.max_distance, blocks)
        if n_probes > MAX_PROBES:
            raise ValueError(
                f"blocks={blocks} with max_distance={self.max_distance} probes {n_probes} keys "
                f"per query (more than {MAX_PROBES}); choose more blocks"
            )
        shifts = []
        low = self.bits
        for width in widths:
            low -= width
            shifts.append(low)
        object.__setattr__(self, "block_widths", widths)
        object.__setattr__(self, "radii", radii)
        object.__setattr__(
            self,
            "tables",
            tuple(BlockTable(table_no=i, blocks=(i,), key_bits=w) for i, w in enumerate(widths)),
        )
        object.__setattr__(
            self, "_cuts", tuple((shifts[i], (1 << widths[i]) - 1) for i in range(blocks))
        )
        object.__setattr__(
            self,
            "_masks",
            tuple(
                _masks(w, min(radius, w)) if radius >= 0 else ()
                for w, radius in zip(widths, radii, strict=True)
            ),
        )

    @property
    def n_probes(self) -> int:
        """Keys one query looks up (every key within each block's radius)."""
        return sum(len(masks) for masks in self._masks)

    def index_keys(self, fingerprint: int) -> list[int]:
        """The keys stored for a page: its value in each block, in block order."""
        if not 0 <= fingerprint < (1 << self.bits):
            raise ValueError(
                f"fingerprint must be an unsigned {self.bits}-bit int, got {fingerprint!r}"
            )
        return [(fingerprint >> shift) & mask for shift, mask in self._cuts]

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        """The (table_no, key) pairs looked up for a query: every value within each
        block's radius of the query's own."""
        keys = self.index_keys(fingerprint)
        return [(t, keys[t] ^ mask) for t, masks in enumerate(self._masks) for mask in masks]

    def min_key_bits(self) -> int:
        """The narrowest block."""
        return min(self.block_widths)

    def expected_candidates(self, n_pages: int) -> float:
        """Expected candidates one probe returns among ``n_pages`` random fingerprints."""
        return sum(
            n_pages * len(masks) / (1 << w)
            for w, masks in zip(self.block_widths, self._masks, strict=True)
        )

    def in_words(self) -> str:
        """The scheme as a user reads it, e.g. ``multi-index simhash tables: within 7 bits,
        4 blocks probed within 1/1/1/1 bits, 68 keys a lookup``."""
        radii = "/".join(str(r) for r in self.radii)
        return (
            f"multi-index simhash tables: within {self.max_distance} bits, {self.n_blocks} "
            f"blocks probed within {radii} bits, {self.n_probes} keys a lookup"
        )

    def describe(self) -> str:
        """One line naming the scheme, e.g.
        ``f=64 k=7 index=multi-index b=4 tables=4 key_bits=16 radius=1/1/1/1 probes=68``."""
        key_bits = "/".join(str(b) for b in sorted(set(self.block_widths)))
        radii = "/".join(str(r) for r in self.radii)
        return (
            f"f={self.bits} k={self.max_distance} index={MULTI_INDEX} b={self.n_blocks} "
            f"tables={self.n_tables} key_bits={key_bits} radius={radii} probes={self.n_probes}"
        )
