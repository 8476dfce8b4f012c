"""Scoring pairs for ``bench_quality``: distances and agreements of labelled pairs, all
haystack pairs within ``KMAX`` bits, MinHash's haystack matches, and the binomial tail
that bounds the sketch's false confirmations."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench import bench_fingerprint as bf
from bench.lsh_bands import join_pairs
from bench.quality_data import THRESHOLD, DataSet
from simhash_filter.core.signature import encode_sketch
from simhash_filter.index.minhash_lsh import MinHashLshScheme

__all__ = [
    "KMAX",
    "BandHaystack",
    "Haystack",
    "Score",
    "agreements",
    "band_candidates",
    "band_haystack",
    "band_keys",
    "binomial_tail",
    "fp_distances",
    "haystack_pairs",
    "minhash_haystack",
    "pair_arrays",
    "popcount",
    "score",
]

KMAX = 12
"""The largest simhash distance the haystack pairs are kept to."""


Score = bf.Score


def score(predicted: np.ndarray, truth: np.ndarray) -> Score:
    return Score(
        int((predicted & truth).sum()),
        int((predicted & ~truth).sum()),
        int((~predicted & truth).sum()),
    )


def popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.int16)


def pair_arrays(ds: DataSet) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a = np.array([p[0] for p in ds.pairs])
    b = np.array([p[1] for p in ds.pairs])
    truth = np.array([p[2] for p in ds.pairs])
    groups = np.array([p[3] for p in ds.pairs])
    return a, b, truth, groups


def fp_distances(fps: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of each pair; 99 when either text has no fingerprint."""
    d = popcount(fps[0][a] ^ fps[0][b])
    return np.where((fps[1][a] == 1) & (fps[1][b] == 1), d, 99)


def agreements(sk: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (sk[a] == sk[b]).mean(axis=1)


@dataclass
class Haystack:
    """All pairs of the haystack within KMAX bits, and the distance histogram."""

    i: np.ndarray
    j: np.ndarray
    d: np.ndarray
    real: np.ndarray  # listed in high_overlap_pairs.tsv (J >= 0.5)
    hist_unrelated: np.ndarray  # pairs per distance 0..64, real copies left out
    pairs_unrelated: int


def haystack_pairs(fps: np.ndarray, ds: DataSet) -> Haystack:
    valid = np.nonzero(fps[1] == 1)[0]
    f = fps[0][valid]
    hist = np.zeros(65, dtype=np.int64)
    found_i, found_j, found_d = [], [], []
    for start in range(len(f)):
        d = popcount(f[start + 1 :] ^ f[start])
        hist += np.bincount(d, minlength=65)
        close = np.nonzero(d <= KMAX)[0]
        found_i.append(np.full(len(close), valid[start]))
        found_j.append(valid[start + 1 + close])
        found_d.append(d[close])
    i, j, d = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_d)
    real = np.array([(int(x), int(y)) in ds.overlap for x, y in zip(i, j, strict=True)], dtype=bool)
    for x, y in ds.overlap:
        if fps[1][x] == 1 and fps[1][y] == 1:
            hist[int(popcount(np.array([fps[0][x] ^ fps[0][y]]))[0])] -= 1
    n = len(valid)
    return Haystack(i, j, d, real, hist, n * (n - 1) // 2 - int(real.sum()))


def minhash_haystack(mh: np.ndarray, ds: DataSet) -> tuple[np.ndarray, np.ndarray]:
    """Pairs with estimated Jaccard >= 0.8 (exact over all pairs, in blocks)."""
    out_i, out_j = [], []
    need = math.ceil(THRESHOLD * mh.shape[1])
    block = 64
    for start in range(0, len(mh), block):
        rows = mh[start : start + block]
        eq = (rows[:, None, :] == mh[None, :, :]).sum(axis=2)
        for r in range(len(rows)):
            n = start + r
            js = np.nonzero(eq[r, n + 1 :] >= need)[0] + n + 1
            out_i += [n] * len(js)
            out_j += js.tolist()
    return np.array(out_i, dtype=np.int64), np.array(out_j, dtype=np.int64)


def binomial_tail(slots: int, p: float, t: float) -> float:
    """P[Bin(slots, p) >= ceil(t * slots)]."""
    need = math.ceil(t * slots - 1e-9)
    return float(
        sum(math.comb(slots, x) * p**x * (1 - p) ** (slots - x) for x in range(need, slots + 1))
    )


def band_keys(sk: np.ndarray, scheme: MinHashLshScheme) -> np.ndarray:
    """(pages, bands) band keys of the sketches ``sk`` (pages, slots) exactly as the default
    index stores them (``MinHashLshScheme.band_keys`` of each page's sketch bytes), so the
    bench scores the index the store uses rather than a copy of its key function."""
    out = np.zeros((len(sk), scheme.n_blocks), dtype=np.uint64)
    for n, slots in enumerate(sk):
        keys = scheme.band_keys(encode_sketch(slots))
        if keys is None:
            raise ValueError(f"a sketch of {len(slots)} slots is too short for {scheme!r}")
        out[n] = keys
    return out


def band_candidates(
    keys: np.ndarray, valid: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Whether each pair (a, b) shares a band key, both pages signed (a page without a
    signature is never stored, so never a candidate)."""
    shared: np.ndarray = (keys[a] == keys[b]).any(axis=1) & valid[a] & valid[b]
    return shared


@dataclass
class BandHaystack:
    """The haystack pairs that share a band key (both signed), as the default index finds them."""

    i: np.ndarray
    j: np.ndarray
    real: np.ndarray  # listed in high_overlap_pairs.tsv (J >= 0.5)


def band_haystack(keys: np.ndarray, valid: np.ndarray, ds: DataSet) -> BandHaystack:
    idx = np.nonzero(valid)[0]
    codes = join_pairs(keys[idx], idx, len(valid))
    i, j = codes // len(valid), codes % len(valid)
    real = np.array([(int(x), int(y)) in ds.overlap for x, y in zip(i, j, strict=True)], dtype=bool)
    return BandHaystack(i, j, real)
