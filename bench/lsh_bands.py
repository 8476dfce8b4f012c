"""Band keys over a page's sketch, and the exact hash join that counts shared keys, for
bench/bench_lsh.py's sweep over many band shapes and layouts at once (vectorized over pages).
Its key is another hash than the package's (``simhash_filter.index.schemes.MinHashLshScheme``, which
folds the band's bytes), but both are equal exactly when the band's slots are (up to 2^-64),
so they find the same candidate pairs; the package's scheme is what the store uses.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from simhash_filter.core import sketch as _sketch
from simhash_filter.core.signature import decode_sketch

__all__ = ["LAYOUTS", "band_slots", "join_pairs", "keys_matrix", "page_keys"]

LAYOUTS = ("contiguous", "strided")
"""Which slots a band takes: t*r ... t*r+r-1, or t, t+b, t+2b, ... (also ``random:SEED``)."""

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_BAND_SEED = _U64(0xB4D5EED)


def band_slots(bands: int, rows: int, layout: str, slots: int = 256) -> npt.NDArray[np.int64]:
    """Slot indices of each band, shape (bands, rows)."""
    if bands * rows > slots:
        raise ValueError(f"{bands} bands of {rows} slots need {bands * rows} > {slots} slots")
    t = np.arange(bands)[:, None]
    j = np.arange(rows)[None, :]
    if layout == "contiguous":
        return t * rows + j
    if layout == "strided":
        return t + j * bands
    if layout.startswith("random"):  # random:SEED, a seeded random choice of slots
        perm = np.random.default_rng(int(layout.split(":")[1])).permutation(slots)
        return perm[: bands * rows].reshape(bands, rows)
    raise ValueError(f"layout is contiguous or strided, got {layout!r}")


def keys_matrix(sketches: np.ndarray, bands: int, rows: int, layout: str) -> np.ndarray:
    """Band keys of many pages: ``sketches`` (pages, slots) of any unsigned dtype ->
    (pages, bands) uint64. A key is a hash of the band number and its slots' values
    (splitmix64's finalizer after each slot), so equal keys mean equal slots (up to 2^-64)."""
    sel = sketches[:, band_slots(bands, rows, layout, sketches.shape[1])].astype(_U64)
    with np.errstate(over="ignore"):
        h = np.broadcast_to((np.arange(bands, dtype=_U64) * _GOLDEN) ^ _BAND_SEED, sel.shape[:2])
        for j in range(rows):
            h = _sketch._mix(h ^ sel[:, :, j])
    return h


def page_keys(
    fingerprint: int, sketch: bytes, bands: int, rows: int, layout: str = "strided"
) -> list[int]:
    """The index keys of one page, one per band (what ``index_keys(fingerprint, sketch)``
    of the package's scheme returns; the bench calls :func:`keys_matrix`, which equals this
    row by row). The fingerprint is not used by the bands."""
    slots = decode_sketch(sketch).text
    return [int(k) for k in keys_matrix(slots[None, :], bands, rows, layout)[0]]


def join_pairs(keys: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """Exact hash join: the codes i*n+j (i < j) of every pair of pages ``idx`` that hold an
    equal key in one band; ``keys`` is (len(idx), bands)."""
    found = []
    for t in range(keys.shape[1]):
        order = np.argsort(keys[:, t], kind="stable")
        col = keys[order, t]
        starts = np.nonzero(np.r_[True, col[1:] != col[:-1]])[0]
        sizes = np.diff(np.r_[starts, len(col)])
        for s, g in zip(starts[sizes > 1], sizes[sizes > 1], strict=True):
            members = np.sort(idx[order[s : s + g]])
            x, y = np.triu_indices(g, 1)
            found.append(members[x] * n + members[y])
    return np.unique(np.concatenate(found)) if found else np.empty(0, np.int64)
