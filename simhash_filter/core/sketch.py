"""A MinHash sketch of a text's character 5-grams: the second, independent signature.

One-permutation hashing (Li, Owen & Zhang, NIPS 2012) with rotation densification
(Shrivastava & Li, ICML 2014): every 5-gram of the normalized text is hashed once
(a polynomial over its code points, then the splitmix64 finalizer), the top bits of the
hash choose one of ``slots`` bins and the bin keeps its smallest hash. The share of
bins two sketches hold equal estimates the Jaccard similarity of the two 5-gram sets,
the measure the labelled data is defined by. All NumPy: one pass over the text, no
per-shingle Python call. Nothing here depends on the tokenizer or on the simhash, so a
simhash collision and a sketch collision are independent events.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import numpy.typing as npt

from .signature import slot_agreement
from .sketch_params import DEFAULT_SLOTS, SHINGLE, SKETCH_SEED, check_slots

__all__ = [
    "DEFAULT_SLOTS",
    "SHINGLE",
    "SKETCH_SEED",
    "agreement",
    "contained_share",
    "passage_hashes",
    "shingle_hashes",
    "sketch_of",
    "text_sketch",
    "wide_sketch",
]

_U64 = np.uint64
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finalizer, element-wise (wrapping uint64 arithmetic)."""
    x = x ^ (x >> _U64(30))
    x = x * _M1
    x = x ^ (x >> _U64(27))
    x = x * _M2
    return x ^ (x >> _U64(31))


def shingle_hashes(text: str, *, seed: int = SKETCH_SEED) -> npt.NDArray[np.uint64]:
    """The distinct 64-bit hashes of the character 5-grams of ``text``, sorted.

    A text shorter than 5 characters is one shingle (itself); an empty text has none.
    """
    return np.unique(_all_hashes(text, seed))


def text_sketch(text: str, slots: int = DEFAULT_SLOTS) -> npt.NDArray[np.uint16]:
    """``sketch_of(shingle_hashes(text), slots)``, without sorting the hashes (each bin's
    smallest by :func:`_bin_minima`, in one pass)."""
    return _low_bits(wide_sketch(_all_hashes(text, SKETCH_SEED), slots))


def _all_hashes(text: str, seed: int) -> npt.NDArray[np.uint64]:
    """The 64-bit hash of every character 5-gram of ``text``, in text order (repeats too).
    In place: one array for the hashes, one for the finalizer's shifts (a page's text is
    ~10,000 shingles, and a new array an operation was most of the cost)."""
    if not text:
        return np.empty(0, dtype=np.uint64)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(_U64)
    if len(codes) < SHINGLE:
        codes = np.concatenate([codes, np.zeros(SHINGLE - len(codes), dtype=_U64)])
    n = len(codes) - SHINGLE + 1
    h = codes[:n] + _U64(seed)
    for j in range(1, SHINGLE):  # a polynomial in the code points (wrapping), then one finalizer
        h *= _GOLDEN
        h += codes[j : j + n]
    shifted = np.empty_like(h)
    for shift, factor in ((_U64(30), _M1), (_U64(27), _M2)):  # _mix, in place
        np.right_shift(h, shift, out=shifted)
        h ^= shifted
        h *= factor
    np.right_shift(h, _U64(31), out=shifted)
    h ^= shifted
    return h


def sketch_of(hashes: npt.NDArray[np.uint64], slots: int = DEFAULT_SLOTS) -> npt.NDArray[np.uint16]:
    """The densified one-permutation MinHash of sorted hashes (repeats change nothing):
    ``slots`` 16-bit values (the low 16 bits of :func:`wide_sketch`'s). An empty input gives
    all-zero slots (the caller does not sketch empty texts)."""
    return _low_bits(wide_sketch(hashes, slots))


def _low_bits(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint16]:
    return (values & _U64(0xFFFF)).astype(np.uint16)


def wide_sketch(
    hashes: npt.NDArray[np.uint64], slots: int = DEFAULT_SLOTS
) -> npt.NDArray[np.uint64]:
    """The sketch's bins at their full 64 bits, before :func:`sketch_of` keeps 16.

    A bin's value is its smallest hash; an empty bin borrows the value of the next non-empty
    bin to its right (circularly), mixed with the distance it borrowed over, so two texts
    agree on a borrowed bin only as often as on a real one. An empty input gives zeros. The
    hashes need not be sorted, and repeats change nothing.
    """
    check_slots(slots)
    if not len(hashes):
        return np.zeros(slots, dtype=_U64)
    values, filled = _bin_minima(hashes, slots)
    if not filled.all():
        idx = np.nonzero(filled)[0]
        pos = np.arange(slots)
        # next filled bin at or after each position, circularly
        nxt = np.searchsorted(idx, pos, side="left")
        wrap = nxt == len(idx)
        donor = idx[np.where(wrap, 0, nxt)]
        distance = np.where(wrap, donor + slots - pos, donor - pos).astype(_U64)
        with np.errstate(over="ignore"):
            borrowed = _mix(values[donor] ^ (distance * _GOLDEN))
        values = np.where(filled, values, borrowed)
    return values


def _bin_minima(
    hashes: npt.NDArray[np.uint64], slots: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Each bin's smallest hash (:data:`_EMPTY` for an empty bin; the bin is a hash's top
    bits), and which bins hold one: an unbuffered ``minimum.at``, one pass and no sort."""
    values = np.full(slots, _EMPTY, dtype=_U64)
    filled = np.zeros(slots, dtype=bool)
    if slots == 1:
        values[0] = hashes.min()
        filled[0] = True
        return values, filled
    bins = (hashes >> _U64(64 - slots.bit_length() + 1)).astype(np.intp)
    np.minimum.at(values, bins, hashes)
    filled[bins] = True
    return values, filled


def passage_hashes(text: str) -> npt.NDArray[np.uint64]:
    """The 5-gram hashes :func:`contained_share` compares: of ``text`` NFKC-normalized,
    case-folded, its white space collapsed (a lighter normalization than the fingerprint's,
    a tenth of its cost: a search reads every stored text)."""
    return shingle_hashes(" ".join(unicodedata.normalize("NFKC", text).casefold().split()))


def contained_share(part: npt.NDArray[np.uint64], whole: npt.NDArray[np.uint64]) -> float:
    """The share of ``part``'s 5-gram hashes that ``whole`` holds (both sorted and distinct,
    as :func:`shingle_hashes` gives them): how much of a passage a text contains. A sketch
    cannot tell it for a passage much shorter than the text (the text's smallest hashes are
    mostly not the passage's), so this reads the whole hashes."""
    if not len(part):
        return 0.0
    return float(np.count_nonzero(np.isin(part, whole, assume_unique=True))) / len(part)


def agreement(a: npt.NDArray[np.uint16], b: npt.NDArray[np.uint16]) -> float:
    """The share of slots two sketches hold equal: an estimate of the Jaccard similarity
    (:func:`~.signature.slot_agreement` of their bytes)."""
    return slot_agreement(a.astype("<u2").tobytes(), b.astype("<u2").tobytes())
