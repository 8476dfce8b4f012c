"""Why the match rule misses a labelled pair: every missed positive of one set x language,
one by one, and how many misses a fingerprint variant should expect.

    .venv/bin/python -m bench.bench_misses --lang de                # German MDN, one by one
    .venv/bin/python -m bench.bench_misses --lang de --variants     # + expected misses a variant

For each positive pair (two versions of one page, J >= 0.8) that the simhash index's rule
(distance <= k1 and sketch >= min_similarity) misses, or that sits near its edges: the simhash
distance, the sketch similarity, the reference J (character 5-grams), the Jaccard of the two
feature sets, the cosine of their weight vectors, the distance that cosine predicts
(64 * angle / pi: Charikar's simhash differs in each bit with probability angle / pi), and
whether the default index (minhash-lsh bands) makes the pair a candidate. The step that
rejects a pair is the candidate step when the distance is > k1, the sketch when it is < t.

``--variants``: per set x language, the expected number of positives beyond k1 under each
fingerprint variant, sum of P[Bin(64, angle / pi) > k1] over the positive pairs (a smooth
figure, free of the luck of one set of hash bits), beside the measured count.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import quality_data as qd
from bench._common import DATA_DIR
from bench.quality_pairs import band_keys
from simhash_filter import Fingerprinter
from simhash_filter.core import stopwords as sw
from simhash_filter.core.signature import MatchRule, decode_sketch
from simhash_filter.index.defaults import IndexChoice, index_settings
from simhash_filter.index.minhash_lsh import MinHashLshScheme

MAX_CHARS = 50_000


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return min(1.0, dot / (na * nb)) if na and nb else 0.0


def beyond(p: float, k: int, bits: int = 64) -> float:
    """P[Bin(bits, p) > k]: a pair whose bits differ with probability p lands beyond k."""
    return sum(math.comb(bits, x) * p**x * (1 - p) ** (bits - x) for x in range(k + 1, bits + 1))


def lineage_sets(data: Path) -> list[qd.DataSet]:
    return [
        qd._lineage_set("neardup_peps_en", data / "neardup_peps_en", lambda d: "en"),
        qd._lineage_set(
            "neardup_mdn_multilingual", data / "neardup_mdn_multilingual", lambda d: d["lang"]
        ),
    ]


def one_by_one(ds: qd.DataSet, lang: str, rule: MatchRule) -> list[str]:
    fp = Fingerprinter()
    scheme = index_settings(IndexChoice()).scheme
    assert isinstance(scheme, MinHashLshScheme), scheme  # the default index
    k1, t = rule.candidate_distance, rule.min_similarity
    lines = [
        "| pair (a → b) | distance | sketch | J | feature Jaccard | TF cosine | "
        "expected distance | band candidate | rejected by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a, b, truth, group in ds.pairs:
        if group != lang or not truth:
            continue
        ta, tb = ds.texts[a][:MAX_CHARS], ds.texts[b][:MAX_CHARS]
        fa, fb = fp.fingerprint(ta), fp.fingerprint(tb)
        d = bin(fa ^ fb).count("1") if fa is not None and fb is not None else 99
        sa, sb = decode_sketch(fp.sketch(ta)).text, decode_sketch(fp.sketch(tb)).text
        s = float((sa == sb).mean())
        if d <= k1 and s >= t:
            continue
        wa, wb = fp.features(ta), fp.features(tb)
        fj = len(wa.keys() & wb.keys()) / len(wa.keys() | wb.keys())
        cos = cosine(wa, wb)
        keys = band_keys(np.stack([sa, sb]), scheme)
        band = bool((keys[0] == keys[1]).any())
        step = f"candidate step (d > {k1})" if d > k1 else f"sketch (< {t})"
        lines.append(
            f"| {ds.ids[a]} → {ds.ids[b].rsplit('-', 1)[1]} | {d} | {s:.3f} | "
            f"{qd.jaccard_c5(ta, tb):.3f} | {fj:.3f} | {cos:.3f} | "
            f"{64 * math.acos(cos) / math.pi:.1f} | {'yes' if band else 'no'} | {step} |"
        )
    return lines


def variants() -> dict[str, Callable[[], Fingerprinter]]:
    import stopwordsiso

    german = frozenset(stopwordsiso.stopwords("de"))
    return {
        "default": Fingerprinter,
        "+ German stopwords (stopwords-iso de)": lambda: Fingerprinter(
            stopwords=sw.DEFAULT | german
        ),
        "sublinear TF": lambda: Fingerprinter(weighting="sublinear"),
        "machine text kept": lambda: Fingerprinter(machine_text="keep"),
    }


def expected_misses(sets: list[qd.DataSet], k1: int) -> list[str]:
    groups = sorted({(ds.name, p[3]) for ds in sets for p in ds.pairs if p[2]})
    lines = [
        "| variant | " + " | ".join(g for _, g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for name, make in variants().items():
        fp = make()
        cells: dict[tuple[str, str], tuple[float, int]] = {}
        for ds in sets:
            need = {i for a, b, truth, _ in ds.pairs if truth for i in (a, b)}
            feats = {i: fp.features(ds.texts[i][:MAX_CHARS]) for i in need}
            fps = {i: fp.fingerprint(ds.texts[i][:MAX_CHARS]) for i in need}
            for a, b, truth, g in ds.pairs:
                if not truth:
                    continue
                p = math.acos(cosine(feats[a], feats[b])) / math.pi
                fa, fb = fps[a], fps[b]
                far = fa is None or fb is None or bin(fa ^ fb).count("1") > k1
                e, m = cells.get((ds.name, g), (0.0, 0))
                cells[(ds.name, g)] = (e + beyond(p, k1), m + int(far))
        lines.append(
            f"| {name} | " + " | ".join(f"{cells[g][0]:.1f} / {cells[g][1]}" for g in groups) + " |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--lang", default="de", help="the MDN locale (en: the PEPs)")
    parser.add_argument("--variants", action="store_true", help="expected misses a variant")
    args = parser.parse_args(argv)
    rule = MatchRule()
    sets = lineage_sets(args.data)
    ds = sets[0] if args.lang == "en" else sets[1]
    print(
        f"## Missed positives, {ds.name} / {args.lang} (k1={rule.candidate_distance}, "
        f"sketch >= {rule.min_similarity})\n"
    )
    print("\n".join(one_by_one(ds, args.lang, rule)))
    if args.variants:
        print(f"\n## Expected / measured positives beyond k1={rule.candidate_distance}\n")
        print("\n".join(expected_misses(sets, rule.candidate_distance)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
