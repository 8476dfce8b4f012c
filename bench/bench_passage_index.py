"""``near --text`` on a paragraph through the passage index (schema 6), beside the stored-text
scan it replaces, at 10k, 100k and 1M stored texts, on SQLite or PostgreSQL.

Texts: new ones, made by Markov chains trained on the real texts of the data folder (English:
a word chain over ``pages_en``'s article bodies, ``neardup_peps_en``'s newest PEP versions and
``haystack_multilingual``'s English; Chinese: a character chain over ``pages_zh``'s cleaned
texts and ``haystack_multilingual``'s Chinese pages): each text is its own (no two share a
paragraph, as real pages mostly do not) while its words and their frequencies are real ones.
Two thirds English, one third Chinese, ``--chars`` characters each (default 2,000). They go
in by direct bulk inserts (``pages``, ``page_texts``, and the index through
``passage_index.index_texts``, the write path's own call), 5,000 a transaction.

Queries: ``--queries`` paragraphs of 200–600 characters cut at a random offset of a random
stored text (half English, half Chinese; cut mid-word as a copy-paste may be), each run as
``simhash-filter --json near --limit 0 --text PARAGRAPH`` in-process (opening the store
included). Found: the source page among the rows holding the most of the paragraph. The scan:
the same command with the index marked incomplete (what ``near`` did before), ``--scan-queries``
of the same paragraphs, interleaved with the index's.

Run: ``python -m bench.bench_passage_index --backend sqlite --sizes 10000,100000``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import itertools
import json
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, text

from bench._common import DATA_DIR, create_pg_database, drop_pg_database, machine, write_results
from simhash_filter.cli import main as cli
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, passage_index
from simhash_filter.store.schema import page_texts_table, pages_table

BATCH = 5000


class Chain:
    """A first-order Markov chain over tokens (words or characters), sampled with numpy."""

    def __init__(self, sequences: list[list[str]], joiner: str) -> None:
        vocab: dict[str, int] = {}
        follows: dict[int, list[int]] = defaultdict(list)
        for seq in sequences:
            ids = [vocab.setdefault(t, len(vocab)) for t in seq]
            for a, b in itertools.pairwise(ids):
                follows[a].append(b)
        self.tokens = np.array(list(vocab), dtype=object)
        self.joiner = joiner
        n = len(vocab)
        counts = np.array([len(follows.get(i, [])) for i in range(n)], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.counts = counts
        self.next = np.array([b for i in range(n) for b in follows.get(i, [])], dtype=np.int64)
        self.starts = np.flatnonzero(counts > 0)

    def texts(self, count: int, length: int, rng: np.random.Generator) -> list[str]:
        cur = rng.choice(self.starts, size=count)
        out = np.empty((count, length), dtype=np.int64)
        for step in range(length):
            out[:, step] = cur
            dead = self.counts[cur] == 0
            cur = np.where(dead, rng.choice(self.starts, size=count), cur)
            pick = (rng.random(count) * self.counts[cur]).astype(np.int64)
            cur = self.next[self.offsets[cur] + pick]
        return [self.joiner.join(row) for row in self.tokens[out]]


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def chains() -> tuple[Chain, Chain]:
    truth = json.loads((DATA_DIR / "pages_en" / "ground-truth.json").read_text())
    english = [str(page["articleBody"]) for page in truth.values()]
    newest: dict[str, tuple[int, str]] = {}
    for doc in _jsonl(DATA_DIR / "neardup_peps_en" / "docs.jsonl.gz"):
        key, version = str(doc["doc_key"]), int(doc["version_index"])  # type: ignore[call-overload]
        if key not in newest or version > newest[key][0]:
            newest[key] = (version, str(doc["text"]))
    english += [t for _, t in newest.values()]
    chinese = [p.read_text(errors="replace") for p in (DATA_DIR / "pages_zh" / "cleaned").iterdir()]
    for doc in _jsonl(DATA_DIR / "haystack_multilingual" / "docs.jsonl.gz"):
        if doc["lang"] == "en":
            english.append(str(doc["text"]))
        elif str(doc["lang"]).startswith("zh"):
            chinese.append(str(doc["text"]))
    en = Chain([t.split() for t in english], " ")
    zh = Chain([list(" ".join(t.split())) for t in chinese], "")
    return en, zh


def make_texts(en: Chain, zh: Chain, count: int, chars: int, seed: int) -> list[tuple[str, str]]:
    """(language, text) pairs."""
    rng = np.random.default_rng(seed)
    n_zh = count // 3
    english = en.texts(count - n_zh, chars // 6, rng)  # ~6 characters a word with its space
    chinese = zh.texts(n_zh, chars, rng)
    mixed = [("en", t) for t in english] + [("zh", t) for t in chinese]
    order = rng.permutation(count)
    return [mixed[i] for i in order]


def fill(url: str, en: Chain, zh: Chain, size: int, chars: int) -> tuple[float, list[str]]:
    """Seconds the bulk fill took (texts made apart), and a sample of the texts to query."""
    with FingerprintStore.open(url, StoreOptions(spec=Fingerprinter().spec)):
        pass
    engine = create_engine(url)
    now = datetime.now(UTC)
    sample: list[str] = []
    seconds = 0.0
    rng = random.Random(size)
    for first in range(0, size, BATCH):
        n = min(BATCH, size - first)
        batch = make_texts(en, zh, n, chars, seed=first + 7)
        start = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(
                pages_table.insert(),
                [
                    {
                        "id": first + i + 1,
                        "url": f"https://bench.example/{first + i + 1}",
                        "domain": "bench.example",
                        "fingerprint": rng.getrandbits(64),
                        "text_length": len(t),
                        "first_seen": now,
                        "last_seen": now,
                    }
                    for i, (_, t) in enumerate(batch)
                ],
            )
            blobs = {first + i + 1: pack_text(t) for i, (_, t) in enumerate(batch)}
            passage_index.index_texts(conn, blobs)
            conn.execute(
                page_texts_table.insert(), [{"page_id": k, "text": b} for k, b in blobs.items()]
            )
        seconds += time.perf_counter() - start
        sample += [f"{first + i + 1}\t{lang}\t{t}" for i, (lang, t) in enumerate(batch[:20])]
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            start = time.perf_counter()
            conn.execute(text("VACUUM ANALYZE"))
            seconds += time.perf_counter() - start
    engine.dispose()
    return seconds, sample


def paragraphs(sample: list[str], count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(source URL, paragraph) pairs: half English, half Chinese."""
    english = [s for s in sample if s.split("\t")[1] == "en"]
    chinese = [s for s in sample if s.split("\t")[1] == "zh"]
    picked: list[tuple[str, str]] = []
    for n in range(count):
        page_id, _, body = rng.choice(english if n % 2 == 0 else chinese).split("\t", 2)
        length = rng.randint(200, 600)
        start = rng.randint(0, max(0, len(body) - length))
        picked.append((f"https://bench.example/{page_id}", body[start : start + length]))
    return picked


def timed_near(url: str, paragraph: str) -> tuple[float, list[dict[str, object]]]:
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(["--db", url, "--json", "near", "--limit", "0", f"--text={paragraph}"])
    elapsed = time.perf_counter() - start
    assert code == 0, err.getvalue()
    return elapsed, json.loads(out.getvalue())


def found(rows: list[dict[str, object]], source: str) -> bool:
    if not rows:
        return False
    top = rows[0].get("contains")
    return source in {r["url"] for r in rows if r.get("contains") == top} and top is not None


@contextlib.contextmanager
def scanning() -> Iterator[None]:
    """``near`` as before the index: the index taken for incomplete, so every stored text is
    read (an incomplete index is refilled when the store opens: its state cannot be used)."""
    complete = passage_index.is_complete
    passage_index.is_complete = lambda store: False  # type: ignore[assignment]
    try:
        yield
    finally:
        passage_index.is_complete = complete  # type: ignore[assignment]


def database_bytes(url: str) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            rows = conn.exec_driver_sql("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").all()
            sizes = {str(name): int(n) for name, n in rows}
            index = sum(n for name, n in sizes.items() if name.startswith("page_passages"))
            return {"texts": sizes.get("page_texts", 0), "index": index}
        texts = conn.execute(text("SELECT pg_total_relation_size('page_texts')")).scalar_one()
        index = conn.execute(text("SELECT pg_total_relation_size('page_passages')")).scalar_one()
    engine.dispose()
    return {"texts": int(texts), "index": int(index)}


def run_size(
    url: str, en: Chain, zh: Chain, size: int, args: argparse.Namespace
) -> dict[str, object]:
    fill_s, sample = fill(url, en, zh, size, args.chars)
    queries = paragraphs(sample, args.queries, random.Random(size + 1))
    index_s: list[float] = []
    scan_s: list[float] = []
    hits = {"en": 0, "zh": 0}
    scan_hits = 0
    for n, (source, paragraph) in enumerate(queries):
        seconds, rows = timed_near(url, paragraph)
        index_s.append(seconds)
        hits["en" if n % 2 == 0 else "zh"] += found(rows, source)
        if n < args.scan_queries:  # interleaved: the scan of the same paragraph next
            with scanning():
                seconds, rows = timed_near(url, paragraph)
            scan_s.append(seconds)
            scan_hits += found(rows, source)
    sizes = database_bytes(url)
    result: dict[str, object] = {
        "size": size,
        "fill_s": round(fill_s, 1),
        "index_p50_s": round(statistics.median(index_s), 3),
        "index_p90_s": round(sorted(index_s)[int(0.9 * (len(index_s) - 1))], 3),
        "found_en": f"{hits['en']}/{(len(queries) + 1) // 2}",
        "found_zh": f"{hits['zh']}/{len(queries) // 2}",
        "scan_p50_s": round(statistics.median(scan_s), 2) if scan_s else None,
        "scan_found": f"{scan_hits}/{len(scan_s)}" if scan_s else None,
        "texts_mib": round(sizes["texts"] / 2**20, 1),
        "index_mib": round(sizes["index"] / 2**20, 1),
    }
    print(json.dumps(result), flush=True)
    return result


def _like_escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def trgm_part(en: Chain, zh: Chain, size: int, args: argparse.Namespace) -> None:
    """PostgreSQL's other candidate, measured beside the chosen one on the same texts: the plain
    texts in a table under a ``pg_trgm`` GIN index, a paragraph found by ``LIKE '%…%'`` (the
    index's trigrams, then the heap's recheck), against ``page_passages``' terms (tsvector)."""
    url = create_pg_database("sf_bench_trgm")
    try:
        fill_s, sample = fill(url, en, zh, size, args.chars)
        engine = create_engine(url)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
            conn.execute(text("CREATE TABLE plain (page_id bigint PRIMARY KEY, body text)"))
            start = time.perf_counter()
            for first in range(0, size, BATCH):
                batch = make_texts(en, zh, min(BATCH, size - first), args.chars, seed=first + 7)
                conn.execute(
                    text("INSERT INTO plain VALUES (:i, :b)"),
                    [{"i": first + i + 1, "b": t} for i, (_, t) in enumerate(batch)],
                )
            conn.execute(text("CREATE INDEX plain_trgm ON plain USING gin (body gin_trgm_ops)"))
            conn.execute(text("VACUUM ANALYZE plain"))
            trgm_fill = time.perf_counter() - start
            trgm_mib = conn.execute(text("SELECT pg_total_relation_size('plain')")).scalar_one()
        times: dict[str, list[float]] = {"trgm": [], "tsvector": []}
        hits = {"trgm": 0, "tsvector": 0}
        for source, paragraph in paragraphs(sample, args.queries, random.Random(size + 1)):
            page_id = int(source.rsplit("/", 1)[1])
            with engine.connect() as conn:
                start = time.perf_counter()
                found_ids = {
                    r[0]
                    for r in conn.execute(
                        text("SELECT page_id FROM plain WHERE body LIKE :p LIMIT 200"),
                        {"p": "%" + _like_escaped(paragraph) + "%"},
                    )
                }
                times["trgm"].append(time.perf_counter() - start)
                hits["trgm"] += page_id in found_ids
            seconds, rows = timed_near(url, paragraph)
            times["tsvector"].append(seconds)
            hits["tsvector"] += found(rows, source)
        engine.dispose()
        print(
            f"fill (tsvector, the index write path's): {fill_s:.1f} s; trgm table + index: "
            f"{trgm_fill:.1f} s, {trgm_mib / 2**20:.1f} MiB; tsvector: "
            f"{database_bytes(url)['index'] / 2**20:.1f} MiB"
        )
        for name in times:
            print(
                f"{name}: p50 {statistics.median(times[name]):.3f} s, found {hits[name]}/"
                f"{args.queries} ({'the LIKE query alone' if name == 'trgm' else 'near --text'})"
            )
    finally:
        drop_pg_database(url)


def write_part(en: Chain, zh: Chain, args: argparse.Namespace) -> None:
    """What the index costs the write path: ``add_many`` of real-size stored texts in the
    crawl's batches (64), with the index and with it left out (``has_index`` patched to
    False), on a new SQLite file each, interleaved; seconds a run, and their ratio."""
    count = int(args.sizes.split(",")[0])
    fingerprinter = Fingerprinter()
    made = make_texts(en, zh, count, args.chars, seed=3)
    rows = []
    for n, (_, body) in enumerate(made):
        signature = fingerprinter.sign(body)
        assert signature is not None
        rows.append(
            PageRow(
                f"https://bench.example/{n}",
                signature.fingerprint,
                len(body),
                signature.sketch,
                pack_text(body),
            )
        )
    runs: dict[str, list[float]] = {"with the index": [], "without": []}
    has_index = passage_index.has_index
    for _ in range(args.repeats):
        for name in runs:
            if name == "without":
                passage_index.has_index = lambda conn: False  # type: ignore[assignment]
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    url = f"sqlite:///{Path(tmp) / 'write.db'}"
                    with FingerprintStore.open(
                        url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())
                    ) as store:
                        start = time.perf_counter()
                        store.add_many(rows, batch_size=64)
                        runs[name].append(time.perf_counter() - start)
            finally:
                passage_index.has_index = has_index  # type: ignore[assignment]
    a, b = (statistics.median(runs[n]) for n in runs)
    print("| pages | with the index (s) | without (s) | ratio | runs |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| {count:,} | {a:.2f} | {b:.2f} | {a / b:.2f}× | "
        + "; ".join(f"{n}: {', '.join(f'{v:.2f}' for v in runs[n])}" for n in runs)
        + " |"
    )
    print(f"per page: {1000 * (a - b) / count:.2f} ms more with the index")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--scan-queries", type=int, default=3)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--part", choices=["index", "trgm", "write"], default="index")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    start = time.perf_counter()
    en, zh = chains()
    print(f"chains trained in {time.perf_counter() - start:.1f} s", flush=True)
    if args.part == "write":
        write_part(en, zh, args)
        return
    if args.part == "trgm":
        trgm_part(en, zh, int(args.sizes.split(",")[0]), args)
        return
    results = []
    for size in map(int, args.sizes.split(",")):
        with tempfile.TemporaryDirectory(
            dir="/work/tmp" if Path("/work/tmp").is_dir() else None
        ) as tmp:
            if args.backend == "sqlite":
                url = f"sqlite:///{Path(tmp) / 'passages.db'}"
                results.append(run_size(url, en, zh, size, args))
            else:
                url = create_pg_database("sf_bench_passages")
                try:
                    results.append(run_size(url, en, zh, size, args))
                finally:
                    drop_pg_database(url)
    print(
        "| stored texts | back-end | near --text p50 (index) | p90 | found en | found zh "
        "| scan p50 | fill s | index MiB | texts MiB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['size']:,} | {args.backend} | {r['index_p50_s']} s | {r['index_p90_s']} s "
            f"| {r['found_en']} | {r['found_zh']} | {r['scan_p50_s']} s ({r['scan_found']}) "
            f"| {r['fill_s']} | {r['index_mib']} | {r['texts_mib']} |"
        )
    write_results(f"passage-index-{args.backend}", results)


if __name__ == "__main__":
    main()
