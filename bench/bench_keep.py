"""What the keep policy costs: reading the canonical hints from a parsed page, and storing
them beside the verdicts (issue 29, "keep the right copy").

1. Hints: ``page_hints`` on the tree the page work parses anyway, per real page of
   ``pages_en`` and ``pages_zh``, next to what the rest of the page work costs
   (``extract_page``: parse, main text, visible text).
2. Store: check-and-add in the crawl's batches (``add_many`` of 64) of pages that all
   declare a canonical URL, against the same pages without one, on SQLite; variants
   interleaved (A B A B ...), each run on a fresh database; medians and the ratio.

    .venv/bin/python -m bench.bench_keep [--data DIR] [--rounds 5] [--pages 4000]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from trafilatura.utils import load_html

from bench._common import DATA_DIR, machine, write_results
from simhash_filter.core.signature import MatchRule, encode_sketch
from simhash_filter.page.extract import extract_page
from simhash_filter.page.head_canonicals import page_hints
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions

SPEC = "bench-keep;f=64"


def real_pages(data: Path) -> list[tuple[str, bytes]]:
    """(url, html) of every page of pages_en and pages_zh."""
    pages = [
        (f"https://en.example/{path.name}", gzip.decompress(path.read_bytes()))
        for path in sorted((data / "pages_en" / "html").glob("*.html.gz"))
    ]
    pages += [
        (f"https://zh.example/{path.name}", path.read_bytes())
        for path in sorted((data / "pages_zh" / "original").glob("*.html"))
    ]
    return pages


def hint_costs(pages: list[tuple[str, bytes]]) -> dict[str, float]:
    """Median microseconds a page: page_hints on a parsed tree, and extract_page whole."""
    hints_us, page_us, found = [], [], 0
    for url, html in pages:
        tree = load_html(html)
        if tree is None:
            continue
        started = time.perf_counter()
        for _ in range(20):
            hints = page_hints(tree, url)
        hints_us.append((time.perf_counter() - started) / 20 * 1e6)
        found += hints is not None
        started = time.perf_counter()
        extract_page(html, url=url)
        page_us.append((time.perf_counter() - started) * 1e6)
    return {
        "pages": len(hints_us),
        "pages_with_a_hint": found,
        "hints_us_median": statistics.median(hints_us),
        "hints_us_p99": float(np.percentile(hints_us, 99)),
        "extract_page_us_median": statistics.median(page_us),
        "share_of_extract_page": statistics.median(hints_us) / statistics.median(page_us),
    }


def synthetic_rows(n: int, *, hinted: bool) -> list[PageRow]:
    """``n`` unrelated pages (random fingerprints and sketches), each declaring itself its
    canonical when ``hinted``."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        sketch = encode_sketch(rng.integers(0, 1 << 16, 256, dtype=np.uint16))
        url = f"https://site.example/articles/{i}"
        rows.append(PageRow(url, int(rng.integers(0, 1 << 63)), 500, sketch, None,
                            url if hinted else None))  # fmt: skip
    return rows


def store_run(rows: list[PageRow]) -> float:
    """Microseconds a page of check-and-add in batches of 64, on a fresh SQLite file."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/keep.db"
        with FingerprintStore.open(url, StoreOptions(spec=SPEC, rule=MatchRule())) as store:
            started = time.perf_counter()
            for start in range(0, len(rows), 64):
                store.add_many(rows[start : start + 64])
            return (time.perf_counter() - started) / len(rows) * 1e6


def store_costs(n: int, rounds: int) -> dict[str, object]:
    plain, hinted = synthetic_rows(n, hinted=False), synthetic_rows(n, hinted=True)
    runs: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(rounds):  # A B A B
        runs["without"].append(store_run(plain))
        runs["with"].append(store_run(hinted))
    without, with_ = statistics.median(runs["without"]), statistics.median(runs["with"])
    return {"runs_us": runs, "without_us": without, "with_us": with_, "ratio": with_ / without}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=4000)
    args = parser.parse_args()
    print(machine())
    hints = hint_costs(real_pages(args.data))
    print(
        f"hints: {hints['pages']} real pages, {hints['pages_with_a_hint']} with a hint; "
        f"page_hints median {hints['hints_us_median']:.1f} us (p99 {hints['hints_us_p99']:.1f}),"
        f" extract_page median {hints['extract_page_us_median']:.0f} us: "
        f"{hints['share_of_extract_page']:.2%} of it"
    )
    store = store_costs(args.pages, args.rounds)
    print(
        f"store: check-and-add in batches of 64, {args.pages} pages, {args.rounds} rounds A B: "
        f"without hints {store['without_us']:.1f} us a page, with {store['with_us']:.1f} us "
        f"({store['ratio']:.3f}x)"
    )
    print(write_results("keep", {"hints": hints, "store": store}))


if __name__ == "__main__":
    main()
