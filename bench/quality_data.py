"""The labelled data sets of ``bench_quality``: lineage pairs, synthetic edits, the haystack.

Positives are versions of one document at character-5-gram Jaccard >= ``THRESHOLD``;
negatives, different documents; the haystack's real copies are listed apart.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import bench_fingerprint as bf

__all__ = ["THRESHOLD", "DataSet", "c5", "jaccard_c5", "load_sets"]

THRESHOLD = 0.8
"""Character-5-gram Jaccard at which two versions of one document are a positive pair."""


@dataclass
class DataSet:
    name: str
    ids: list[str]
    texts: list[str]
    langs: list[str]
    pairs: list[tuple[int, int, bool, str]] = field(default_factory=list)  # a, b, truth, group
    overlap: set[tuple[int, int]] = field(default_factory=set)  # haystack real copies
    left_out: int = 0


def c5(text: str) -> set[str]:
    t = re.sub(r"\s+", " ", text).strip()
    return {t[i : i + 5] for i in range(max(1, len(t) - 4))}


def jaccard_c5(a: str, b: str) -> float:
    x, y = c5(a), c5(b)
    return len(x & y) / len(x | y) if x or y else 1.0


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _lineage_set(name: str, base: Path, lang_of: Callable[[dict[str, Any]], str]) -> DataSet:
    docs = _read_jsonl(base / "docs.jsonl.gz")
    index = {d["id"]: n for n, d in enumerate(docs)}
    ds = DataSet(
        name, [d["id"] for d in docs], [d["text"] for d in docs], [lang_of(d) for d in docs]
    )
    with open(base / "pairs.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            a, b = index[row["id_a"]], index[row["id_b"]]
            same = row["relation"].startswith("same_doc")
            if same and float(row["jaccard_c5"]) < THRESHOLD:
                ds.left_out += 1
                continue
            ds.pairs.append((a, b, same, ds.langs[a]))
    return ds


def load_sets(data: Path) -> list[DataSet]:
    sets = [
        _lineage_set("neardup_peps_en", data / "neardup_peps_en", lambda d: "en"),
        _lineage_set(
            "neardup_mdn_multilingual", data / "neardup_mdn_multilingual", lambda d: d["lang"]
        ),
    ]
    for name, zh, articles in (
        ("synthetic pages_en", False, bf.load_articles_en(data)),
        ("synthetic pages_zh", True, bf.load_articles_zh(data)),
    ):
        docs, pairs = bf.synthetic_pairs(articles, zh)
        ids = list(docs)
        index = {i: n for n, i in enumerate(ids)}
        ds = DataSet(name, ids, [docs[i] for i in ids], ["zh" if zh else "en"] * len(ids))
        for a, b, truth, _edit in pairs:
            if truth and jaccard_c5(docs[a], docs[b]) < THRESHOLD:
                ds.left_out += 1
                continue
            ds.pairs.append((index[a], index[b], truth, ds.langs[0]))
        sets.append(ds)
    base = data / "haystack_multilingual"
    docs = _read_jsonl(base / "docs.jsonl.gz")
    index = {d["id"]: n for n, d in enumerate(docs)}
    hay = DataSet(
        "haystack_multilingual", list(index), [d["text"] for d in docs], [d["lang"] for d in docs]
    )
    with open(base / "high_overlap_pairs.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            a, b = sorted((index[row["id_a"]], index[row["id_b"]]))
            hay.overlap.add((a, b))
    sets.append(hay)
    return sets
