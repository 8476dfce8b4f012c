"""CPU seconds a hostile page costs: a fuzz corpus of page kinds, each at 10 KB, 100 KB, 1 MB
and the ``MAX_BYTES`` cap, through ``extract_page`` + ``sign`` (``pagework.sign_page``, the
work a page worker or the thread path does) and through a real crawl.

    .venv/bin/python -m bench.bench_hostile                  # every kind, every size
    .venv/bin/python -m bench.bench_hostile --kinds headings --sizes 1MB
    .venv/bin/python -m bench.bench_hostile --crawl-paths    # no crawls: the page work only

Each page runs in a fresh child process (so one page's memory or caches do not help the next)
under a CPU budget (``--budget`` seconds, ``RLIMIT_CPU``: a page past it is reported as
"> budget"). While the page is signed in a thread, the child's main thread ticks every 10 ms,
as the crawl's reactor would: the longest gap between two ticks is the page's stall of the
thread path (``SIMHASH_FILTER_WORKERS = 0``). Reported: CPU seconds, CPU seconds a MB, the
growth from 100 KB to 1 MB, and the longest stall; raw results in ``bench/results/``.

Through a real crawl (:func:`crawl_costs`): one ``scrapy crawl site`` of the project (its
spider, the SQLite store, the add-on's defaults) a path, the page workers
(``SIMHASH_FILTER_WORKERS = 1``) and the thread path (``0``), over a loopback site that
answers one request at a time when told to (:class:`GatedSite`). A few warm-up pages come
first; then every page's response is released when the crawl is done with the one before
(its item scraped or dropped, as the crawl reports on stdout through :class:`PageDone`, and
the crawl's CPU still), so the CPU the crawl process and its workers spend in between (from
``/proc``: the crawl's own, its reaped children's and its live workers') is that page's:
download, the spider's parse and link extraction, the page work, the store. Reported a page:
that CPU minus the median of a few empty pages' in the same crawl (what any page costs),
averaged over ``COPIES`` copies of the page (10 KB pages are near the kernel's 10 ms
CPU-time tick).

The kinds (``crawler.testsite.hostile.KINDS``) are also the fuzz corpus of
``tests/test_hostile.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench._common import ROOT, descendants, machine, write_results
from crawler.testsite.hostile import KINDS, WORDS, hostile_page, html_page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "cap": 2 * 1024 * 1024}
"""Page sizes in bytes (UTF-8); ``cap`` is the default ``SIMHASH_FILTER_MAX_BYTES``."""


def measure_one(kind: str, size: int) -> dict[str, float | int | None]:
    """Sign one page in a thread while this thread ticks: CPU seconds, longest stall."""
    from simhash_filter.core.fingerprint import Fingerprinter
    from simhash_filter.page.work import sign_page

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


# -- through a real crawl -------------------------------------------------------------------

CRAWL_PATHS = {"workers": 1, "threads": 0}
"""``SIMHASH_FILTER_WORKERS`` of each crawl path."""
COPIES = {"10KB": 5, "100KB": 2, "1MB": 1, "cap": 1}
"""Copies of a page in the crawl (each at its own URL); the cost is their mean."""
EMPTY_PAGES = 8
WARM_UP_PAGES = 3
EMPTY_PAGE = b"<html><head><title>e</title></head><body><p>empty</p></body></html>"
PAGE_TIMEOUT_S = 300.0
"""Seconds a page may take through the crawl before the run is abandoned."""


class PageDone:
    """Crawl extension: prints ``done <url>`` on stdout when an item is scraped, dropped or
    failed, so the bench knows the crawl is done with a page."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDone:
        from scrapy import signals

        extension = cls()
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(extension.done, signal=signal)
        return extension

    def done(self, item: Any) -> None:
        url = item.get("url") if isinstance(item, dict) else getattr(item, "url", None)
        print(f"done {url}", flush=True)


class GatedSite:
    """A loopback site that answers a request only when told to (:meth:`answer`); the paths
    asked for wait in :attr:`asked`, in order."""

    def __init__(self, pages: Mapping[str, bytes]) -> None:
        self.pages = pages
        self.asked: queue.Queue[str] = queue.Queue()
        self._go: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._open = False
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                site._gate(self.path).wait()
                body = site.pages.get(self.path)
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _gate(self, path: str) -> threading.Event:
        with self._lock:
            event = self._go[path] = threading.Event()
            if self._open:
                event.set()
        self.asked.put(path)
        return event

    def open(self) -> None:
        """Answer every request from now on without waiting (the crawl's last links)."""
        with self._lock:
            self._open = True
            for event in self._go.values():
                event.set()

    def answer(self, path: str) -> None:
        with self._lock:
            self._go[path].set()

    @contextmanager
    def serving(self) -> Iterator[GatedSite]:
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.open()
            self._httpd.shutdown()
            self._httpd.server_close()


def _ticks(pid: int, *, children: bool) -> int:
    """utime + stime (+ cutime + cstime: reaped children) of ``pid``, in clock ticks."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    used = int(fields[11]) + int(fields[12])
    return used + (int(fields[13]) + int(fields[14]) if children else 0)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants."""
    ticks = _ticks(pid, children=True)
    ticks += sum(_ticks(child, children=False) for child in descendants(pid))
    return ticks / os.sysconf("SC_CLK_TCK")


def _settled(pid: int, *, quiet: int = 3, interval: float = 0.02, limit: float = 3.0) -> float:
    """The tree's CPU seconds once it has not moved for ``quiet`` polls (or after ``limit``)."""
    last, still = tree_cpu_seconds(pid), 0
    deadline = time.monotonic() + limit
    while still < quiet and time.monotonic() < deadline:
        time.sleep(interval)
        now = tree_cpu_seconds(pid)
        still = still + 1 if now == last else 0
        last = now
    return last


def crawl_pages(kinds: list[str], sizes: list[str]) -> dict[str, bytes]:
    """The site: ``/`` linking to the others in the order they are crawled: ``/warm-up/<n>``
    (the one-time costs of the first pages: imports, stop lists, jieba), half of the
    ``/empty/<n>`` pages, ``/p/<kind>/<size>/<copy>``, the other empty pages."""
    pages: dict[str, bytes] = {}
    for n in range(WARM_UP_PAGES):
        pages[f"/warm-up/{n}"] = html_page(f"<p>{n} {WORDS * 10} 预热结巴分词的词典。</p>").encode()
    half = EMPTY_PAGES // 2
    for n in range(half):
        pages[f"/empty/{n}"] = EMPTY_PAGE
    for kind in kinds:
        for size in sizes:
            html = hostile_page(kind, SIZES[size])
            for copy in range(COPIES[size]):
                pages[f"/p/{kind}/{size}/{copy}"] = html
    for n in range(half, EMPTY_PAGES):
        pages[f"/empty/{n}"] = EMPTY_PAGE
    links = "".join(f'<a href="{path}">{path}</a> ' for path in pages)
    pages["/"] = f"<html><body>{links}</body></html>".encode()
    return pages


def crawl_costs(pages: Mapping[str, bytes], workers: int, workdir: Path) -> dict[str, float]:
    """One ``scrapy crawl site`` over ``pages`` with ``SIMHASH_FILTER_WORKERS = workers``:
    the CPU seconds of each page (path), one page at a time."""
    from crawler.workers import crawl_command, project_env

    site = GatedSite(pages)
    db = workdir / f"hostile-{workers}.db"
    for suffix in ("", "-wal", "-shm", "-lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    settings = {
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": 1,
        "DEPTH_PRIORITY": 1,  # breadth-first: the links in the order of the start page's
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "EXTENSIONS": json.dumps({"bench.bench_hostile.PageDone": 500}),
        "SIMHASH_FILTER_WORKERS": workers,
        "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{db}",
    }
    costs: dict[str, float] = {}
    with site.serving(), tempfile.TemporaryFile("w+") as stderr:
        command = crawl_command(f"{site.base_url}/", settings)
        crawl = subprocess.Popen(
            command,
            cwd=workdir,
            env=project_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        done: queue.Queue[str] = queue.Queue()

        def read_done() -> None:
            assert crawl.stdout is not None
            for line in crawl.stdout:
                if line.startswith("done "):
                    done.put(line.split(" ", 1)[1].strip().removeprefix(site.base_url))

        threading.Thread(target=read_done, daemon=True).start()
        try:
            while len(costs) < len(pages):
                path = _next(site.asked, crawl)
                before = _settled(crawl.pid)
                site.answer(path)
                if path not in pages:  # a link of a hostile page: answered 404, no item
                    continue
                while _next(done, crawl) != path:
                    pass
                costs[path] = _settled(crawl.pid) - before
            site.open()  # links found on the pages (breadth-first: asked for last)
            crawl.wait(timeout=600)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            crawl.kill()
            crawl.wait()
            stderr.seek(0)
            raise SystemExit(f"{exc}:\n{stderr.read()[-3000:]}") from None
    return costs


def _next(waiting: queue.Queue[str], crawl: subprocess.Popen[str]) -> str:
    """The next entry of ``waiting``; RuntimeError when the crawl ends or stalls first."""
    deadline = time.monotonic() + PAGE_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            return waiting.get(timeout=1.0)
        except queue.Empty:
            if crawl.poll() is not None:
                raise RuntimeError(f"the crawl ended (exit {crawl.returncode})") from None
    raise RuntimeError(f"the crawl stalled for {PAGE_TIMEOUT_S:.0f} s")


def crawl_cells(
    kinds: list[str], sizes: list[str], paths: list[str]
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """path → kind → size → ``cpu_s`` (a page, beyond an empty page's) and ``raw_s``."""
    pages = crawl_pages(kinds, sizes)
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for path_name in paths:
            costs = crawl_costs(pages, CRAWL_PATHS[path_name], Path(workdir))
            empty = statistics.median(costs[f"/empty/{n}"] for n in range(EMPTY_PAGES))
            out[path_name] = {"empty": {"page": {"cpu_s": empty}}}
            for kind in kinds:
                out[path_name][kind] = {}
                for size in sizes:
                    raw = statistics.fmean(
                        costs[f"/p/{kind}/{size}/{c}"] for c in range(COPIES[size])
                    )
                    out[path_name][kind][size] = {
                        "cpu_s": raw - empty,
                        "raw_s": raw,
                        "bytes": len(pages[f"/p/{kind}/{size}/0"]),
                    }
            print(path_name, "empty page", f"{empty:.3f}", file=sys.stderr, flush=True)
    return out


def _cell(value: object, budget: int) -> str:
    return f"> {budget}" if value is None else f"{value:.3f}"


def _growth(small: object, big: object) -> str:
    if isinstance(small, float) and isinstance(big, float) and small > 0:
        return f"{big / small:.1f}×"
    return "—"


def _print_table(
    rows: Mapping[str, Mapping[str, Mapping[str, object]]],
    sizes: list[str],
    budget: int,
    *,
    stall: bool,
) -> None:
    header = [f"CPU s {s}" for s in sizes] + ["growth 100KB→1MB", "s/MB (max)"]
    if stall:
        header.append("stall s (max)")
    print("| kind | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for kind, by_size in rows.items():
        cpu = {s: by_size[s].get("cpu_s") for s in sizes if s in by_size}
        cells = [_cell(cpu.get(s), budget) for s in sizes]
        per_mb = [
            c / (int(by_size[s].get("bytes", SIZES[s])) / 1e6)  # type: ignore[call-overload]
            for s in ("1MB", "cap")
            if s in by_size and isinstance((c := by_size[s].get("cpu_s")), float)
        ]
        cells += [
            _growth(cpu.get("100KB"), cpu.get("1MB")),
            f"{max(per_mb):.2f}" if per_mb else "—",
        ]
        if stall:
            stalls = [v for r in by_size.values() if isinstance((v := r.get("stall_s")), float)]
            cells.append(f"{max(stalls):.2f}" if stalls else "—")
        print(f"| {kind} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--budget", type=int, default=120, help="CPU seconds a page at most")
    parser.add_argument(
        "--crawl-paths",
        nargs="*",
        default=list(CRAWL_PATHS),
        choices=list(CRAWL_PATHS),
        help="the crawls to run (none: the page work only)",
    )
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, dict[str, object]]] = {}
    for kind in args.kinds:
        rows[kind] = {}
        for size_name in args.sizes:
            rows[kind][size_name] = r = _child(kind, SIZES[size_name], args.budget)
            print(kind, size_name, r, file=sys.stderr, flush=True)
    crawls = crawl_cells(args.kinds, args.sizes, args.crawl_paths) if args.crawl_paths else {}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    print(f"command: .venv/bin/python -m bench.bench_hostile {' '.join(argv or sys.argv[1:])}")
    print()
    print("The page work (`extract_page` + `sign`), a fresh process a page:")
    print()
    _print_table(rows, args.sizes, args.budget, stall=True)
    for path_name, by_kind in crawls.items():
        empty = by_kind.pop("empty")["page"]["cpu_s"]
        print()
        print(
            f"Through a real crawl, {path_name} (SIMHASH_FILTER_WORKERS = "
            f"{CRAWL_PATHS[path_name]}): CPU a page beyond an empty page's ({empty:.3f} s):"
        )
        print()
        _print_table(by_kind, args.sizes, args.budget, stall=False)
    write_results("hostile", {"page_work": rows, "crawl": crawls})
    return 0


if __name__ == "__main__":
    sys.exit(main())
