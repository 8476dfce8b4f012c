"""The minhash-lsh scheme: candidates by LSH banding over the page's MinHash sketch, and
the paper's k=3 tables for pages without one. :mod:`simhash_filter.index.schemes` says why.
Pure code: no I/O, no state beyond the frozen scheme.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from simhash_filter.core.signature import sketch_parts

from .simhash_tables import MINHASH_LSH, BlockTable, PermutedScheme, TableKey, TableScheme

FALLBACK_SCHEME = PermutedScheme(bits=64, max_distance=3, blocks=4)
"""Where a :class:`MinHashLshScheme` stores pages without a sketch: the paper's 4 tables of
16 bits, which find every sketchless page within 3 bits (the rule's fallback distance).
Only sketchless pages are stored there, so its probes read rows in proportion to those
pages alone."""

DEFAULT_LSH_BANDS = 18
"""Bands of the default MinHash LSH index (docs/quality.md, "The candidate index")."""
DEFAULT_LSH_ROWS = 8
"""Sketch slots a band."""
LSH_CANDIDATE_DISTANCE = 64
"""The match rule's k1 under the minhash-lsh index: no simhash condition, the bands find
the candidates and the sketch decides (docs/quality.md, "The candidate index")."""
SKETCH_HEADER_BYTES = 5
"""Bytes before a sketch's first slot (signature.encode_sketch's header)."""
MAX_LSH_BANDS = 256


@dataclass(frozen=True, slots=True)
class MinHashLshScheme(TableScheme):
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
    it). The store's SQL computes the same keys (store/decide_function.sql), pinned by tests.
    """

    kind: ClassVar[str] = MINHASH_LSH
    sketch_keyed: ClassVar[bool] = True

    bits: int = 64
    max_distance: int = 64
    blocks: int | None = None  # bands (the name meta and the CLI share with the other kinds)
    rows: int = DEFAULT_LSH_ROWS
    tables: tuple[BlockTable, ...] = field(init=False, repr=False, compare=False)

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
            BlockTable(bands + t.table_no, t.blocks, t.key_bits) for t in FALLBACK_SCHEME.tables
        )
        object.__setattr__(
            self,
            "tables",
            tuple(BlockTable(t, (), 64) for t in range(bands)) + fallback,
        )

    @property
    def n_probes(self) -> int:
        """Keys a query with a sketch looks up: one a band and one a fallback table."""
        return self.n_tables

    @property
    def block_cuts(self) -> tuple[tuple[int, int], ...]:
        """The fallback tables' block cuts (see :attr:`PermutedScheme.block_cuts`)."""
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
        pad = bytes(-width % 8)
        columns = memoryview(slots).cast("H")  # 16-bit slots, their bytes as stored
        keys = []
        for band in range(self.n_blocks):
            body = columns[band :: self.n_blocks].tobytes() + pad  # slots band + bands*i
            key = 0
            for start in range(0, len(body), 8):
                key ^= int.from_bytes(body[start : start + 8], "big")
            keys.append(key)
        return keys

    def _text_slots(self, sketch: bytes | None) -> bytes | None:
        """The bytes of the slots the bands read, or None (see :meth:`band_keys`)."""
        if sketch is None:
            return None
        try:
            text = sketch_parts(sketch).text
        except ValueError:  # not a sketch's bytes
            return None
        needed = 2 * self.slots_needed
        return text[:needed] if len(text) >= needed else None

    def fallback_items(self, fingerprint: int) -> list[TableKey]:
        """The fingerprint's keys in the fallback tables."""
        first = self.n_blocks
        return [(first + t, key) for t, key in enumerate(FALLBACK_SCHEME.keys(fingerprint))]

    def index_items(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        """The band keys of a page with a sketch, else its fallback keys."""
        return self._index_items(fingerprint, self.band_keys(sketch))

    def probe_keys(self, fingerprint: int, sketch: bytes | None = None) -> list[TableKey]:
        """The band keys (with a sketch) and the fallback keys: a query finds the pages
        that share a band with it and the sketchless pages within 3 bits."""
        return self._probe_keys(fingerprint, self.band_keys(sketch))

    def page_keys(
        self, fingerprint: int, sketch: bytes | None = None
    ) -> tuple[list[TableKey], list[TableKey]]:
        """:meth:`index_items` and :meth:`probe_keys` of a page, its band keys made once."""
        keys = self.band_keys(sketch)
        return self._index_items(fingerprint, keys), self._probe_keys(fingerprint, keys)

    def _index_items(self, fingerprint: int, keys: list[int] | None) -> list[TableKey]:
        if keys is None:
            return self.fallback_items(fingerprint)
        if not 0 <= fingerprint < (1 << self.bits):
            raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fingerprint!r}")
        return list(enumerate(keys))

    def _probe_keys(self, fingerprint: int, keys: list[int] | None) -> list[TableKey]:
        fallback = self.fallback_items(fingerprint)
        return fallback if keys is None else list(enumerate(keys)) + fallback

    def min_key_bits(self) -> int:
        """The band keys' width (the fallback tables' 16 bits hold sketchless pages only)."""
        return 64

    def candidate_probability(self, similarity: float) -> float:
        """The probability that two pages whose sketches agree on a share ``similarity``
        of their slots share a band: ``1 - (1 - s**rows)**bands`` (the LSH S-curve)."""
        return 1.0 - (1.0 - similarity**self.rows) ** self.n_blocks

    def expected_candidates(self, n_pages: int) -> float:
        """Expected band-key collisions among ``n_pages`` unrelated random sketches (real
        text collides more often: docs/quality.md gives the measured rate)."""
        return self.n_blocks * n_pages / 2.0**64

    def in_words(self) -> str:
        """The scheme as a user reads it, e.g. ``MinHash LSH index: 18 bands of 8 rows,
        pages without a sketch: permuted simhash tables k=3``."""
        reach = (
            ""
            if self.max_distance >= self.bits
            else f", candidates within {self.max_distance} bits"
        )
        return (
            f"MinHash LSH index: {self.n_blocks} bands of {self.rows} rows{reach}, "
            f"pages without a sketch: permuted simhash tables k={FALLBACK_SCHEME.max_distance}"
        )

    def describe(self) -> str:
        """One line naming the scheme, e.g. ``f=64 index=minhash-lsh bands=16 rows=8 ...``."""
        return (
            f"f={self.bits} k={self.max_distance} index={MINHASH_LSH} bands={self.n_blocks} "
            f"rows={self.rows} tables={self.n_tables} fallback=k3/b4"
        )
