"""Band schemes: how the store finds every fingerprint within ``max_distance`` bits.

Two kinds, one interface (``index_keys``: the keys stored per page, one per table;
``probe_keys``: the (table, key) pairs looked up per query), so one generic probe in the
store serves both:

- :class:`BandScheme`, the permuted tables of Manku, Jain & Das Sarma (WWW 2007, §3.1).
  The ``bits`` of a fingerprint are cut into ``blocks`` contiguous blocks (sizes as even
  as possible, the high-order blocks taking the extra bit). A *table* is one choice of
  ``blocks - max_distance`` blocks; its key is the concatenation of those blocks' bits.
  Two fingerprints within Hamming distance ``max_distance`` differ in at most
  ``max_distance`` blocks, so they agree on every block of at least one table and share
  that table's key (pigeonhole). ``C(blocks, max_distance)`` tables: rows per page grow
  fast with k; a query probes one key per table.
- :class:`MultiIndexScheme`, multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012).
  ``m`` blocks, one table each (m rows per page); with ``k = r*m + a`` (0 <= a < m), two
  fingerprints within k are within r on one of the first a+1 blocks or within r-1 on one
  of the others (else the distance would be at least (a+1)(r+1) + (m-a-1)r = k+1), so a
  query probes every key within that radius of its own block values.

- :class:`MinHashLshScheme`, locality-sensitive banding over the page's MinHash sketch
  (Broder 1997; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets* §3.4): ``bands``
  bands of ``rows`` sketch slots, each band one exact 64-bit key. Two pages are candidates
  when any band is equal, which happens with probability ``1 - (1 - J**rows)**bands`` for
  texts of Jaccard similarity J. A probe reads only real collisions, so its cost does not
  grow with the database. Pages without a sketch are stored under the paper's k=3 tables
  (:data:`FALLBACK_SCHEME`) instead, and every probe looks there too.

Every scheme answers ``index_items(fingerprint, sketch)`` (the (table, key) pairs a page
is stored under) and ``probe_keys(fingerprint, sketch)`` (those looked up for a query); the
simhash schemes ignore the sketch.

Keys are plain unsigned ints, compact (at most ``bits`` wide, usually far fewer), so a
database stores them in few bytes. Pure code: no I/O, no state beyond the frozen scheme.
The measured cost of each (rows and bytes per page, candidates, latency) is in
bench/README.md.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

BandKey = tuple[int, int]
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
"""The names of the two scheme kinds (stored in the database's meta)."""
PERMUTED_MAX_DEFAULT_DISTANCE = 4
"""The largest k whose default scheme is the permuted tables (C(b, k) rows a page grow
too fast beyond it: 21 tables at k=5, 120 at k=7); larger k get multi-index hashing
(bench/README.md compares them)."""


def default_index(max_distance: int, *, sketches: bool = False) -> str:
    """The scheme kind of a new database indexed for ``max_distance``: MinHash LSH when
    the match rule confirms candidates with sketches (``sketches``), else the simhash
    tables (permuted up to k=4, multi-index beyond)."""
    if sketches:
        return MINHASH_LSH
    return PERMUTED if max_distance <= PERMUTED_MAX_DEFAULT_DISTANCE else MULTI_INDEX


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
class BandTable:
    """One table: which blocks make its key, and how to cut them out of a fingerprint."""

    table_no: int
    blocks: tuple[int, ...]  # block indexes, 0 = the most significant block
    key_bits: int


class _BlockScheme:
    """What every scheme of blocks and tables answers the same way (a mixin of the two
    frozen scheme dataclasses below)."""

    __slots__ = ()
    blocks: int | None
    tables: tuple[BandTable, ...]
    _cuts: tuple[tuple[int, int], ...]

    @property
    def block_cuts(self) -> tuple[tuple[int, int], ...]:
        """(shift, mask) of each block, the most significant first: block i of a
        fingerprint is ``(fp >> shift) & mask``."""
        return self._cuts

    @property
    def n_blocks(self) -> int:
        """``blocks`` as a plain int (never None after construction)."""
        assert self.blocks is not None
        return self.blocks

    @property
    def n_tables(self) -> int:
        """How many tables (permuted: ``C(blocks, max_distance)``; multi-index: one a block)."""
        return len(self.tables)

    sketch_keyed: ClassVar[bool] = False
    """The keys come from the fingerprint alone (the sketch is ignored)."""

    def index_keys(self, fingerprint: int) -> list[int]:
        raise NotImplementedError

    def index_items(self, fingerprint: int, sketch: bytes | None = None) -> list[BandKey]:
        """The (table_no, key) pairs stored for a page: its key in every table."""
        return list(enumerate(self.index_keys(fingerprint)))


@dataclass(frozen=True, slots=True)
class BandScheme(_BlockScheme):
    """``bits``-bit fingerprints, found within ``max_distance`` via ``blocks`` blocks.

    ``blocks`` defaults to :func:`default_blocks` (the fewest tables with keys of at least
    16 bits: ``max_distance + 1`` for k <= 3).
    """

    kind: ClassVar[str] = PERMUTED

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

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[BandKey]:
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
    time, while 4 blocks probe 308 (bench/README.md, "Index schemes for larger k")."""
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
    tables: tuple[BandTable, ...] = field(init=False, repr=False, compare=False)
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
            tuple(BandTable(table_no=i, blocks=(i,), key_bits=w) for i, w in enumerate(widths)),
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

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[BandKey]:
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

    def describe(self) -> str:
        """One line naming the scheme, e.g.
        ``f=64 k=7 index=multi-index b=4 tables=4 key_bits=16 radius=1/1/1/1 probes=68``."""
        key_bits = "/".join(str(b) for b in sorted(set(self.block_widths)))
        radii = "/".join(str(r) for r in self.radii)
        return (
            f"f={self.bits} k={self.max_distance} index={MULTI_INDEX} b={self.n_blocks} "
            f"tables={self.n_tables} key_bits={key_bits} radius={radii} probes={self.n_probes}"
        )


FALLBACK_SCHEME = BandScheme(bits=64, max_distance=3, blocks=4)
"""Where a :class:`MinHashLshScheme` stores pages without a sketch: the paper's 4 tables of
16 bits, which find every sketchless page within 3 bits (the rule's fallback distance).
Only sketchless pages are stored there, so its probes read rows in proportion to those
pages alone."""

DEFAULT_LSH_BANDS = 18
"""Bands of the default MinHash LSH index (docs/quality.md, "The candidate index")."""
DEFAULT_LSH_ROWS = 8
"""Sketch slots a band."""
SKETCH_HEADER_BYTES = 5
"""Bytes before a sketch's first slot (signature.encode_sketch's header)."""
MAX_LSH_BANDS = 256


@dataclass(frozen=True, slots=True)
class MinHashLshScheme:
    """Candidates by LSH banding over the sketch: ``bands`` bands of ``rows`` slots.

    Band t is the text slots ``t, t + bands, t + 2*bands, ...`` (``rows`` of them: strided,
    so no band takes two neighbouring slots, which densification correlates on short
    texts); its key is the exclusive-or of the band's bytes (as stored: little-endian
    16-bit slots, in that order) read as big-endian 64-bit words, the last one
    zero-padded. Slots are hash values, so the fold is a hash of the band: unrelated
    bands share a key with probability about 2**-64. A
    page without a usable sketch (none, or fewer than ``bands * rows`` slots) is stored
    under :data:`FALLBACK_SCHEME`'s tables, numbered after the bands. ``max_distance`` is
    the simhash radius the match rule reaches (recorded with the scheme; no key depends on
    it). The store's SQL computes the same keys (store/check_function.sql), pinned by tests.
    """

    kind: ClassVar[str] = MINHASH_LSH
    sketch_keyed: ClassVar[bool] = True

    bits: int = 64
    max_distance: int = 64
    blocks: int | None = None  # bands (the name meta and the CLI share with the other kinds)
    rows: int = DEFAULT_LSH_ROWS
    tables: tuple[BandTable, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bits != 64:
            raise ValueError(f"the minhash-lsh index needs 64-bit fingerprints, got {self.bits!r}")
        if not isinstance(self.max_distance, int) or not 0 <= self.max_distance <= self.bits:
            raise ValueError(f"max_distance must be an int in 0..64, got {self.max_distance!r}")
        bands = DEFAULT_LSH_BANDS if self.blocks is None else self.blocks
        if isinstance(bands, bool) or not isinstance(bands, int) or not 1 <= bands <= MAX_LSH_BANDS:
            raise ValueError(f"bands must be an int in 1..{MAX_LSH_BANDS}, got {bands!r}")
        rows = self.rows
        if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= 64:
            raise ValueError(f"rows must be an int in 1..64, got {rows!r}")
        object.__setattr__(self, "blocks", bands)
        fallback = tuple(
            BandTable(bands + t.table_no, t.blocks, t.key_bits) for t in FALLBACK_SCHEME.tables
        )
        object.__setattr__(
            self,
            "tables",
            tuple(BandTable(t, (), 64) for t in range(bands)) + fallback,
        )

    @property
    def n_blocks(self) -> int:
        """The number of bands."""
        assert self.blocks is not None
        return self.blocks

    @property
    def n_tables(self) -> int:
        """Bands plus the fallback tables."""
        return len(self.tables)

    @property
    def n_probes(self) -> int:
        """Keys a query with a sketch looks up: one a band and one a fallback table."""
        return self.n_tables

    @property
    def block_cuts(self) -> tuple[tuple[int, int], ...]:
        """The fallback tables' block cuts (see :attr:`BandScheme.block_cuts`)."""
        return FALLBACK_SCHEME.block_cuts

    @property
    def slots_needed(self) -> int:
        """Sketch slots the bands read: a sketch with fewer is treated as none."""
        return self.n_blocks * self.rows

    def band_keys(self, sketch: bytes | None) -> list[int] | None:
        """The band keys of a sketch, in band order; None when it has too few slots (or is
        not a sketch's bytes), so the page is stored under the fallback tables."""
        slots = self._text_slots(sketch)
        if slots is None:
            return None
        width = 2 * self.rows
        words = -(-width // 8)
        body = np.zeros((self.n_blocks, 8 * words), dtype=np.uint8)
        # slot t + bands*i is row i, column t of the slots laid out ``rows`` x ``bands``
        strided = np.frombuffer(slots, dtype=np.uint8).reshape(self.rows, self.n_blocks, 2)
        body[:, :width] = strided.transpose(1, 0, 2).reshape(self.n_blocks, width)
        folded = np.bitwise_xor.reduce(body.view(">u8"), axis=1)
        return [int(key) for key in folded]

    def _text_slots(self, sketch: bytes | None) -> bytes | None:
        """The bytes of the slots the bands read, or None (see :meth:`band_keys`). The
        header is checked as signature.decode_sketch checks it, without importing it."""
        if sketch is None or len(sketch) < SKETCH_HEADER_BYTES:
            return None
        version, flags, text_log, page_log = sketch[0], sketch[1], sketch[2], sketch[3]
        if version != 1 or text_log > 15 or page_log > 15:
            return None
        text_slots = 1 << text_log
        page_slots = (1 << page_log) if flags & 1 else 0
        if len(sketch) != SKETCH_HEADER_BYTES + 2 * (text_slots + page_slots):
            return None
        if text_slots < self.slots_needed:
            return None
        return sketch[SKETCH_HEADER_BYTES : SKETCH_HEADER_BYTES + 2 * self.slots_needed]

    def fallback_items(self, fingerprint: int) -> list[BandKey]:
        """The fingerprint's keys in the fallback tables."""
        first = self.n_blocks
        return [(first + t, key) for t, key in enumerate(FALLBACK_SCHEME.keys(fingerprint))]

    def index_items(self, fingerprint: int, sketch: bytes | None = None) -> list[BandKey]:
        """The band keys of a page with a sketch, else its fallback keys."""
        keys = self.band_keys(sketch)
        if keys is None:
            return self.fallback_items(fingerprint)
        if not 0 <= fingerprint < (1 << self.bits):
            raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fingerprint!r}")
        return list(enumerate(keys))

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[BandKey]:
        """The band keys (with a sketch) and the fallback keys: a query finds the pages
        that share a band with it and the sketchless pages within 3 bits."""
        keys = self.band_keys(sketch)
        fallback = self.fallback_items(fingerprint)
        return fallback if keys is None else list(enumerate(keys)) + fallback

    def min_key_bits(self) -> int:
        """The band keys' width (the fallback tables' 16 bits hold sketchless pages only)."""
        return 64

    def expected_candidates(self, n_pages: int) -> float:
        """Expected band-key collisions among ``n_pages`` unrelated random sketches (real
        text collides more often: docs/quality.md gives the measured rate)."""
        return self.n_blocks * n_pages / 2.0**64

    def describe(self) -> str:
        """One line naming the scheme, e.g. ``f=64 index=minhash-lsh bands=16 rows=8 ...``."""
        return (
            f"f={self.bits} k={self.max_distance} index={MINHASH_LSH} bands={self.n_blocks} "
            f"rows={self.rows} tables={self.n_tables} fallback=k3/b4"
        )


IndexScheme = BandScheme | MultiIndexScheme | MinHashLshScheme
"""Any kind of scheme."""


def make_scheme(
    kind: str | None = None,
    *,
    bits: int = 64,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    blocks: int | None = None,
    rows: int | None = None,
) -> IndexScheme:
    """A scheme of ``kind`` (one of :data:`INDEX_KINDS`; None: :func:`default_index`).
    ``rows``: slots a band, for ``minhash-lsh`` only."""
    if kind is None:
        kind = default_index(max_distance)
    if kind == MINHASH_LSH:
        return MinHashLshScheme(
            bits=bits,
            max_distance=max_distance,
            blocks=blocks,
            rows=DEFAULT_LSH_ROWS if rows is None else rows,
        )
    if kind == PERMUTED:
        return BandScheme(bits=bits, max_distance=max_distance, blocks=blocks)
    if kind == MULTI_INDEX:
        return MultiIndexScheme(bits=bits, max_distance=max_distance, blocks=blocks)
    raise ValueError(f"index must be one of {', '.join(INDEX_KINDS)}, got {kind!r}")
