"""``near --text`` on a passage: the stored-text scan against the index's answer, by size.

A paragraph of a stored page is too unlike the whole page for the sketch index to find it, so
``near`` reads every stored text (``STORE_TEXT``) for pages that contain it. This measures what
that scan costs at 1k, 4k and 16k stored pages (SQLite), next to ``near --text`` with a whole
page, which the index answers: the same command, interleaved, medians of the repeats.
``--part normalize``: the scan's cost a stored page with the fingerprint's ``normalize`` and
with the light folding it uses (``passage_hashes``), interleaved over the same pages.

Pages: the article bodies of ``pages_en/ground-truth.json``, each stored page a different mix of
their paragraphs (so no two are copies). Run: ``python -m bench.bench_near_text``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench._common import DATA_DIR, RESULTS_DIR, machine
from simhash_filter.cli import main as cli
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.sketch import contained_share, passage_hashes, shingle_hashes
from simhash_filter.core.stored_text import pack_text, unpack_text
from simhash_filter.core.text import normalize
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions


def paragraphs() -> list[str]:
    truth = json.loads((DATA_DIR / "pages_en" / "ground-truth.json").read_text())
    found = [
        p.strip() for page in truth.values() for p in page["articleBody"].split("\n") if p.strip()
    ]
    return [p for p in found if len(p) > 200]


def pages(count: int, pool: list[str], rng: random.Random) -> list[str]:
    return ["\n\n".join(rng.sample(pool, 8)) for _ in range(count)]


def build(db: Path, texts: list[str]) -> None:
    fingerprinter = Fingerprinter()
    url = f"sqlite:///{db}"
    with FingerprintStore.open(
        url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())
    ) as store:
        rows = []
        for n, text in enumerate(texts):
            signature = fingerprinter.sign(text)
            assert signature is not None
            rows.append(
                PageRow(
                    f"https://bench.example/{n}",
                    signature.fingerprint,
                    len(text),
                    signature.sketch,
                    pack_text(text),
                )
            )
        store.add_many(rows, batch_size=1000)


def timed_near(db: Path, text: str) -> tuple[float, set[str]]:
    """Seconds ``near --text`` took, and the URLs holding as much of the text as the first (all
    the pages mixed from its paragraph hold all of it)."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(["--db", f"sqlite:///{db}", "--json", "near", "--limit", "0", "--text", text])
    elapsed = time.perf_counter() - start
    assert code == 0, err.getvalue()
    rows = json.loads(out.getvalue())
    key = ("contains",)
    best = [r for r in rows if all(r.get(k) == rows[0].get(k) for k in key)]
    return elapsed, {r["url"] for r in best}


def scan_ms(blobs: list[bytes], passage: str, *, light: bool) -> float:
    """Milliseconds a stored page of the passage search: unpack, fold, hash, compare."""
    start = time.perf_counter()
    if light:
        part = passage_hashes(passage)
        for blob in blobs:
            contained_share(part, passage_hashes(unpack_text(blob).text))
    else:
        part = shingle_hashes(normalize(passage))
        for blob in blobs:
            contained_share(part, shingle_hashes(normalize(unpack_text(blob).text)))
    return 1000 * (time.perf_counter() - start) / len(blobs)


def normalize_part(pool: list[str], repeats: int) -> None:
    texts = pages(500, pool, random.Random(7))
    blobs = [pack_text(t) for t in texts]
    passage = texts[0].split("\n\n")[3]
    runs: dict[str, list[float]] = {"full": [], "light": []}
    for _ in range(repeats):  # interleaved: A B A B
        runs["full"].append(scan_ms(blobs, passage, light=False))
        runs["light"].append(scan_ms(blobs, passage, light=True))
    full, light = statistics.median(runs["full"]), statistics.median(runs["light"])
    print(f"machine: {machine()}")
    print("| folding | ms a stored page (median) | runs |")
    print("| --- | --- | --- |")
    for name, value in (("normalize (the fingerprint's)", full), ("light (passage_hashes)", light)):
        key = "full" if name.startswith("normalize") else "light"
        print(f"| {name} | {value:.2f} | {', '.join(f'{v:.2f}' for v in runs[key])} |")
    print(f"light / normalize: {light / full:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=["scan", "normalize"], default="scan")
    parser.add_argument("--sizes", default="1000,4000,16000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(31)
    pool = paragraphs()
    if args.part == "normalize":
        normalize_part(pool, args.repeats)
        return
    results = []
    print(f"machine: {machine()}")
    print(
        "| stored pages | near --text whole page (index) | near --text a paragraph (scan) "
        "| ratio | found its page |"
    )
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for size in map(int, args.sizes.split(",")):
            db = Path(tmp) / f"near-{size}.db"
            texts = pages(size, pool, rng)
            build(db, texts)
            target = size // 2
            whole, passage = texts[target], texts[target].split("\n\n")[3]
            timings: dict[str, list[float]] = {"whole": [], "passage": []}
            found = True
            for _ in range(args.repeats):  # interleaved: A B A B
                for name, text in (("whole", whole), ("passage", passage)):
                    seconds, urls = timed_near(db, text)
                    timings[name].append(seconds)
                    found &= f"https://bench.example/{target}" in urls
            a, b = (statistics.median(timings[n]) for n in ("whole", "passage"))
            results.append(
                {
                    "size": size,
                    "whole_s": timings["whole"],
                    "passage_s": timings["passage"],
                    "found": found,
                }
            )
            print(f"| {size:,} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {b / a:.1f}× | {found} |")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / "near_text.json"
    out.write_text(json.dumps({"machine": machine(), "results": results}, indent=1))
    print(f"raw results: {out.relative_to(RESULTS_DIR.parent.parent)}")


if __name__ == "__main__":
    main()
