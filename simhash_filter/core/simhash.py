"""Charikar's simhash over weighted features, and Hamming distance.

Each feature is hashed to ``bits`` bits; every bit column sums +weight where the
feature's bit is 1 and −weight where it is 0; the fingerprint has bit i set where
column i's sum is positive. The accumulation is one NumPy matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING

import mmh3

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BITS = 64
DEFAULT_SEED = 0x5EED
MASK64 = (1 << 64) - 1


def mmh3_64(feature: str, seed: int = DEFAULT_SEED) -> int:
    """The low 64 bits of MurmurHash3 x64-128 of the UTF-8 feature, unsigned."""
    # encoded here: mmh3's own str path crashes the interpreter on a lone surrogate
    return int(mmh3.hash64(feature.encode("utf-8"), seed, signed=False)[0])


def mmh3_64_many(features: Iterable[str], seed: int = DEFAULT_SEED) -> npt.NDArray[np.uint64]:
    """:func:`mmh3_64` of many features at once, as a NumPy array (the fast path): the
    128-bit digests of the UTF-8 features joined, with no Python frame a feature, and their
    low halves. (``mmh3.hash_bytes`` would take the str itself, but it crashes the
    interpreter on a lone surrogate, where ``str.encode`` raises.)"""
    import numpy as np

    joined = b"".join(map(mmh3.mmh3_x64_128_digest, map(str.encode, features), repeat(seed)))
    return np.frombuffer(joined, dtype="<u8")[::2]


def column_sums(
    hashes: Sequence[int] | npt.NDArray[np.uint64],
    weights: Sequence[float] | npt.NDArray[np.float64],
    bits: int = BITS,
) -> npt.NDArray[np.float64]:
    """The signed weight sum of every bit column (bit 0 = least significant bit)."""
    import numpy as np

    if not 1 <= bits <= 64:
        raise ValueError(f"bits must be between 1 and 64, got {bits}")
    if len(hashes) != len(weights):
        raise ValueError(f"{len(hashes)} hashes but {len(weights)} weights")
    if not len(hashes):
        return np.zeros(bits, dtype=np.float64)
    if isinstance(hashes, np.ndarray):
        h = np.ascontiguousarray(hashes, dtype="<u8")
    else:
        h = np.fromiter((x & MASK64 for x in hashes), dtype="<u8", count=len(hashes))
    bit_matrix = np.unpackbits(h.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    w = np.asarray(weights, dtype=np.float64)
    ones = w @ bit_matrix[:, :bits]  # weight of the features whose bit is 1
    result: npt.NDArray[np.float64] = 2.0 * ones - w.sum()
    return result


def fingerprint_from_sums(sums: npt.NDArray[np.float64]) -> int:
    """Bit i is 1 where column i's sum is > 0."""
    import numpy as np

    packed = np.packbits(sums > 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def simhash(
    features: Mapping[str, float],
    *,
    hash_function: Callable[[str], int] | None = None,
    seed: int = DEFAULT_SEED,
    bits: int = BITS,
) -> int:
    """The ``bits``-bit Charikar simhash of weighted features (a ``Counter`` of features
    is their term-frequency weights).

    Features are hashed with :func:`mmh3_64` under ``seed``, or with ``hash_function``
    when one is given (tests inject small hashes this way).
    """
    import numpy as np

    weights = np.fromiter(features.values(), dtype=np.float64, count=len(features))
    if hash_function is None:
        return fingerprint_from_sums(column_sums(mmh3_64_many(features, seed), weights, bits))
    hashes = [hash_function(n) for n in features]
    return fingerprint_from_sums(column_sums(hashes, weights, bits))


def hamming_distance(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def similarity(a: int, b: int, bits: int = BITS) -> float:
    """``1 − d/bits``: 1.0 for equal fingerprints, about 0.5 for unrelated ones."""
    return 1.0 - hamming_distance(a, b) / bits
