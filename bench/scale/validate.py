"""How faithful the composed signatures are: composed vs ``Fingerprinter().sign`` of the text.

For a sample of pages (and of their near-copies) the page text is joined from its
sentences and signed for real; reported: the simhash distance distribution between the
composed and the real fingerprint, the share of sketch slots equal, and the share of
16 x 8-slot LSH band keys equal (a band key is equal iff its 8 slots are).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from simhash_filter import Fingerprinter
from simhash_filter.core.signature import decode_sketch

from .corpus import Pool, compose, near_copies, page_sentences, page_text

BANDS, ROWS = 16, 8


def validate(pool: Pool, seed: int, sample: int = 3000) -> dict[str, Any]:
    fp = Fingerprinter()
    idx = page_sentences(pool, seed, 0)[: sample // 2]
    copies = near_copies(pool, idx, np.random.default_rng([seed, 99]))
    rows = np.concatenate([idx, copies])
    fps, slots, tokens = compose(pool, rows)
    distances: Counter[int] = Counter()
    slot_equal = band_equal = band_total = unsigned = 0
    for i, row in enumerate(rows):
        sig = fp.sign(page_text(pool, row))
        if sig is None:
            unsigned += 1
            continue
        distances[(int(fps[i]) ^ sig.fingerprint).bit_count()] += 1
        real = decode_sketch(sig.sketch).text
        same = real == slots[i]
        slot_equal += int(same.sum())
        band_equal += int(same[: BANDS * ROWS].reshape(BANDS, ROWS).all(axis=1).sum())
        band_total += BANDS
    signed = sum(distances.values())
    return {
        "pages": len(rows),
        "signed": signed,
        "too_short_for_sign": unsigned,
        "simhash_equal": distances[0] / signed,
        "simhash_distance_hist": dict(sorted(distances.items())),
        "simhash_distance_mean": sum(d * c for d, c in distances.items()) / signed,
        "sketch_slot_agreement": slot_equal / (signed * slots.shape[1]),
        "band_key_agreement": band_equal / band_total,
        "mean_tokens": float(tokens.mean()),
        "mean_chars": float(np.mean([len(page_text(pool, r)) for r in rows[:500]])),
    }
