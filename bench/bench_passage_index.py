"""``near --text`` on a paragraph through the passage index (schema 6), beside the stored-text
scan it replaces, at 10k, 100k and 1M stored texts, on SQLite or PostgreSQL.

Texts: new ones, made by Markov chains trained on the real texts of the data folder (English:
a word chain over ``pages_en``'s article bodies, ``neardup_peps_en``'s newest PEP versions and
``haystack_multilingual``'s English; Chinese: a character chain over ``pages_zh``'s cleaned
texts and ``haystack_multilingual``'s Chinese pages): each text is its own (no two share a
paragraph, as real pages mostly do not) while its words and their frequencies are real ones.
Two thirds English, one third Chinese, ``--chars`` characters each (default 2,000), made
5,000 a batch by two worker processes, each blob and its terms cut as the write path cuts
them (``pack_text``, ``text_terms``). Every back-end of ``--backend`` (both by default) gets
the same batches, one transaction each: SQLite by bulk inserts (``pages``, ``page_texts``,
the index through the write path's ``passage_index.index_terms``); PostgreSQL by ``COPY``
into the three tables (the terms as ``tsvector`` text, checked equal to the write path's
``array_to_tsvector`` on the first rows), its GIN index dropped while an empty table fills
and built once after (``maintenance_work_mem`` 1 GB), kept while a filled one grows. The
sizes of ``--sizes`` are one fill grown size by size, queried at each; ``--sqlite-url`` and
``--pg-url`` grow existing databases (a fill stopped: resumed), ``--keep`` keeps those made,
``--query-only`` queries them as they are (no fill: code changed since they were filled).

Queries: ``--queries`` paragraphs of 200–600 characters cut at a random offset of a random
stored text (half English, half Chinese; cut mid-word as a copy-paste may be), each run as
``simhash-filter --json near --limit 0 --text PARAGRAPH`` in-process (opening the store
included). Found: the source page among the rows holding the most of the paragraph. The scan:
the same command with the index marked incomplete (what ``near`` did before), ``--scan-queries``
of the same paragraphs, interleaved with the index's.

Run: ``python -m bench.bench_passage_index --sizes 100000,1000000 --chars 1000``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, text

from bench._common import create_pg_database, drop_pg_database, machine, write_results
from bench.passage_fill import BATCH, Chain, Target, chains, fill, make_texts
from simhash_filter.cli import main as cli
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, passage_index


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
    targets: list[Target], sample: list[str], size: int, args: argparse.Namespace
) -> list[dict[str, object]]:
    """Query every target with the same paragraphs, interleaved (a paragraph on each in
    turn); a result row a target."""
    queries = paragraphs(sample, args.queries, random.Random(size + 1))
    index_s: dict[str, list[float]] = {t.url: [] for t in targets}
    scan_s: dict[str, list[float]] = {t.url: [] for t in targets}
    hits = {t.url: {"en": 0, "zh": 0} for t in targets}
    scan_hits = dict.fromkeys(index_s, 0)
    for n, (source, paragraph) in enumerate(queries):
        for t in targets:
            seconds, rows = timed_near(t.url, paragraph)
            index_s[t.url].append(seconds)
            hits[t.url]["en" if n % 2 == 0 else "zh"] += found(rows, source)
            if n < args.scan_queries:  # interleaved: the scan of the same paragraph next
                with scanning():
                    seconds, rows = timed_near(t.url, paragraph)
                scan_s[t.url].append(seconds)
                scan_hits[t.url] += found(rows, source)
    results = []
    for t in targets:
        times, scans = sorted(index_s[t.url]), scan_s[t.url]
        sizes = database_bytes(t.url)
        result: dict[str, object] = {
            "size": size,
            "backend": t.dialect,
            "chars": args.chars,
            "fill_s": round(t.seconds, 1),
            "index_p50_s": round(statistics.median(times), 3),
            "index_p90_s": round(times[int(0.9 * (len(times) - 1))], 3),
            "index_p95_s": round(times[int(0.95 * (len(times) - 1))], 3),
            "found_en": f"{hits[t.url]['en']}/{(len(queries) + 1) // 2}",
            "found_zh": f"{hits[t.url]['zh']}/{len(queries) // 2}",
            "scan_p50_s": round(statistics.median(scans), 2) if scans else None,
            "scan_found": f"{scan_hits[t.url]}/{len(scans)}" if scans else None,
            "texts_mib": round(sizes["texts"] / 2**20, 1),
            "index_mib": round(sizes["index"] / 2**20, 1),
            "load": os.getloadavg()[0],
        }
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


def _like_escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def trgm_part(en: Chain, zh: Chain, size: int, args: argparse.Namespace) -> None:
    """PostgreSQL's other candidate, measured beside the chosen one on the same texts: the plain
    texts in a table under a ``pg_trgm`` GIN index, a paragraph found by ``LIKE '%…%'`` (the
    index's trigrams, then the heap's recheck), against ``page_passages``' terms (tsvector)."""
    url = create_pg_database("sf_bench_trgm")
    try:
        target = Target(url)
        sample = fill([target], (en, zh), size, args.chars)
        fill_s = target.seconds
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


@contextlib.contextmanager
def _write_database(backend: str) -> Iterator[str]:
    """A new, empty database of the back-end for one write run (dropped after)."""
    if backend == "postgresql":
        url = create_pg_database("sf_bench_write")
        try:
            yield url
        finally:
            drop_pg_database(url)
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / 'write.db'}"


def write_part(en: Chain, zh: Chain, args: argparse.Namespace) -> None:
    """What the index costs the write path: ``add_many`` of real-size stored texts in the
    crawl's batches (64), with the index and with it left out (``has_index`` patched to
    False), on a new database each (an SQLite file; PostgreSQL: ``--backend postgresql``),
    interleaved; seconds a run, and their ratio."""
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
                with (
                    _write_database(args.backend) as url,
                    FingerprintStore.open(
                        url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())
                    ) as store,
                ):
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
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--scan-queries", type=int, default=3)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--part", choices=["index", "trgm", "write"], default="index")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sqlite-url", help="an existing database to grow (not removed)")
    parser.add_argument("--pg-url", help="an existing database to grow (not dropped)")
    parser.add_argument("--keep", action="store_true", help="keep the databases made")
    parser.add_argument(
        "--query-only",
        action="store_true",
        help="query the databases of --sqlite-url/--pg-url as they are (no fill)",
    )
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
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    given = {"sqlite": args.sqlite_url, "postgresql": args.pg_url}
    results: list[dict[str, object]] = []
    made_pg: str | None = None
    tmp = tempfile.mkdtemp(dir="/work/tmp" if Path("/work/tmp").is_dir() else None)
    targets: list[Target] = []
    try:
        for backend in backends:
            url = given[backend]
            if url is None and backend == "sqlite":
                url = f"sqlite:///{Path(tmp) / 'passages.db'}"
            elif url is None:
                url = made_pg = create_pg_database("sf_bench_passages")
            targets.append(Target(url))
        sample = targets[0].sample()
        if args.query_only:  # no fill, no index build, no VACUUM: the databases as they are
            results += run_size(targets, sample, min(t.pages for t in targets), args)
        sizes = [] if args.query_only else [int(size) for size in args.sizes.split(",")]
        for size in sizes:  # one fill, grown size by size
            sample += fill(targets, (en, zh), size, args.chars)
            results += run_size(targets, sample, size, args)
    finally:
        if args.keep:
            print(f"kept: {' '.join(t.url for t in targets)}")
        else:
            if made_pg is not None:
                drop_pg_database(made_pg)
            shutil.rmtree(tmp)
    print(
        "| stored texts | back-end | near --text p50 (index) | p95 | found en | found zh "
        "| scan p50 | fill s | index MiB | texts MiB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['size']:,} | {r['backend']} | {r['index_p50_s']} s | {r['index_p95_s']} s "
            f"| {r['found_en']} | {r['found_zh']} | {r['scan_p50_s']} s ({r['scan_found']}) "
            f"| {r['fill_s']} | {r['index_mib']} | {r['texts_mib']} |"
        )
    write_results(f"passage-index-{args.backend}", results)


if __name__ == "__main__":
    main()
