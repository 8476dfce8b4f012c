"""What auditing costs: the bytes a page's stored text takes, and the HTML report's time and
size on large databases.

    .venv/bin/python -m bench.bench_audit --part bytes            # pages_en, pages_zh
    .venv/bin/python -m bench.bench_audit --part report --pages 100000
    .venv/bin/python -m bench.bench_audit --part report --pages 1000000

``bytes``: every page of ``pages_en`` and ``pages_zh`` through the crawl's page work with
``STORE_TEXT`` (trafilatura's main text, capped and compressed as the store keeps it): the
median page's main text in UTF-8 and stored; then the whole corpus imported through
``add_many`` into two SQLite files, with and without texts: the file's growth a page.

``report``: a SQLite database (``--pg``: a throw-away PostgreSQL one) filled through the
store's bulk path (``add_many``, 5,000 pages a transaction) with ``--pages`` pages, one in
ten a near-copy of an earlier one (its drop logged), every page with a stored text
(synthetic articles of ~500 words from a pool); then ``simhash-filter report``'s work (the
queries, the sample's diffs, the HTML) timed, and the file's size. The crawl's pages/s with
STORE_TEXT on and off: ``bench_crawl --part storetext``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, ROOT, machine, pg_database, write_results
from bench.crawl_site import load_corpus
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.stored_text import pack_text
from simhash_filter.page.work import sign_page
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions

SPEC = "bench-audit;synthetic"
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "river council market library bridge station garden museum school festival weather "
    "bakery theatre forest valley mountain island village engineer teacher farmer doctor "
    "painter sailor builder printer merchant miller student harbour tram budget plan city "
    "report season winter summer traffic water energy price workers company minister"
).split()


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def bytes_part(data: Path) -> dict[str, Any]:
    fingerprinter = Fingerprinter()
    results: dict[str, Any] = {}
    corpus = load_corpus(data)
    with tempfile.TemporaryDirectory() as tmp:
        for lang in ("en", "zh"):
            rows, raw, packed = [], [], []
            for n, (page_lang, _name, html) in enumerate(corpus):
                if page_lang != lang:
                    continue
                url = f"https://{lang}.example/{n}"
                signature = sign_page(
                    fingerprinter, url, None, html, max_bytes=2 << 20, keep_text=True
                )
                if signature is None or signature.stored_text is None:
                    continue
                raw.append(len(_main_text_bytes(signature.stored_text)))
                packed.append(len(signature.stored_text))
                rows.append(
                    PageRow(
                        url,
                        signature.fingerprint,
                        signature.text_length,
                        signature.sketch,
                        signature.stored_text,
                    )
                )
            sizes = {}
            for with_text in (False, True):
                path = Path(tmp) / f"{lang}-{with_text}.db"
                with FingerprintStore.open(
                    f"sqlite:///{path}", StoreOptions(spec=fingerprinter.spec)
                ) as store:
                    store.add_many(
                        [r if with_text else r._replace(text=None) for r in rows], batch_size=500
                    )
                sizes[with_text] = _file_bytes(path)
            results[lang] = {
                "pages": len(rows),
                "median_text_utf8_bytes": statistics.median(raw),
                "median_stored_bytes": statistics.median(packed),
                "mean_stored_bytes": statistics.mean(packed),
                "max_stored_bytes": max(packed),
                "database_bytes_without_text": sizes[False],
                "database_bytes_with_text": sizes[True],
                "database_bytes_a_page": (sizes[True] - sizes[False]) / len(rows),
            }
    return results


def _main_text_bytes(blob: bytes) -> bytes:
    from simhash_filter.core.stored_text import unpack_text

    return unpack_text(blob).text.encode("utf-8")


def _article(rng: random.Random, words: int = 500) -> str:
    sentences, left = [], words
    while left > 0:
        n = min(left, rng.randint(8, 20))
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + ".")
        left -= n
    return "\n".join(" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4))


def synthetic_rows(pages: int, seed: int = 3) -> Iterator[PageRow]:
    """``pages`` rows: nine in ten new pages, one in ten a 1-bit copy of an earlier one."""
    rng = random.Random(seed)
    pool = [_article(rng) for _ in range(64)]
    kept_blobs = [pack_text(text) for text in pool]
    copy_blobs = [pack_text(text.replace(" the ", " a ", 3)) for text in pool]
    fingerprints: list[int] = []
    for n in range(pages):
        url = f"https://site{n % 1000}.example/page/{n}"
        if n % 10 == 9 and fingerprints:
            original = rng.randrange(len(fingerprints))
            fingerprint = fingerprints[original] ^ (1 << rng.randrange(64))
            yield PageRow(url, fingerprint, 3000, None, copy_blobs[original % len(pool)])
        else:
            fingerprints.append(rng.getrandbits(64))
            yield PageRow(url, fingerprints[-1], 3000, None, kept_blobs[n % len(pool)])


def report_part(pages: int, workdir: Path, pg_url: str | None = None) -> dict[str, Any]:
    from simhash_filter.cli.report import write_report
    from simhash_filter.store.reports import database_size

    path = workdir / "audit.db"
    url = pg_url or f"sqlite:///{path}"
    started = time.perf_counter()
    with FingerprintStore.open(url, StoreOptions(spec=SPEC, max_distance=3)) as store:
        source = synthetic_rows(pages)
        for chunk_start in range(0, pages, 100_000):
            rows = list(itertools.islice(source, 100_000))
            store.add_many(rows, batch_size=5000)
            print(f"  filled {chunk_start + len(rows):,}", file=sys.stderr)
    fill = time.perf_counter() - started
    with FingerprintStore.open_existing(url) as store:
        numbers = store.stats()
        size = database_size(store) or 0
        out = workdir / "report.html"
        started = time.perf_counter()
        write_report(store, out)
        seconds = time.perf_counter() - started
    return {
        "pages_offered": pages,
        "kept": numbers.pages,
        "dropped": numbers.duplicates,
        "fill_seconds": fill,
        "backend": "postgresql" if pg_url else "sqlite",
        "database_bytes": size,
        "report_seconds": seconds,
        "report_bytes": out.stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--part", choices=("bytes", "report"), default="bytes")
    parser.add_argument("--pages", type=int, default=100_000, help="pages of the report part")
    parser.add_argument("--dir", type=Path, help="keep the report part's database here")
    parser.add_argument(
        "--pg", action="store_true", help="report part on a throw-away PostgreSQL database"
    )
    args = parser.parse_args(argv)
    print(f"machine: {machine()}\n")
    if args.part == "bytes":
        if not (args.data / "pages_en").is_dir():
            print(f"no corpus at {args.data} (give --data)", file=sys.stderr)
            return 2
        results = bytes_part(args.data)
        print(
            "| corpus | pages | median main text (UTF-8) | median stored | mean stored "
            "| database growth a page |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for lang, r in results.items():
            print(
                f"| pages_{lang} | {r['pages']} | {r['median_text_utf8_bytes']:,.0f} B "
                f"| {r['median_stored_bytes']:,.0f} B | {r['mean_stored_bytes']:,.0f} B "
                f"| {r['database_bytes_a_page']:,.0f} B |"
            )
    else:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = args.dir or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            if args.pg:
                with pg_database("sf_bench_audit") as pg_url:
                    results = report_part(args.pages, workdir, pg_url)
            else:
                results = report_part(args.pages, workdir)
        r = results
        print(
            "| back-end | pages offered | kept | dropped | fill (add_many) | database "
            "| report time | report size |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(
            f"| {r['backend']} | {r['pages_offered']:,} | {r['kept']:,} | {r['dropped']:,} "
            f"| {r['fill_seconds']:.0f} s | {r['database_bytes'] / 2**20:,.0f} MiB "
            f"| {r['report_seconds']:.1f} s | {r['report_bytes'] / 1024:,.0f} KiB |"
        )
    path = write_results(f"bench_audit-{args.part}", results)
    print(f"\nraw results: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
