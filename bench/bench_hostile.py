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

The kinds (:data:`KINDS`) are also the fuzz corpus of ``tests/test_hostile.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from bench._common import ROOT, machine, write_results

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "cap": 2 * 1024 * 1024}
"""Page sizes in bytes (UTF-8); ``cap`` is the default ``SIMHASH_FILTER_MAX_BYTES``."""

_MARKS = "\u0301\u0316\u0334\u0345\u05b0\u0323\u0300\u0327"
"""Combining marks of eight canonical classes, out of canonical order (NFKC sorts each run)."""
_WORDS = "the crawler reads every page once and keeps only one copy of each article "


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head`` + ``unit`` repeated + ``tail``, about ``size`` bytes of UTF-8."""
    unit_bytes = len(unit.encode())
    fixed = len((head + tail).encode())
    return head + unit * max(1, (size - fixed) // unit_bytes) + tail


def _page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def _article(unit: str, size: int) -> str:
    return _repeat(unit, size, "<html><body><article>", "</article></body></html>")


def _deep(size: int) -> str:
    """Text nested 300 elements deep (past libxml2's depth limit of 255), then more text."""
    nest = 300
    head = "<html><body>" + "<div>" * nest + "<p>"
    tail = "</p>" + "</div>" * nest + "</body></html>"
    return _repeat(_WORDS, size, head, tail)


def _marks_in_nav_han_in_article(size: int) -> str:
    half = size // 2
    nav = _repeat("a" + _MARKS * 4 + " ", half // 2, "<nav>", "</nav>")
    art = _repeat("丂", half, "<article><p>", "</p></article>")
    return _page(nav + art)


KINDS: dict[str, Callable[[int], str]] = {
    "prose": lambda n: _article(f"<p>{_WORDS * 4}</p>", n),
    "headings": lambda n: _article("<h2>head</h2>text ", n),
    "paragraphs": lambda n: _article("<p>para text here</p>", n),
    "links": lambda n: _repeat('<a href="/x">link</a> ', n, "<html><body><div>", "</div>"),
    "list-items": lambda n: _article("<li>item</li>", n),
    "table-cells": lambda n: _repeat("<td>cell</td>", n, "<html><body><table><tr>", "</table>"),
    "line-breaks": lambda n: _article("<br>text ", n),
    "marks": lambda n: _repeat(_MARKS, n, "<html><body><article><p>a", "</p></article>"),
    "marks-words": lambda n: _article("a" + _MARKS * 8 + " ", n),
    "han-unjoinable": lambda n: _repeat("丂", n, "<html><body><article><p>", "</p></article>"),
    "han-common": lambda n: _repeat("的", n, "<html><body><article><p>", "</p></article>"),
    "kana": lambda n: _repeat("あいうえお", n, "<html><body><article><p>", "</p></article>"),
    "marks-nav-han-article": _marks_in_nav_han_in_article,
    "deep": _deep,
    "machine-text": lambda n: _article("x://a@b.c](d( <a b ", n),
    "one-word": lambda n: _repeat("a", n, "<html><body><article><p>", "</p></article>"),
}
"""Hostile page kinds: size in bytes → the page's HTML."""


def hostile_page(kind: str, size: int) -> bytes:
    """The page of ``kind`` at about ``size`` bytes (at most ``size``), UTF-8."""
    return KINDS[kind](size).encode()[:size]


def measure_one(kind: str, size: int) -> dict[str, float | int | None]:
    """Sign one page in a thread while this thread ticks: CPU seconds, longest stall."""
    from simhash_filter.fingerprint import Fingerprinter
    from simhash_filter.pagework import sign_page

    fingerprinter = Fingerprinter()
    fingerprinter.sign(_WORDS * 10 + "预热结巴分词的词典。" * 4)  # jieba's dictionary, imports
    from trafilatura import external

    if getattr(external, "JT_STOPLIST", ()) is None:  # a one-time cost (~0.8 s), not the page's
        external.jt_stoplist_init()
    sign_page(fingerprinter, "", None, _page(f"<p>{_WORDS * 10}</p>"), max_bytes=SIZES["cap"])
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
