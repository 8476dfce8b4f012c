"""Near-duplicate quality on every public set at once: precision/recall/F1 per set and per
language, false pairs in the multilingual haystack, expected false drops at scale, and the
trade-off table of the match rule, side by side with MinHash and two simhash peers.

    .venv/bin/python -m bench.bench_quality --part signatures  # cache
    .venv/bin/python -m bench.bench_quality --part report        # tables from the cache
    .venv/bin/python -m bench.bench_quality --part speed       # per page

Data (the public sets described in bench/README.md, ``--data DIR``; read-only):
``neardup_peps_en``, ``neardup_mdn_multilingual`` (per locale), ``haystack_multilingual``
(per language) and the synthetic edits of ``pages_en``/``pages_zh`` made by
``bench_fingerprint.make_variants``.

Labels (the MANIFESTs' ground truth, J = character-5-gram Jaccard of the two texts as the
sets give it, computed by this script for the synthetic pairs):
- **positive**: two versions of one document (lineage: ``same_doc_*`` pairs; an article and
  its edited copy) with J >= 0.8;
- **negative**: two different documents (``diff_doc_*`` pairs; two different articles),
  whatever their J (template twins with J >= 0.8 count against every method alike);
- versions of one document with J < 0.8 are neither and are left out.
- **haystack**: every pair of the 9,661 documents is a different-document pair; a flagged
  pair is a *false pair* unless ``high_overlap_pairs.tsv`` lists it (J >= 0.5: a real copy).

A method flags a pair when: ours, the simhash distance <= k1 and the sketch similarity >=
min_similarity (both); the old rule and the simhash peers, distance <= k; MinHash
(datasketch, 128 permutations, word 5-grams of this project's tokens, so CJK is segmented),
estimated Jaccard >= 0.8. All pairs of fingerprints are compared exactly with NumPy.

Expected false drops per new page at N stored pages = (false-pair rate among unrelated
pairs) x N. With the verification the haystack has too few candidate pairs to count a rate,
so it is bounded: P(distance <= k1) among unrelated pairs (measured on all 46.7 M haystack
pairs) x the largest chance that a sketch of S slots reports >= min_similarity for a pair
whose true J is < 0.5 (the binomial tail P[Bin(S, 0.5) >= t S]); the sketch's hashes share
nothing with the simhash's, so the two events are treated as independent.

Signatures are cached in ``bench/results/quality_cache/`` (git-ignored); the report goes to
``bench/results/quality.md`` and ``quality.json``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import pickle
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import bench_fingerprint as bf
from bench._common import DATA_DIR, RESULTS_DIR, machine
from bench.quality_data import THRESHOLD, DataSet, load_sets
from bench.quality_pairs import (
    KMAX,
    Score,
    agreements,
    band_candidates,
    band_haystack,
    band_keys,
    binomial_tail,
    fp_distances,
    haystack_pairs,
    minhash_haystack,
    pair_arrays,
    score,
)
from simhash_filter import Fingerprinter
from simhash_filter.core import stopwords as sw
from simhash_filter.core.sketch import DEFAULT_SLOTS
from simhash_filter.core.text import Tokenizer, fold
from simhash_filter.index.defaults import IndexChoice, index_settings
from simhash_filter.index.minhash_lsh import MinHashLshScheme

DEFAULT_DATA = DATA_DIR
RESULTS = RESULTS_DIR
CACHE = RESULTS / "quality_cache"
MAX_CHARS = 50_000  # every method sees what the filter fingerprints: the first 50,000 chars
SCALES = (1_000_000, 10_000_000, 100_000_000)


# --------------------------------------------------------------------------- methods


def iso_stopwords() -> frozenset[str]:
    import stopwordsiso

    words: set[str] = set()
    for lang in stopwordsiso.langs():
        words |= stopwordsiso.stopwords(lang)
    return frozenset(fold(w) for w in words)


def our_variants() -> dict[str, Callable[[], Fingerprinter]]:
    """The fingerprint choices compared (the sketch is the same for all)."""
    return {
        "v1: en+zh stopwords, raw text": lambda: Fingerprinter(
            stopwords=sw.ENGLISH | sw.CHINESE, machine_text="keep"
        ),
        "iso stopwords, raw text": lambda: Fingerprinter(
            stopwords=iso_stopwords(), machine_text="keep"
        ),
        "en+zh stopwords, content only": lambda: Fingerprinter(
            stopwords=sw.ENGLISH | sw.CHINESE, machine_text="drop"
        ),
        "iso stopwords, content only": lambda: Fingerprinter(
            stopwords=iso_stopwords(), machine_text="drop"
        ),
        "iso, content only, sublinear": lambda: Fingerprinter(
            stopwords=iso_stopwords(), machine_text="drop", weighting="sublinear"
        ),
        "default": lambda: Fingerprinter(),
    }


def _cache_path(kind: str, ds: DataSet) -> Path:
    digest = hashlib.sha256(kind.encode() + ds.name.encode() + str(len(ds.ids)).encode())
    return CACHE / f"{digest.hexdigest()[:20]}.pkl"


def cached(kind: str, ds: DataSet, compute: Callable[[], Any]) -> Any:
    path = _cache_path(kind, ds)
    if path.exists():
        return pickle.loads(path.read_bytes())
    t0 = time.perf_counter()
    value = compute()
    print(f"  {kind} on {ds.name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(value))
    return value


def fingerprints(fn: Callable[[str], int | None], texts: Sequence[str]) -> np.ndarray:
    """uint64 fingerprints; a text without one gets a sentinel row in ``valid``."""
    out = np.zeros(len(texts), dtype=np.uint64)
    valid = np.zeros(len(texts), dtype=bool)
    for n, text in enumerate(texts):
        fp = fn(text[:MAX_CHARS])
        if fp is not None:
            out[n] = fp
            valid[n] = True
    return np.stack([out, valid.astype(np.uint64)])


def sketches(texts: Sequence[str], slots: int) -> np.ndarray:
    from simhash_filter.core.signature import decode_sketch

    fp = Fingerprinter(sketch_slots=slots)
    return np.stack([decode_sketch(fp.sketch(t[:MAX_CHARS])).text for t in texts])


_TOKENIZER = Tokenizer()


def minhash_matrix(texts: Sequence[str]) -> np.ndarray:
    from datasketch import MinHash

    rows = []
    for text in texts:
        words = _TOKENIZER.tokenize(fold(text[:MAX_CHARS]))
        grams = [" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))]
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([g.encode("utf-8") for g in grams])
        rows.append(m.hashvalues.astype(np.uint64))
    return np.stack(rows)


def peers() -> dict[str, Callable[[str], int | None]]:
    return {"simhash (PyPI)": bf._peer_1e0ng(), "trafilatura Simhash": bf._peer_trafilatura()}


# --------------------------------------------------------------------------- speed


def speed(data: Path, rounds: int = 5) -> str:
    """Per English page of pages_en: trafilatura's extraction vs the fingerprint, the sketch
    and the visible-text sketch, interleaved page by page; the median of ``rounds``."""
    from simhash_filter.page.extract import extract_page, extract_text, visible_text

    pages = [
        gzip.decompress(p.read_bytes()) for p in sorted((data / "pages_en" / "html").glob("*.gz"))
    ]
    fp = Fingerprinter()
    texts = [extract_text(b) or "" for b in pages]
    visible = [visible_text(b) or "" for b in pages]
    steps: dict[str, Callable[[int], object]] = {
        "extract (trafilatura)": lambda n: extract_text(pages[n]),
        "fingerprint": lambda n: fp.fingerprint(texts[n]),
        "sketch": lambda n: fp.sketch(texts[n]),
        "sign (fingerprint + sketch)": lambda n: fp.sign(texts[n]),
        "visible_text (a second parse)": lambda n: visible_text(pages[n]),
        "extract_page (main + visible text, one parse)": lambda n: extract_page(pages[n]),
        "sign with page_text": lambda n: fp.sign(texts[n], page_text=visible[n]),
    }
    totals: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        sums = dict.fromkeys(steps, 0.0)
        for n in range(len(pages)):
            for name, step in steps.items():
                t = time.perf_counter()
                step(n)
                sums[name] += time.perf_counter() - t
        for name in steps:
            totals[name].append(sums[name] / len(pages))
    base = float(np.median(totals["extract (trafilatura)"]))
    rows = [
        [name, f"{np.median(v) * 1000:.2f}", f"{np.median(v) / base:.1%}"]
        for name, v in totals.items()
    ]
    return (
        f"## Speed per English page ({len(pages)} pages of pages_en, median of {rounds} "
        "interleaved rounds)\n\n" + table(["step", "ms per page", "of extraction"], rows)
    )


# --------------------------------------------------------------------------- report


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(s: Score) -> str:
    return f"{s.precision:.3f} / {s.recall:.3f} / **{s.f1:.3f}**"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--part", choices=["all", "signatures", "report", "speed"], default="all")
    parser.add_argument("--variants", nargs="*", help="our variants to run (default: all)")
    parser.add_argument(
        "--sketch-slots", type=int, default=DEFAULT_SLOTS, help="slots of the sketch compared"
    )
    parser.add_argument(
        "--skip-peers",
        action="store_true",
        help="ours only: no peer library's signatures, and no peer rows in the report",
    )
    parser.add_argument("--default-k1", type=int, default=None)
    parser.add_argument("--default-t", type=float, default=None)
    args = parser.parse_args(argv)
    from simhash_filter.core.signature import MatchRule

    rule = MatchRule()
    deployed = index_settings(IndexChoice())  # what a new database gets: the index and rule
    assert deployed.rule is not None
    scheme = deployed.scheme
    assert isinstance(scheme, MinHashLshScheme), scheme  # the bands scored below
    lsh_t = args.default_t if args.default_t is not None else deployed.rule.min_similarity
    k1 = args.default_k1 if args.default_k1 is not None else rule.candidate_distance
    t_default = args.default_t if args.default_t is not None else rule.min_similarity
    old_k = 4

    if args.part == "speed":
        text = speed(args.data)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "quality_speed.md").write_text(text + "\n", encoding="utf-8")
        print(text)
        return 0
    t0 = time.perf_counter()
    sets = load_sets(args.data)
    print(f"loaded {len(sets)} sets in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    variants = our_variants()
    names = args.variants or list(variants)
    peer_fns = {} if args.skip_peers else peers()
    sigs: dict[str, dict[str, Any]] = defaultdict(dict)
    for ds in sets:
        for name in names:
            fper = variants[name]()
            sigs[ds.name][name] = cached(
                f"ours:{fper.spec}", ds, lambda f=fper, d=ds: fingerprints(f.fingerprint, d.texts)
            )
        sigs[ds.name]["sketch"] = cached(
            f"sketch:{Fingerprinter(sketch_slots=args.sketch_slots).spec}",
            ds,
            lambda d=ds: sketches(d.texts, args.sketch_slots),
        )
        for pname, fn in peer_fns.items():
            sigs[ds.name][pname] = cached(
                f"peer:{pname}", ds, lambda f=fn, d=ds: fingerprints(f, d.texts)
            )
        sigs[ds.name]["minhash"] = cached(
            "minhash:128:w5", ds, lambda d=ds: minhash_matrix(d.texts)
        )
    if args.part == "signatures":
        return 0

    report: list[str] = []
    raw: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    raw["machine"] = machine()
    raw["command"] = ".venv/bin/python -m bench.bench_quality " + " ".join(argv or sys.argv[1:])
    ks = list(range(3, KMAX + 1))
    ts = [0.5, 0.6, 0.65, 0.7, 0.75, 0.8]
    labelled = [ds for ds in sets if ds.pairs]
    hay = next(ds for ds in sets if ds.overlap)

    # per set and language: group -> (set, lang) list of pair index masks
    groups: list[tuple[str, str, DataSet, np.ndarray]] = []
    for ds in labelled:
        _, _, _, g = pair_arrays(ds)
        for lang in sorted(set(g)):
            groups.append((ds.name, lang, ds, g == lang))

    def group_scores(predict: Callable[[DataSet], np.ndarray]) -> dict[tuple[str, str], Score]:
        out = {}
        cache: dict[str, np.ndarray] = {}
        for sname, lang, ds, mask in groups:
            if sname not in cache:
                cache[sname] = predict(ds)
            truth = pair_arrays(ds)[2]
            out[(sname, lang)] = score(cache[sname][mask], truth[mask])
        return out

    def ours_pred(name: str, k: int, t: float | None) -> Callable[[DataSet], np.ndarray]:
        def predict(ds: DataSet) -> np.ndarray:
            a, b, _, _ = pair_arrays(ds)
            d = fp_distances(sigs[ds.name][name], a, b)
            ok = d <= k
            if t is not None:
                ok &= agreements(sigs[ds.name]["sketch"], a, b) >= t
            return ok

        return predict

    def minhash_pred(ds: DataSet) -> np.ndarray:
        a, b, _, _ = pair_arrays(ds)
        mh = sigs[ds.name]["minhash"]
        return (mh[a] == mh[b]).mean(axis=1) >= THRESHOLD

    # haystack structures
    hay_pairs = {name: haystack_pairs(sigs[hay.name][name], hay) for name in [*names, *peer_fns]}
    sk = sigs[hay.name]["sketch"]
    hay_agree = {name: agreements(sk, h.i, h.j) for name, h in hay_pairs.items()}
    mh_i, mh_j = minhash_haystack(sigs[hay.name]["minhash"], hay)
    mh_false = [
        (int(x), int(y))
        for x, y in zip(mh_i, mh_j, strict=True)
        if (int(x), int(y)) not in hay.overlap
    ]

    chosen = "default" if "default" in names else names[-1]
    # the default index (minhash-lsh): candidates share a band key, the sketch confirms
    lsh_label = f"ours, default index ({scheme.n_blocks}x{scheme.rows} bands, sketch >= {lsh_t})"
    signed = {ds.name: sigs[ds.name][chosen][1] == 1 for ds in sets}
    if sk.shape[1] < scheme.slots_needed:  # --sketch-slots below the bands' reach: no bands
        print(f"{lsh_label}: needs {scheme.slots_needed} slots, left out", file=sys.stderr)
        keys = {ds.name: np.zeros((len(ds.ids), 1), dtype=np.uint64) for ds in sets}
        signed = {name: np.zeros_like(v) for name, v in signed.items()}
        lsh_label += f": n/a with {sk.shape[1]} slots"
    else:
        keys = {ds.name: band_keys(sigs[ds.name]["sketch"], scheme) for ds in sets}

    def lsh_pred(ds: DataSet) -> np.ndarray:
        a, b, _, _ = pair_arrays(ds)
        cand = band_candidates(keys[ds.name], signed[ds.name], a, b)
        return cand & (agreements(sigs[ds.name]["sketch"], a, b) >= lsh_t)

    band_hay = band_haystack(keys[hay.name], signed[hay.name], hay)
    band_agree = agreements(sk, band_hay.i, band_hay.j)
    band_false = ~band_hay.real & (band_agree >= lsh_t)

    def hay_false(name: str, k: int, t: float | None) -> np.ndarray:
        h = hay_pairs[name]
        sel = (h.d <= k) & ~h.real
        if t is not None:
            sel &= hay_agree[name] >= t
        return sel

    def drops_per_page(name: str, k: int, t: float | None) -> tuple[float, str]:
        """Expected false drops per new page per stored page (a rate; x N later)."""
        h = hay_pairs[name]
        p_cand = h.hist_unrelated[: k + 1].sum() / h.pairs_unrelated
        if t is None:
            return float(p_cand), "measured"
        measured = hay_false(name, k, t).sum() / h.pairs_unrelated
        bound = p_cand * binomial_tail(sk.shape[1], 0.5, t)
        return float(max(measured, bound)), "bound"

    # ---- trade-off table over the fingerprint variants and the rule
    trade_rows = []
    best: list[tuple[Any, ...]] = []
    for name in names:
        for k in ks:
            for t in [None, *ts]:
                if t is None and k > 6:
                    continue
                sc = group_scores(ours_pred(name, k, t))
                f1s = [s.f1 for s in sc.values()]
                false = int(hay_false(name, k, t).sum())
                rate, _ = drops_per_page(name, k, t)
                row = (
                    name,
                    k,
                    "—" if t is None else t,
                    f"{min(f1s):.3f}",
                    f"{np.mean(f1s):.3f}",
                    false,
                    f"{rate * 10_000_000:.2g}",
                )
                trade_rows.append(row)
                best.append((min(f1s), np.mean(f1s), false, rate, name, k, t))
    raw["tradeoff"] = [list(r) for r in trade_rows]
    report.append("## Trade-off: fingerprint variant × k1 × min_similarity (— = simhash alone)\n")
    report.append(
        "min F1 and mean F1 over every set × language group; "
        "false pairs in the haystack (J < 0.5); "
        "expected false drops per new page at 10M stored pages.\n"
    )
    report.append(
        table(
            [
                "fingerprint",
                "k1",
                "min_similarity",
                "min F1",
                "mean F1",
                "haystack false pairs",
                "false drops/page @10M",
            ],
            trade_rows,
        )
    )
    ok = [b for b in best if b[2] == 0 and b[3] * 1e7 <= 1e-3 and b[6] is not None]
    ok.sort(key=lambda b: (-b[0], -b[1]))
    report.append(
        "\nBest rows meeting 0 false pairs and <= 1e-3 false drops/page @10M (by min F1):\n"
    )
    report.append(
        table(
            ["min F1", "mean F1", "fingerprint", "k1", "min_similarity"],
            [(f"{b[0]:.4f}", f"{b[1]:.4f}", b[4], b[5], b[6]) for b in ok[:12]],
        )
    )

    # ---- per set and language at the defaults vs peers
    methods: dict[str, Callable[[DataSet], np.ndarray]] = {
        lsh_label: lsh_pred,
        f"ours, simhash index (k1={k1}, sketch >= {t_default})": ours_pred(chosen, k1, t_default),
        f"v1 rule (k={old_k}, simhash alone)": ours_pred(names[0], old_k, None),
        "MinHash 128, word 5-grams, J>=0.8": minhash_pred,
    }
    for pname in peer_fns:
        for k in (3, 4):
            methods[f"{pname} k={k}"] = ours_pred(pname, k, None)
    per = {m: group_scores(fn) for m, fn in methods.items()}
    report.append("\n## Per set and language: precision / recall / **F1** (J >= 0.8)\n")
    rows = []
    for sname, lang, ds, mask in groups:
        truth = pair_arrays(ds)[2][mask]
        rows.append(
            [
                sname,
                lang,
                int(truth.sum()),
                int((~truth).sum()),
                *(fmt(per[m][(sname, lang)]) for m in methods),
            ]
        )
    report.append(table(["set", "lang", "pos", "neg", *methods], rows))
    raw["per_group"] = {
        m: {f"{s}/{lang}": [v.tp, v.fp, v.fn] for (s, lang), v in sc.items()}
        for m, sc in per.items()
    }

    # ---- haystack false pairs per language
    def lang_of_pair(i: int, j: int) -> str:
        la, lb = hay.langs[i], hay.langs[j]
        return la if la == lb else "cross-language"

    report.append("\n## Haystack: false pairs (flagged, J < 0.5) per language\n")
    hay_methods: dict[str, list[tuple[int, int]]] = {}
    hay_methods[lsh_label] = list(zip(band_hay.i[band_false], band_hay.j[band_false], strict=True))
    h = hay_pairs[chosen]
    sel = hay_false(chosen, k1, t_default)
    hay_methods[f"ours, simhash index (k1={k1}, sketch >= {t_default})"] = list(
        zip(h.i[sel], h.j[sel], strict=True)
    )
    h = hay_pairs[names[0]]
    sel = hay_false(names[0], old_k, None)
    hay_methods[f"v1 rule (k={old_k})"] = list(zip(h.i[sel], h.j[sel], strict=True))
    h = hay_pairs[chosen]
    sel = hay_false(chosen, k1, None)
    hay_methods[f"default fingerprint alone, k={k1}"] = list(zip(h.i[sel], h.j[sel], strict=True))
    hay_methods["MinHash J>=0.8"] = mh_false
    for pname in peer_fns:
        h = hay_pairs[pname]
        sel = hay_false(pname, 4, None)
        hay_methods[f"{pname} k=4"] = list(zip(h.i[sel], h.j[sel], strict=True))
    counts = {
        m: Counter(lang_of_pair(int(i), int(j)) for i, j in v) for m, v in hay_methods.items()
    }
    langs = sorted({lang for c in counts.values() for lang in c})
    report.append(
        table(
            ["method", "total", *langs],
            [[m, sum(c.values()), *(c.get(lang, 0) for lang in langs)] for m, c in counts.items()],
        )
    )
    report.append(
        f"\n{len(hay.texts):,} documents; {hay_pairs[chosen].pairs_unrelated:,} "
        "unrelated pairs with fingerprints."
    )
    raw["haystack_false"] = {m: dict(c) for m, c in counts.items()}

    # ---- expected false drops at scale
    report.append("\n## Expected false drops per new page at N stored pages\n")
    band_rate = float((~band_hay.real).sum()) / hay_pairs[chosen].pairs_unrelated
    lsh_rate = max(
        float(band_false.sum()) / hay_pairs[chosen].pairs_unrelated,
        band_rate * binomial_tail(sk.shape[1], 0.5, lsh_t),
    )
    rows = [[lsh_label, "bound", f"{lsh_rate:.3g}", *(f"{lsh_rate * n:.3g}" for n in SCALES)]]
    for label, name, k, t in [
        (f"ours, simhash index (k1={k1}, sketch >= {t_default})", chosen, k1, t_default),
        (f"default fingerprint alone, k={k1}", chosen, k1, None),
        ("v1 rule (k=3)", names[0], 3, None),
        (f"v1 rule (k={old_k})", names[0], old_k, None),
    ]:
        rate, how = drops_per_page(name, k, t)
        rows.append([label, how, f"{rate:.3g}", *(f"{rate * n:.3g}" for n in SCALES)])
    report.append(
        table(["rule", "how", "rate per stored page", *(f"N={n:,}" for n in SCALES)], rows)
    )
    unrelated = ~band_hay.real
    report.append(
        f"\nBound for the default index: P(unrelated pair shares a band) x "
        f"P[Bin({sk.shape[1]}, 0.5) >= {lsh_t}·{sk.shape[1]}] = {band_rate:.3g} x "
        f"{binomial_tail(sk.shape[1], 0.5, lsh_t):.3g}; its {int(unrelated.sum())} unrelated "
        "candidate pairs: sketch similarity max "
        + (f"{band_agree[unrelated].max():.3f}" if unrelated.any() else "—")
    )
    raw["default_index"] = {
        "scheme": scheme.describe(),
        "rule": deployed.rule.describe(),
        "unrelated_candidates": int(unrelated.sum()),
        "rate": lsh_rate,
    }
    h = hay_pairs[chosen]
    report.append(
        "\nLeft tail of the distance distribution of unrelated haystack pairs "
        "(default fingerprint): "
        + ", ".join(f"d={d}: {int(h.hist_unrelated[d])}" for d in range(0, KMAX + 1))
    )
    report.append(
        f"\nBound for the verified rule: P(d <= k1) x "
        f"P[Bin({sk.shape[1]}, 0.5) >= {t_default}·{sk.shape[1]}] = "
        f"{h.hist_unrelated[: k1 + 1].sum() / h.pairs_unrelated:.3g} x "
        f"{binomial_tail(sk.shape[1], 0.5, t_default):.3g}"
    )
    # sketch agreement among unrelated pairs within k1: how close the nearest get
    sel = (h.d <= k1) & ~h.real
    if sel.any():
        report.append(
            f"Sketch similarity of the {int(sel.sum())} unrelated candidate pairs within k1: max "
            f"{hay_agree[chosen][sel].max():.3f}, "
            f"p99 {np.quantile(hay_agree[chosen][sel], 0.99):.3f}"
        )

    text = "\n".join(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quality.md").write_text(
        f"# bench_quality\n\n{raw['date']}; {raw['machine']}\n\n`{raw['command']}`\n\n{text}\n",
        encoding="utf-8",
    )
    (RESULTS / "quality.json").write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
    print(text)
    print(
        f"\n({time.perf_counter() - t0:.0f}s; written to bench/results/quality.md)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
