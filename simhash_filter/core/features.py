"""Weighted features from tokens: word n-gram shingles, TF / sublinear TF / TF-IDF /
uniform weights, optional top-N selection. Pure functions and immutable tables."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

WEIGHTINGS = ("sublinear", "tf", "tfidf", "uniform")


@dataclass(frozen=True)
class IdfTable:
    """Inverse document frequencies by token, with a default for unseen tokens.

    Pluggable: build one from any mapping (jieba's bundled table, or one fitted on
    a crawl); ``name`` identifies its content in the fingerprint spec.
    """

    weights: Mapping[str, float]
    default: float
    name: str = field(default="")

    def __post_init__(self) -> None:
        if not math.isfinite(self.default) or self.default < 0:
            raise ValueError(f"IdfTable default must be a finite number >= 0, got {self.default!r}")
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
        if not self.name:
            object.__setattr__(self, "name", f"idf-{self._digest()}")

    def _digest(self) -> str:
        h = hashlib.sha256(repr(self.default).encode())
        for token in sorted(self.weights):
            h.update(f"{token}\t{self.weights[token]!r}\n".encode())
        return h.hexdigest()[:12]

    def __getitem__(self, token: str) -> float:
        return self.weights.get(token, self.default)

    @classmethod
    def fit(cls, documents: Iterable[Sequence[str]], *, name: str = "") -> IdfTable:
        """Smoothed IDF, ``log((1 + N) / (1 + df)) + 1``, fitted on tokenized documents."""
        df: Counter[str] = Counter()
        n = 0
        for tokens in documents:
            n += 1
            df.update(set(tokens))
        weights = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
        return cls(weights, default=math.log(1 + n) + 1.0, name=name)


def shingles(tokens: Sequence[str], size: int) -> list[str]:
    """Word n-grams joined by a space; ``size == 1`` returns the tokens themselves.

    A text shorter than ``size`` tokens yields its whole token run as one shingle.
    """
    if size < 1:
        raise ValueError(f"shingle size must be >= 1, got {size}")
    if size == 1:
        return list(tokens)
    if len(tokens) < size:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)]


def check_weighting(weighting: str, idf: IdfTable | None, top_n: int | None) -> None:
    """ValueError, naming the value, for weighting options that cannot work together."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}; got {weighting!r}")
    if weighting == "tfidf" and idf is None:
        raise ValueError("weighting 'tfidf' needs an IdfTable (idf=...)")
    if top_n is not None and top_n < 1:
        raise ValueError(f"top_n must be >= 1 or None, got {top_n}")


def weigh(
    features: Sequence[str],
    *,
    weighting: str = "tf",
    idf: IdfTable | None = None,
    top_n: int | None = None,
) -> dict[str, float]:
    """Feature → weight. ``sublinear`` is ``1 + ln(tf)``; ``tfidf`` multiplies it by the
    feature's IDF (the mean of its words' IDFs for shingles); ``top_n`` keeps the N
    heaviest (ties by feature, so the choice is deterministic)."""
    check_weighting(weighting, idf, top_n)
    counts = Counter(features)
    weights: dict[str, float]
    if weighting == "uniform":
        weights = dict.fromkeys(counts, 1.0)
    elif weighting == "tf":
        weights = {f: float(c) for f, c in counts.items()}
    else:
        weights = {f: 1.0 + math.log(c) for f, c in counts.items()}
        if weighting == "tfidf":
            assert idf is not None
            for f in weights:
                words = f.split(" ")
                weights[f] *= sum(idf[w] for w in words) / len(words)
    if top_n is not None and len(weights) > top_n:
        ranked = sorted(weights.items(), key=lambda fw: (-fw[1], fw[0]))[:top_n]
        weights = dict(ranked)
    return weights
