"""Fingerprint quality and speed, side by side with the peers, in one run.

    .venv/bin/python bench/bench_fingerprint.py              # everything (a few minutes)
    .venv/bin/python bench/bench_fingerprint.py --quick      # fewer speed rounds
    .venv/bin/python bench/bench_fingerprint.py --part quality|speed

Data: the public data sets described in bench/README.md (``--data DIR``):
- quality on ``neardup_peps_en``: a pair is a near-duplicate when it is two versions of
  one PEP with character-5-gram Jaccard >= 0.8, and not one when the PEPs differ
  (same-PEP pairs below 0.8 are left out: they are neither). Also the haystack: every
  pair of the 3,403 texts from different PEPs, counted when it lands within k.
- quality on other text: the article bodies of ``pages_en`` (English news) and the
  main texts of ``pages_zh`` (Chinese), each against seeded realistic edits of itself
  (a changed date, a removed paragraph, an added comment block, a reworded sentence,
  a source line) as positives, and every pair of different articles as negatives.
- speed on the extracted main text of ``pages_en`` and ``pages_zh`` (trafilatura on the
  raw bytes), with trafilatura's extraction time per page as the yardstick.

Peers: PyPI ``simhash`` (1e0ng; its NumPy-2 overflow for weights > 255 is patched by
widening its bit array, which leaves its results as designed), trafilatura's
``deduplication.Simhash``, datasketch ``MinHash`` (128 permutations, word 5-grams,
estimated Jaccard >= 0.8).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import DATA_DIR
from simhash_filter import Fingerprinter, hamming_distance
from simhash_filter.index.schemes import DEFAULT_MAX_DISTANCE
from simhash_filter.page.extract import extract_text

DEFAULT_DATA = DATA_DIR
KS = (2, 3, 4, 5)


# --------------------------------------------------------------------------- peers


def _peer_1e0ng() -> Callable[[str], int]:
    import simhash as sh

    class Simhash(sh.Simhash):  # type: ignore[misc]
        # The package multiplies a uint8 bit array by the weight: NumPy 2 raises for > 255.
        _bitarray_from_bytes = staticmethod(
            lambda b: np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)
        )

    return lambda text: int(Simhash(text).value)


def _peer_trafilatura() -> Callable[[str], int]:
    from trafilatura.deduplication import Simhash

    return lambda text: int(Simhash(text).hash)


def _word_5grams(text: str, zh: bool = False) -> list[str]:
    if zh:
        from simhash_filter.core.text import jieba_tokenizer

        words = [w for w in jieba_tokenizer().lcut(text) if w.strip()]
    else:
        words = text.split()
    if len(words) < 5:
        return [" ".join(words)]
    return [" ".join(words[i : i + 5]) for i in range(len(words) - 4)]


def _minhash(text: str, zh: bool = False) -> Any:
    from datasketch import MinHash

    m = MinHash(num_perm=128, seed=1)
    m.update_batch([s.encode("utf-8") for s in _word_5grams(text, zh)])
    return m


# --------------------------------------------------------------------------- metrics


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, predicted: bool, truth: bool) -> None:
        self.tp += predicted and truth
        self.fp += predicted and not truth
        self.fn += (not predicted) and truth

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _fp_score(fps: dict[str, int | None], pairs: Iterable[tuple[str, str, bool]], k: int) -> Score:
    score = Score()
    for a, b, truth in pairs:
        fa, fb = fps[a], fps[b]
        predicted = fa is not None and fb is not None and hamming_distance(fa, fb) <= k
        score.add(predicted, truth)
    return score


def _minhash_score(sigs: dict[str, Any], pairs: Iterable[tuple[str, str, bool]]) -> Score:
    score = Score()
    for a, b, truth in pairs:
        score.add(sigs[a].jaccard(sigs[b]) >= 0.8, truth)
    return score


def _score_row(method: str, k: object, s: Score, *extra: object) -> list[object]:
    return [method, k, f"{s.precision:.3f}", f"{s.recall:.3f}", f"{s.f1:.3f}", *extra]


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _haystack(fps: Sequence[int | None], groups: Sequence[str], ks: Sequence[int]) -> list[int]:
    """For each k, the pairs of texts from different groups within distance k."""
    arr = np.array([f if f is not None else 0 for f in fps], dtype=np.uint64)
    valid = np.array([f is not None for f in fps])
    g = np.array(groups)
    counts = [0] * len(ks)
    for i in range(len(arr) - 1):
        if not valid[i]:
            continue
        d = np.bitwise_count(arr[i + 1 :] ^ arr[i])
        other = (g[i + 1 :] != g[i]) & valid[i + 1 :]
        for j, k in enumerate(ks):
            counts[j] += int(((d <= k) & other).sum())
    return counts


# --------------------------------------------------------------------------- data


def load_peps(data: Path) -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, bool]]]:
    base = data / "neardup_peps_en"
    docs: dict[str, str] = {}
    group: dict[str, str] = {}
    with gzip.open(base / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            docs[obj["id"]] = obj["text"]
            group[obj["id"]] = obj["doc_key"]
    pairs: list[tuple[str, str, bool]] = []
    with open(base / "pairs.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            same = row["relation"].startswith("same_doc")
            jaccard = float(row["jaccard_c5"])
            if same and jaccard < 0.8:
                continue  # neither a near-duplicate nor a different document
            pairs.append((row["id_a"], row["id_b"], same))
    return docs, group, pairs


def load_articles_en(data: Path) -> list[str]:
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text(encoding="utf-8"))
    return [v["articleBody"] for _, v in sorted(truth.items()) if len(v["articleBody"]) > 1500]


def load_articles_zh(data: Path) -> list[str]:
    out = []
    for path in sorted((data / "pages_zh" / "cleaned").glob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(re.findall(r"[\u4e00-\u9fff]", text)) >= 300:
            out.append(text)
    return out


_EN_COMMENTS = [
    "Comments\nJohn: Great article, thanks for sharing this.\n"
    "Mary: I disagree with the second point.",
    "Related: Subscribe to our newsletter for the latest updates.",
]
_ZH_COMMENTS = [
    "网友评论\n小王：写得很好，感谢分享。\n小李：第二点我不太同意。",
    "相关阅读：欢迎订阅我们的新闻简报，获取最新资讯。",
]


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n+", text) if p.strip()]


def make_variants(text: str, rng: random.Random, zh: bool) -> list[tuple[str, str]]:
    """Realistic near-duplicates of one article: (edit name, edited text)."""
    paras = _paragraphs(text)
    out: list[tuple[str, str]] = []
    date = "2024年3月5日 10:32" if zh else "March 5, 2024 10:32"
    out.append(("date", (f"发布时间：{date}" if zh else f"Published {date}") + "\n" + text))
    if len(paras) >= 6:
        # drop one of the shorter paragraphs: a removed caption, byline or aside
        short = sorted(range(1, len(paras)), key=lambda i: len(paras[i]))[: max(1, len(paras) // 3)]
        i = rng.choice(short)
        out.append(("paragraph removed", "\n".join(paras[:i] + paras[i + 1 :])))
    comments = _ZH_COMMENTS if zh else _EN_COMMENTS
    out.append(("comment added", text + "\n" + rng.choice(comments)))
    if zh:
        i = rng.randrange(len(text) // 2, len(text) - 10)
        out.append(("reworded", text[:i] + "据悉" + text[i + 4 :]))
        out.append(("source line", "来源：新华网 编辑：张伟\n" + text + "\n（责任编辑：王芳）"))
    else:
        words = text.split(" ")
        for _ in range(3):
            j = rng.randrange(len(words))
            words[j] = rng.choice(["reportedly", "officials", "recently", "however"])
        out.append(("reworded", " ".join(words)))
        out.append(
            ("source line", "By Staff Reporter | Reuters\n" + text + "\n(Editing by Jane Doe)")
        )
    return out


def synthetic_pairs(
    articles: list[str], zh: bool, seed: int = 7
) -> tuple[dict[str, str], list[tuple[str, str, bool, str]]]:
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    pairs: list[tuple[str, str, bool, str]] = []
    for n, text in enumerate(articles):
        docs[f"a{n}"] = text
        for m, (edit, variant) in enumerate(make_variants(text, rng, zh)):
            docs[f"a{n}v{m}"] = variant
            pairs.append((f"a{n}", f"a{n}v{m}", True, edit))
    for n in range(len(articles)):
        for m in range(n + 1, len(articles)):
            pairs.append((f"a{n}", f"a{m}", False, "different article"))
    return docs, pairs


# --------------------------------------------------------------------------- quality


def _methods(zh: bool) -> dict[str, Callable[[str], int | None]]:
    ours = Fingerprinter()
    return {
        "simhash-filter": ours.fingerprint,
        "simhash (1e0ng)": _peer_1e0ng(),
        "trafilatura Simhash": _peer_trafilatura(),
    }


def quality_peps(data: Path) -> str:
    docs, group, pairs = load_peps(data)
    ids = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
    rows = []
    fps_by_method: dict[str, dict[str, int | None]] = {}
    for name, fn in _methods(zh=False).items():
        fps = {i: fn(docs[i]) for i in ids}
        fps_by_method[name] = fps
        scores = [_fp_score(fps, pairs, k) for k in KS]
        all_ids = sorted(docs)
        hay = _haystack([fn(docs[i]) for i in all_ids], [group[i] for i in all_ids], KS)
        for k, s, h in zip(KS, scores, hay, strict=True):
            rows.append(
                [
                    name,
                    k,
                    f"{s.precision:.3f}",
                    f"{s.recall:.3f}",
                    f"**{s.f1:.3f}**" if k == DEFAULT_MAX_DISTANCE else f"{s.f1:.3f}",
                    h,
                ]
            )
    sigs = {i: _minhash(docs[i]) for i in ids}
    s = _minhash_score(sigs, pairs)
    rows.append(_score_row("MinHash (datasketch)", "J≥0.8", s, "–"))
    positives = sum(t for _, _, t in pairs)
    out = [
        f"PEP versions: {positives} near-duplicate pairs, {len(pairs) - positives} different-PEP "
        f"pairs; haystack = pairs of the {len(docs)} texts from different PEPs within k.",
        "",
        _table(["method", "k", "precision", "recall", "F1", "haystack pairs ≤ k"], rows),
        "",
        f"Recall by the pair's character-5-gram Jaccard (k={DEFAULT_MAX_DISTANCE}, the default):",
        "",
    ]
    # recall by similarity bucket
    base = data / "neardup_peps_en"
    jac: dict[tuple[str, str], float] = {}
    with open(base / "pairs.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            jac[(row["id_a"], row["id_b"])] = float(row["jaccard_c5"])
    buckets = [(0.8, 0.9), (0.9, 0.95), (0.95, 0.99), (0.99, 1.01)]
    brows = []
    for lo, hi in buckets:
        sel = [(a, b) for a, b, t in pairs if t and lo <= jac[(a, b)] < hi]
        row: list[object] = [f"{lo:.2f}–{min(hi, 1.0):.2f}", len(sel)]
        for name in fps_by_method:
            fps = fps_by_method[name]
            hit = sum(
                1
                for a, b in sel
                if fps[a] is not None
                and fps[b] is not None
                and hamming_distance(fps[a], fps[b]) <= DEFAULT_MAX_DISTANCE  # type: ignore[arg-type]
            )
            row.append(f"{hit / len(sel):.3f}" if sel else "–")
        hit = sum(1 for a, b in sel if sigs[a].jaccard(sigs[b]) >= 0.8)
        row.append(f"{hit / len(sel):.3f}" if sel else "–")
        brows.append(row)
    out.append(_table(["Jaccard", "pairs", *fps_by_method, "MinHash"], brows))
    return "\n".join(out)


def quality_synthetic(data: Path) -> str:
    out = []
    for lang, zh, articles in (
        ("English news (pages_en article bodies)", False, load_articles_en(data)),
        ("Chinese (pages_zh main texts)", True, load_articles_zh(data)),
    ):
        docs, pairs = synthetic_pairs(articles, zh)
        plain = [(a, b, t) for a, b, t, _ in pairs]
        rows = []
        edits = sorted({e for _, _, t, e in pairs if t})
        for name, fn in _methods(zh).items():
            fps = {i: fn(t) for i, t in docs.items()}
            for k in (3, 4):
                s = _fp_score(fps, plain, k)
                per_edit = []
                for e in edits:
                    sel = [(a, b, t) for a, b, t, ee in pairs if ee == e]
                    per_edit.append(f"{_fp_score(fps, sel, k).recall:.2f}")
                rows.append(_score_row(name, k, s, *per_edit))
        sigs = {i: _minhash(t, zh) for i, t in docs.items()}
        s = _minhash_score(sigs, plain)
        per_edit = []
        for e in edits:
            sel = [(a, b, t) for a, b, t, ee in pairs if ee == e]
            per_edit.append(f"{_minhash_score(sigs, sel).recall:.2f}")
        rows.append(_score_row("MinHash (datasketch)", "J≥0.8", s, *per_edit))
        positives = sum(t for _, _, t, _ in pairs)
        out += [
            f"{lang}: {len(articles)} articles, {positives} edited copies, "
            f"{len(pairs) - positives} different-article pairs.",
            "",
            _table(["method", "k", "precision", "recall", "F1", *(f"R {e}" for e in edits)], rows),
            "",
        ]
    return "\n".join(out)


# --------------------------------------------------------------------------- speed


def _load_pages(data: Path) -> tuple[list[bytes], list[bytes]]:
    en = [
        gzip.decompress(p.read_bytes())
        for p in sorted((data / "pages_en" / "html").glob("*.html.gz"))
    ]
    zh = [p.read_bytes() for p in sorted((data / "pages_zh" / "original").glob("*.html"))]
    return en, zh


def _interleaved_best(rounds: int, methods: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best time of each method over ``rounds``, the methods taking turns in every round
    (a busy machine slows them alike), after one untimed warm-up round."""
    best = dict.fromkeys(methods, float("inf"))
    for r in range(rounds + 1):
        for name, fn in methods.items():
            t0 = time.perf_counter()
            fn()
            if r:
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _speed_methods(texts: list[str], zh: bool) -> dict[str, Callable[[], object]]:
    from simhash_filter.core.text import jieba_tokenizer

    lcut = jieba_tokenizer().lcut  # the dictionary loads once per process, for every method
    s1e0ng, straf = _peer_1e0ng(), _peer_trafilatura()

    def ours() -> None:
        fpr = Fingerprinter()  # fresh each round: nothing carried between rounds
        for t in texts:
            fpr.fingerprint(t)

    methods: dict[str, Callable[[], object]] = {
        "simhash-filter": ours,
        "simhash (1e0ng)": lambda: [s1e0ng(t) for t in texts],
        "trafilatura Simhash": lambda: [straf(t) for t in texts],
        "MinHash (datasketch)": lambda: [_minhash(t, zh) for t in texts],
    }
    if zh:
        methods["jieba.lcut alone"] = lambda: [lcut(t) for t in texts]
    return methods


def speed(data: Path, rounds: int) -> str:
    en_pages, zh_pages = _load_pages(data)
    rows = []
    for lang, pages, zh in (("English", en_pages, False), ("Chinese", zh_pages, True)):
        t0 = time.perf_counter()
        texts = [t for t in (extract_text(p) for p in pages) if t]
        extract_s = time.perf_counter() - t0  # one pass: trafilatura's own time per page
        n = len(texts)
        chars = sum(len(t) for t in texts)
        timings = _interleaved_best(rounds, _speed_methods(texts, zh))
        per_page_extract = extract_s / len(pages) * 1e3
        ours_ms = timings["simhash-filter"] / n * 1e3
        for name, secs in timings.items():
            ms = secs / n * 1e3
            rows.append(
                [
                    lang,
                    name,
                    f"{ms:.2f}",
                    f"{n * 1.0 / secs:.0f}",
                    f"{chars / secs / 1e6:.2f}",
                    f"{ms / ours_ms:.2f}×",
                    f"{ms / per_page_extract * 100:.1f}%",
                ]
            )
        rows.append(
            [
                lang,
                "trafilatura.extract (yardstick)",
                f"{per_page_extract:.2f}",
                f"{len(pages) / extract_s:.0f}",
                "–",
                "–",
                "100%",
            ]
        )
    header = [
        "text",
        "method",
        "ms / page",
        "pages/s",
        "M chars/s",
        "time vs simhash-filter",
        "share of extraction time",
    ]
    return _table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--part", choices=["all", "quality", "speed"], default="all")
    parser.add_argument("--quick", action="store_true", help="two timing rounds instead of seven")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"data folder not found: {args.data} (pass --data)", file=sys.stderr)
        return 2
    import logging

    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    print(f"# bench_fingerprint — spec {Fingerprinter().spec}\n")
    if args.part in ("all", "quality"):
        t0 = time.perf_counter()
        print("## Quality: labelled PEP versions\n")
        print(quality_peps(args.data), "\n", flush=True)
        print("## Quality: realistic edits of English and Chinese articles\n")
        print(quality_synthetic(args.data), flush=True)
        print(f"(quality took {time.perf_counter() - t0:.0f} s)\n")
    if args.part in ("all", "speed"):
        print("## Speed: main text → fingerprint (best of rounds)\n")
        print(speed(args.data, 2 if args.quick else 7), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
