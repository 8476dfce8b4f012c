"""Real-like page signatures, fast: pages of random sentences of one language's documents.

A synthetic page is 6-16 random sentences drawn from the documents of ONE language of the
public haystack (``haystack_multilingual``), joined by a space. Its signature is what
``Fingerprinter().sign`` gives for that text, composed instead of computed:

- **simhash**: under the default ``tf`` weighting a page's bit-column sums are the sum of
  its sentences' column sums (a token's count is the sum of its counts in the sentences;
  Han and kana/hangul runs never cross the joining space, so jieba and the bigrams see each
  sentence alone), so the page's bits are the signs of the summed per-sentence vectors;
- **sketch**: a one-permutation bin of the page keeps the smallest 5-gram hash of the
  union of its sentences' 5-grams, i.e. the element-wise minimum of the sentences' raw
  bins, plus the 5 shingles that straddle each joining space (hashed here from each
  sentence's first and last 4 normalized characters); then densified exactly as
  ``simhash_filter.core.sketch.sketch_of`` does.

Each sentence is signed once (cached under ``/tmp``); a page then costs a gather and a
minimum over a few 256-slot rows. What it does not reproduce (``validate`` measures it):
NFKC or machine-text patterns that would act across a sentence boundary.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simhash_filter import Fingerprinter
from simhash_filter.core.features import weigh
from simhash_filter.core.signature import encode_sketch
from simhash_filter.core.simhash import DEFAULT_SEED, column_sums, mmh3_64_many
from simhash_filter.core.sketch import DEFAULT_SLOTS, SKETCH_SEED, shingle_hashes
from simhash_filter.core.text import normalize

CACHE_DIR = Path("/tmp/sf-scale-cache")
POOL_VERSION = 2
CHUNK = 10_000
"""Pages are generated in chunks of this many; page i is (chunk i // CHUNK, row i % CHUNK)."""
MIN_SENTENCES, MAX_SENTENCES = 6, 16
MIN_CHARS, MAX_CHARS = 20, 400
MAX_PER_LANGUAGE = 20_000

_U64 = np.uint64
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_EMPTY = _U64(0xFFFFFFFFFFFFFFFF)
_SHIFT = _U64(64 - DEFAULT_SLOTS.bit_length() + 1)  # the bin of a hash: its top 8 bits
_SPLIT = re.compile(r"(?<=[.!?;:。！？；।॥])\s+|(?<=[。！？；])|\n+")
_SPLIT_SPACES = re.compile(r"\s+")  # Thai: no sentence punctuation, spaces between clauses
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        x = x ^ (x >> _U64(30))
        x = x * _M1
        x = x ^ (x >> _U64(27))
        x = x * _M2
        return x ^ (x >> _U64(31))


@dataclass
class Pool:
    """Every kept sentence, signed: one row each (plus an empty last row for padding)."""

    texts: list[str]  # normalized sentences
    lang_of: npt.NDArray[np.int16]  # language index of each sentence
    languages: list[str]
    doc_weight: npt.NDArray[np.float64]  # P(language) = its share of the documents
    start: npt.NDArray[np.int64]  # first sentence of each language
    count: npt.NDArray[np.int64]  # sentences of each language
    sums: npt.NDArray[np.int32]  # [S+1, 64] simhash column sums
    raw: npt.NDArray[np.uint64]  # [S+1, 256] smallest 5-gram hash of each bin
    head: npt.NDArray[np.uint64]  # [S+1, 4] first 4 code points
    tail: npt.NDArray[np.uint64]  # [S+1, 4] last 4 code points
    tokens: npt.NDArray[np.int32]  # tokens of each sentence

    @property
    def size(self) -> int:
        return len(self.texts)


def sentences_of(text: str, lang: str) -> list[str]:
    """The normalized sentences of a document (front matter dropped) worth keeping."""
    text = _FRONT_MATTER.sub("", text)
    out = []
    for part in (_SPLIT_SPACES if lang == "th" else _SPLIT).split(text):
        s = normalize(part)
        if MIN_CHARS <= len(s) <= MAX_CHARS:
            out.append(s)
    return out


def _sign_sentence(fp: Fingerprinter, s: str) -> tuple[npt.NDArray[np.int32], int, Any]:
    tokens = fp.tokens(s)
    weights = weigh(tokens, weighting="tf")
    names = list(weights)
    if names:
        sums = column_sums(mmh3_64_many(names, DEFAULT_SEED), list(weights.values()))
    else:
        sums = np.zeros(64)
    hashes = shingle_hashes(s, seed=SKETCH_SEED)  # sorted, distinct
    raw = np.full(DEFAULT_SLOTS, _EMPTY, dtype=np.uint64)
    bins = (hashes >> _SHIFT).astype(np.int64)
    first = np.searchsorted(bins, np.arange(DEFAULT_SLOTS), side="left")
    filled = np.zeros(DEFAULT_SLOTS, dtype=bool)
    filled[bins] = True
    raw[filled] = hashes[first[filled]]
    return np.rint(sums).astype(np.int32), len(tokens), raw


def build_pool(data: Path, *, log: Any = print) -> Pool:
    """Split, normalize and sign every sentence of the haystack (cached by content)."""
    path = data / "haystack_multilingual" / "docs.jsonl.gz"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    cache = CACHE_DIR / f"pool-v{POOL_VERSION}-{digest}.npz"
    texts_path = cache.with_suffix(".json")
    if cache.exists() and texts_path.exists():
        z = np.load(cache)
        meta = json.loads(texts_path.read_text())
        return Pool(
            meta["texts"], z["lang_of"], meta["languages"], z["doc_weight"], z["start"],
            z["count"], z["sums"], z["raw"], z["head"], z["tail"], z["tokens"],
        )  # fmt: skip
    began = time.perf_counter()
    docs_per_lang: Counter[str] = Counter()
    by_lang: dict[str, list[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            docs_per_lang[doc["lang"]] += 1
            seen = by_lang.setdefault(doc["lang"], [])
            seen.extend(sentences_of(doc["text"], doc["lang"]))
    languages = sorted(by_lang)
    rng = np.random.default_rng(20261124)
    fp = Fingerprinter()
    texts: list[str] = []
    lang_of: list[int] = []
    start, count = [], []
    for li, lang in enumerate(languages):
        unique = sorted(set(by_lang[lang]))
        if len(unique) > MAX_PER_LANGUAGE:
            pick = rng.choice(len(unique), MAX_PER_LANGUAGE, replace=False)
            unique = [unique[i] for i in sorted(pick)]
        start.append(len(texts))
        count.append(len(unique))
        texts.extend(unique)
        lang_of.extend([li] * len(unique))
    n = len(texts)
    sums = np.zeros((n + 1, 64), dtype=np.int32)
    raw = np.full((n + 1, DEFAULT_SLOTS), _EMPTY, dtype=np.uint64)
    head = np.zeros((n + 1, 4), dtype=np.uint64)
    tail = np.zeros((n + 1, 4), dtype=np.uint64)
    tokens = np.zeros(n + 1, dtype=np.int32)
    for i, s in enumerate(texts):
        sums[i], tokens[i], raw[i] = _sign_sentence(fp, s)
        codes = [ord(c) for c in s]
        head[i] = codes[:4]
        tail[i] = codes[-4:]
        if i % 20000 == 0:
            log(f"signed {i:,}/{n:,} sentences")
    weight = np.array([docs_per_lang[lang] for lang in languages], dtype=np.float64)
    pool = Pool(
        texts, np.array(lang_of, dtype=np.int16), languages, weight / weight.sum(),
        np.array(start), np.array(count), sums, raw, head, tail, tokens,
    )  # fmt: skip
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(
        cache, lang_of=pool.lang_of, doc_weight=pool.doc_weight, start=pool.start,
        count=pool.count, sums=sums, raw=raw, head=head, tail=tail, tokens=tokens,
    )  # fmt: skip
    texts_path.write_text(json.dumps({"texts": texts, "languages": languages}))
    log(f"sentence pool: {n:,} sentences, {len(languages)} languages, "
        f"{time.perf_counter() - began:.0f} s")  # fmt: skip
    return pool


# ------------------------------------------------------------------ pages


def page_sentences(pool: Pool, seed: int, chunk: int) -> npt.NDArray[np.int64]:
    """The sentences of the pages of one chunk: [CHUNK, MAX_SENTENCES] pool rows, the
    unused tail of each row set to the empty row ``pool.size``."""
    rng = np.random.default_rng([seed, chunk])
    lang = rng.choice(len(pool.languages), size=CHUNK, p=pool.doc_weight)
    m = rng.integers(MIN_SENTENCES, MAX_SENTENCES + 1, size=CHUNK)
    offs = rng.random((CHUNK, MAX_SENTENCES))
    idx = pool.start[lang][:, None] + (offs * pool.count[lang][:, None]).astype(np.int64)
    idx[np.arange(MAX_SENTENCES)[None, :] >= m[:, None]] = pool.size
    return idx


def near_copies(
    pool: Pool, idx: npt.NDArray[np.int64], rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """Copies of pages ``idx`` with one sentence dropped (half) or swapped for another
    sentence of the same language (half)."""
    out = idx.copy()
    for row in out:
        m = int(np.count_nonzero(row != pool.size))
        r = int(rng.integers(m))
        if rng.random() < 0.5:
            row[r:m] = np.append(row[r + 1 : m], pool.size)
        else:
            lang = int(pool.lang_of[row[0]])
            row[r] = pool.start[lang] + int(rng.integers(pool.count[lang]))
    return out


def _boundary_hashes(pool: Pool, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> Any:
    """The 5 shingle hashes straddling the space between sentences a and b: [len(a), 5]."""
    codes = np.concatenate(
        [pool.tail[a], np.full((len(a), 1), 32, dtype=np.uint64), pool.head[b]], axis=1
    )
    out = np.empty((len(a), 5), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for w in range(5):
            h = codes[:, w] + _U64(SKETCH_SEED)
            for j in range(1, 5):
                h = h * _GOLDEN + codes[:, w + j]
            out[:, w] = h
    return _mix(out)


def compose(pool: Pool, idx: npt.NDArray[np.int64]) -> tuple[Any, Any, Any]:
    """Fingerprints (uint64 [P]), sketch slots (uint16 [P, 256]) and token counts of pages
    made of the sentences ``idx`` ([P, MAX_SENTENCES], padded with ``pool.size``)."""
    p = len(idx)
    sums = pool.sums[idx[:, 0]].astype(np.int64)
    raw = pool.raw[idx[:, 0]]
    for k in range(1, idx.shape[1]):  # column by column: no [P, 16, 256] temporary
        sums += pool.sums[idx[:, k]]
        np.minimum(raw, pool.raw[idx[:, k]], out=raw)
    bits = np.packbits(sums > 0, axis=1, bitorder="little")
    fps = bits.view("<u8").reshape(p)
    for k in range(idx.shape[1] - 1):
        valid = np.flatnonzero(idx[:, k + 1] != pool.size)
        if not len(valid):
            break
        h = _boundary_hashes(pool, idx[valid, k], idx[valid, k + 1])
        rows = np.repeat(valid, 5)
        flat = h.reshape(-1)
        np.minimum.at(raw, (rows, (flat >> _SHIFT).astype(np.int64)), flat)
    return fps.astype(np.uint64), densify(raw), pool.tokens[idx].sum(axis=1)


def densify(raw: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint16]:
    """``sketch_of``'s rotation densification, row by row, vectorized: an empty bin takes
    the next filled bin's value to its right (circularly), mixed with the distance."""
    slots = raw.shape[1]
    filled = raw != _EMPTY
    pos = np.arange(2 * slots, dtype=np.int16)
    big = np.where(np.concatenate([filled, filled], axis=1), pos, np.int16(4 * slots))
    nxt = np.minimum.accumulate(big[:, ::-1], axis=1)[:, ::-1][:, :slots]
    rows, cols = np.nonzero(~filled)  # only the empty bins borrow
    out = raw.copy()
    if len(rows):
        reach = nxt[rows, cols].astype(np.int64)
        values = raw[rows, reach % slots]
        distance = (reach - cols).astype(np.uint64)
        with np.errstate(over="ignore"):
            out[rows, cols] = _mix(values ^ (distance * _GOLDEN))
    return (out & _U64(0xFFFF)).astype(np.uint16)


def sketch_bytes(slots: npt.NDArray[np.uint16]) -> bytes:
    """A page's sketch as ``Fingerprinter().sign(text)`` encodes it (no page text)."""
    return encode_sketch(slots)


def chunk_signatures(pool: Pool, seed: int, chunk: int) -> tuple[Any, Any, Any]:
    """(fingerprints, sketch slots, sentence rows) of the pages of one chunk."""
    idx = page_sentences(pool, seed, chunk)
    parts = [compose(pool, idx[s : s + 1000]) for s in range(0, len(idx), 1000)]  # in cache
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), idx


def page_text(pool: Pool, row: npt.NDArray[np.int64]) -> str:
    return " ".join(pool.texts[i] for i in row if i != pool.size)


def signatures_file(pool_digest: str, seed: int, n: int) -> Path:
    return CACHE_DIR / f"pages-{pool_digest}-s{seed}-{n}.npz"
