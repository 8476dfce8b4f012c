"""CPU seconds a hostile page costs: a fuzz corpus of page kinds, each at 10 KB, 100 KB, 1 MB
and the ``MAX_BYTES`` cap, through ``extract_page`` + ``sign`` (``pagework.sign_page``, the
work a page worker or the thread path does).

    .venv/bin/python -m bench.bench_hostile                  # every kind, every size
    .venv/bin/python -m bench.bench_hostile --kinds headings --sizes 1MB

Each page runs in a fresh child process (so one page's memory or caches do not help the next)
under a CPU budget (``--budget`` seconds, ``RLIMIT_CPU``: a page past it is reported as
"> budget"). While the page is signed in a thread, the child's main thread ticks every 10 ms,
as the crawl's reactor would: the longest gap between two ticks is the page's stall of the
thread path (``SIMHASH_FILTER_WORKERS = 0``). Reported: CPU seconds, CPU seconds a MB, the
growth from 100 KB to 1 MB, and the longest stall; raw results in ``bench/results/``.

The kinds (``crawler.testsite.hostile.KINDS``) are also the fuzz corpus of
``tests/test_hostile.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time

from bench._common import ROOT, machine, write_results
from crawler.testsite.hostile import KINDS, WORDS, hostile_page, html_page

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "cap": 2 * 1024 * 1024}
"""Page sizes in bytes (UTF-8); ``cap`` is the default ``SIMHASH_FILTER_MAX_BYTES``."""


def measure_one(kind: str, size: int) -> dict[str, float | int | None]:
    """Sign one page in a thread while this thread ticks: CPU seconds, longest stall."""
    from simhash_filter.fingerprint import Fingerprinter
    from simhash_filter.pagework import sign_page

    fingerprinter = Fingerprinter()
    fingerprinter.sign(WORDS * 10 + "预热结巴分词的词典。" * 4)  # jieba's dictionary, imports
    from trafilatura import external

    if getattr(external, "JT_STOPLIST", ()) is None:  # a one-time cost (~0.8 s), not the page's
        external.jt_stoplist_init()
    sign_page(fingerprinter, "", None, html_page(f"<p>{WORDS * 10}</p>"), max_bytes=SIZES["cap"])
    html = hostile_page(kind, size)
    done = threading.Event()
    result: dict[str, float | int | None] = {}

    def work() -> None:
        started = time.process_time()
        signature = sign_page(fingerprinter, "http://h/", None, html, max_bytes=SIZES["cap"])
        result["cpu_s"] = time.process_time() - started
        result["signed"] = int(signature is not None)
        done.set()

    thread = threading.Thread(target=work)
    last = time.monotonic()
    stall = 0.0
    thread.start()
    while not done.wait(0.01):
        now = time.monotonic()
        stall = max(stall, now - last)
        last = now
    thread.join()
    result["stall_s"] = max(stall, time.monotonic() - last)
    result["bytes"] = len(html)
    return result


def _child(kind: str, size: int, budget: int) -> dict[str, object]:
    """Run :func:`measure_one` in a fresh process under a CPU budget."""
    code = (
        "import json,resource,sys;"
        f"resource.setrlimit(resource.RLIMIT_CPU, ({budget}, {budget + 5}));"
        "from bench.bench_hostile import measure_one;"
        f"print(json.dumps(measure_one({kind!r}, {size})))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"cpu_s": None, "error": f"exit {proc.returncode}: {proc.stderr[-300:]}"}
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _cell(value: object, budget: int) -> str:
    return f"> {budget}" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--budget", type=int, default=120, help="CPU seconds a page at most")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, dict[str, object]]] = {}
    for kind in args.kinds:
        rows[kind] = {}
        for size_name in args.sizes:
            rows[kind][size_name] = r = _child(kind, SIZES[size_name], args.budget)
            print(kind, size_name, r, file=sys.stderr, flush=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    print(f"command: .venv/bin/python -m bench.bench_hostile {' '.join(argv or sys.argv[1:])}")
    print()
    header = [f"CPU s {s}" for s in args.sizes] + [
        "growth 100KB→1MB",
        "s/MB (max)",
        "stall s (max)",
    ]
    print("| kind | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for kind, sizes in rows.items():
        cpu = {s: r.get("cpu_s") for s, r in sizes.items()}
        cells = [_cell(cpu[s], args.budget) for s in args.sizes]
        small, big = cpu.get("100KB"), cpu.get("1MB")
        growth = (
            f"{big / small:.1f}×"
            if isinstance(small, float) and isinstance(big, float) and small
            else "—"
        )
        per_mb = [
            c / (int(r.get("bytes", SIZES[s])) / 1e6)  # type: ignore[call-overload]
            for s, r in sizes.items()
            if isinstance((c := r.get("cpu_s")), float) and s in ("1MB", "cap")
        ]
        stalls = [r.get("stall_s") for r in sizes.values() if isinstance(r.get("stall_s"), float)]
        cells += [
            growth,
            f"{max(per_mb):.2f}" if per_mb else "—",
            f"{max(stalls):.2f}" if stalls else "—",  # type: ignore[type-var]
        ]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    write_results("hostile", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
