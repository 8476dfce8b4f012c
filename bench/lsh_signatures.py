"""Signatures of every public set for bench/bench_lsh.py, signed once and cached: the
fingerprint and sketch ``Fingerprinter().sign`` makes, and, for the 16-bit check, the same
sketch bins' full 64-bit values.
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import bench_quality as bq
from bench import quality_data as qd
from simhash_filter import Fingerprinter
from simhash_filter.core import sketch as _sketch
from simhash_filter.core.signature import decode_sketch

__all__ = ["Signed", "sign_all", "signed"]

_U64 = np.uint64


@dataclass
class Signed:
    fp: np.ndarray  # uint64 simhash
    valid: np.ndarray  # bool: sign() gave a signature
    slots: np.ndarray  # uint16 (pages, 256): the sketch as stored
    wide: np.ndarray  # uint64 (pages, 256): the same bins' full 64-bit values
    shingles: np.ndarray  # distinct 5-grams of the text


def sign_all(texts: list[str]) -> Signed:
    from simhash_filter.core.text import normalize

    fper = Fingerprinter()
    n, s = len(texts), fper.sketch_slots
    out = Signed(
        np.zeros(n, _U64), np.zeros(n, bool), np.zeros((n, s), np.uint16),
        np.zeros((n, s), _U64), np.zeros(n, np.int64),
    )  # fmt: skip
    for i, text in enumerate(texts):
        text = text[: bq.MAX_CHARS]
        sig = fper.sign(text)
        hashes = _sketch.shingle_hashes(normalize(text))
        out.wide[i] = _sketch.wide_sketch(hashes, s)
        out.shingles[i] = len(hashes)
        if sig is None:
            out.slots[i] = (out.wide[i] & _U64(0xFFFF)).astype(np.uint16)
            continue
        out.fp[i], out.valid[i] = sig.fingerprint, True
        out.slots[i] = decode_sketch(sig.sketch).text
        if not np.array_equal(out.slots[i], (out.wide[i] & _U64(0xFFFF)).astype(np.uint16)):
            raise AssertionError(f"wide sketch of text {i} does not match the package's")
    return out


def signed(ds: qd.DataSet, cache: Path) -> Signed:
    key = f"{Fingerprinter().spec}|{ds.name}|{len(ds.texts)}|{bq.MAX_CHARS}"
    path = cache / f"lsh-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"
    if path.exists():
        with np.load(path) as z:
            return Signed(*(z[f] for f in Signed.__dataclass_fields__))
    t0 = time.perf_counter()
    sig = sign_all(ds.texts)
    print(f"  signed {ds.name}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{f: getattr(sig, f) for f in Signed.__dataclass_fields__})
    return sig
