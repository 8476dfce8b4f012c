"""What opening the store costs a read-only command: ``near --text PARAGRAPH`` in a new
process, the store's open (``FingerprintStore.open_existing``) timed inside it, against the
same command run from another checkout (``--other``: the code before a change), side by side.

Each run is a new Python process (a user's command: the first connection, the dialect's
first queries and every lazy import included), this checkout's and the other's in turn
(A B A B ...), each printing its open's and its whole command's seconds (the driver
imported first); medians of each and the median of the pairs' ratios. The paragraph: 300
characters of a stored text of ``--db``.

Run: ``python -m bench.bench_store_open --db postgresql+psycopg://…/db --other /work/main``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(url: str, paragraph: str) -> None:
    """One command, timed: the open inside it and the whole ``near --text`` (the driver
    imported before either: its import is no part of the store's open)."""
    from simhash_filter.cli import main as cli
    from simhash_filter.store import FingerprintStore

    if url.startswith("postgresql"):
        import psycopg  # noqa: F401

    opened: list[float] = []
    original = FingerprintStore.open_existing.__func__  # type: ignore[attr-defined]

    def timed(cls: type[FingerprintStore], *args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return original(cls, *args, **kwargs)
        finally:
            opened.append(time.perf_counter() - start)

    FingerprintStore.open_existing = classmethod(timed)  # type: ignore[assignment,method-assign]
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli(["--db", url, "--json", "near", "--limit", "0", f"--text={paragraph}"])
    elapsed = time.perf_counter() - start
    assert code == 0
    assert json.loads(out.getvalue()), "the paragraph's page was not found"
    import simhash_filter

    print(json.dumps({"open_s": sum(opened), "near_s": elapsed, "code": simhash_filter.__file__}))


def paragraph_of(url: str) -> str:
    """300 characters from the middle of the first stored text."""
    from sqlalchemy import create_engine, text

    from simhash_filter.core.stored_text import unpack_text

    engine = create_engine(url)
    with engine.connect() as conn:
        blob = conn.execute(text("SELECT text FROM page_texts ORDER BY page_id LIMIT 1")).scalar()
    engine.dispose()
    body = unpack_text(bytes(blob)).text
    return body[len(body) // 4 :][:300]


def run(checkout: Path, url: str, paragraph: str) -> dict[str, float]:
    """One command in a new process, ``simhash_filter`` imported from ``checkout`` (this
    file run as a script: the child imports nothing of ``bench``)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--db", url, paragraph],
        env={**os.environ, "PYTHONPATH": str(checkout)}, cwd=checkout,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result.pop("code")).is_relative_to(checkout), result
    return dict(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--other", type=Path, help="another checkout: its code beside this one")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("paragraph", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.db, args.paragraph)
        return
    from bench._common import ROOT, machine, write_results

    print(f"machine: {machine()}")
    paragraph = paragraph_of(args.db)
    checkouts = {"this": ROOT} | ({"other": args.other.resolve()} if args.other else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.runs):
        for name, checkout in checkouts.items():
            runs[name].append(run(checkout, args.db, paragraph))
    results = {}
    for name, checkout in checkouts.items():
        opens = [r["open_s"] for r in runs[name]]
        nears = [r["near_s"] for r in runs[name]]
        results[name] = {
            "checkout": str(checkout),
            "open_p50_s": round(statistics.median(opens), 4),
            "near_p50_s": round(statistics.median(nears), 4),
            "open_s": [round(x, 4) for x in opens],
            "near_s": [round(x, 4) for x in nears],
        }
        print(
            f"{name} ({checkout}): open p50 {results[name]['open_p50_s']:.3f} s "
            f"(min {min(opens):.3f}, max {max(opens):.3f}), near --text p50 "
            f"{results[name]['near_p50_s']:.3f} s (min {min(nears):.3f}, max {max(nears):.3f})"
        )
    if "other" in results:
        for key in ("open_s", "near_s"):
            pairs = [a[key] / b[key] for a, b in zip(runs["this"], runs["other"], strict=True)]
            ratio = statistics.median(pairs)
            results[f"{key}_ratio_p50"] = round(ratio, 3)
            print(f"{key}: this / other, the median of the {len(pairs)} pairs' ratios {ratio:.2f}")
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    write_results("store-open", results)


if __name__ == "__main__":
    main()
