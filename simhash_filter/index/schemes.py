"""Index schemes: how the store finds every fingerprint within ``max_distance`` bits.

Three kinds, one interface (``index_items``: the (table, key) pairs stored per page;
``probe_keys``: those looked up per query), so one probe in the store serves them all.
The kinds live in :mod:`simhash_filter.index.simhash_tables` (the simhash tables) and
:mod:`simhash_filter.index.minhash_lsh`; this module names them and makes one by name:

- :class:`PermutedScheme`, the permuted tables of Manku, Jain & Das Sarma (WWW 2007, §3.1).
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

The simhash schemes ignore the sketch.
Keys are plain unsigned ints, compact (at most ``bits`` wide, usually far fewer), so a
database stores them in few bytes. Pure code: no I/O, no state beyond the frozen scheme.
The measured cost of each (rows and bytes per page, candidates, latency) is in
bench/history/index.md.
"""

from __future__ import annotations

from .minhash_lsh import (
    DEFAULT_LSH_BANDS,
    DEFAULT_LSH_ROWS,
    FALLBACK_SCHEME,
    LSH_CANDIDATE_DISTANCE,
    MAX_LSH_BANDS,
    SKETCH_HEADER_BYTES,
    MinHashLshScheme,
)
from .simhash_tables import (
    DEFAULT_MAX_DISTANCE,
    INDEX_KINDS,
    MAX_DEFAULT_PROBES,
    MAX_PROBES,
    MAX_TABLES,
    MIN_DEFAULT_KEY_BITS,
    MINHASH_LSH,
    MULTI_INDEX,
    PERMUTED,
    BlockTable,
    MultiIndexScheme,
    PermutedScheme,
    TableKey,
    default_blocks,
    default_multi_index_blocks,
    min_key_bits,
)

__all__ = [
    "DEFAULT_LSH_BANDS",
    "DEFAULT_LSH_ROWS",
    "DEFAULT_MAX_DISTANCE",
    "FALLBACK_SCHEME",
    "INDEX_KINDS",
    "LSH_CANDIDATE_DISTANCE",
    "MAX_DEFAULT_PROBES",
    "MAX_LSH_BANDS",
    "MAX_PROBES",
    "MAX_TABLES",
    "MINHASH_LSH",
    "MIN_DEFAULT_KEY_BITS",
    "MULTI_INDEX",
    "PERMUTED",
    "PERMUTED_MAX_DEFAULT_DISTANCE",
    "SKETCH_HEADER_BYTES",
    "BandScheme",
    "BlockTable",
    "IndexScheme",
    "MinHashLshScheme",
    "MultiIndexScheme",
    "PermutedScheme",
    "TableKey",
    "default_blocks",
    "default_index",
    "default_multi_index_blocks",
    "make_scheme",
    "min_key_bits",
]

PERMUTED_MAX_DEFAULT_DISTANCE = 4
"""The largest k whose default scheme is the permuted tables (C(b, k) rows a page grow
too fast beyond it: 21 tables at k=5, 120 at k=7); larger k get multi-index hashing
(bench/history/index.md compares them)."""


def default_index(max_distance: int, *, sketches: bool = False) -> str:
    """The scheme kind of a new database indexed for ``max_distance``: MinHash LSH when
    the match rule confirms candidates with sketches (``sketches``), else the simhash
    tables (permuted up to k=4, multi-index beyond)."""
    if sketches:
        return MINHASH_LSH
    return PERMUTED if max_distance <= PERMUTED_MAX_DEFAULT_DISTANCE else MULTI_INDEX


IndexScheme = PermutedScheme | MultiIndexScheme | MinHashLshScheme
"""Any kind of scheme."""

BandScheme = PermutedScheme
"""The old name of :class:`PermutedScheme` (a "band" is an LSH band only; docs/design.md)."""


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
        return PermutedScheme(bits=bits, max_distance=max_distance, blocks=blocks)
    if kind == MULTI_INDEX:
        return MultiIndexScheme(bits=bits, max_distance=max_distance, blocks=blocks)
    raise ValueError(f"index must be one of {', '.join(INDEX_KINDS)}, got {kind!r}")
