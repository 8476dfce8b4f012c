"""One measuring process: ``python -m bench.scale.worker SPEC.json``.

Opens the filled database with ``FingerprintStore.open_existing``, warms up, prints
"ready", waits for a line on stdin ("go"), runs, prints one JSON line. ``kind``:
``check`` (``check_and_add`` of each page), ``near`` (``near()`` of each fingerprint) or
``bulk`` (``add_many`` of all pages in batches). Pages come pickled from the parent as
``(url, fingerprint, text_length, sketch)``. The JSON line carries the latencies, the
CPU (user and system) and the process's I/O counters over the run.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections import Counter
from pathlib import Path

from simhash_filter.store import FingerprintStore, PageRow

IO_FIELDS = ("syscr", "syscw", "read_bytes", "write_bytes")


def io_counters() -> dict[str, int]:
    """This process's read/write system calls and bytes from storage (Linux
    ``/proc/self/io``; empty where there is none)."""
    try:
        lines = Path("/proc/self/io").read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split(":", 1) for line in lines)
    return {k: int(v) for k, v in pairs if k in IO_FIELDS}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    with open(spec["pages"], "rb") as fh:
        pages = pickle.load(fh)
    store = FingerprintStore.open_existing(spec["url"])
    kind, warmup = spec["kind"], spec.get("warmup", 20)
    kinds: Counter[str] = Counter()

    def check(page: tuple) -> None:
        url, fp, length, sketch = page
        kinds[store.check_and_add(url, fp, text_length=length, sketch=sketch).kind.value] += 1

    def near(page: tuple) -> None:
        kinds[str(min(len(store.near(page[1], sketch=page[3])), 2))] += 1

    call = check if kind == "check" else near
    if kind == "bulk":
        for page in pages[:warmup]:
            check(page)
        pages = pages[warmup:]
    else:
        for page in pages[:warmup]:
            call(page)
        pages = pages[warmup:]
        kinds.clear()
    print("ready", flush=True)
    sys.stdin.readline()
    latencies: list[int] = []
    cpu0, times0, io0 = time.process_time(), os.times(), io_counters()
    start = time.perf_counter()
    if kind == "bulk":
        batch = spec.get("batch_size", 1000)
        for s in range(0, len(pages), batch):
            t0 = time.perf_counter_ns()
            verdicts = store.add_many([PageRow(*p) for p in pages[s : s + batch]], batch_size=batch)
            latencies.append(time.perf_counter_ns() - t0)
            kinds.update(v.kind.value for v in verdicts)
            if time.perf_counter() > start + spec.get("seconds", 30):
                pages = pages[: s + batch]
                break
    else:
        deadline = start + spec.get("seconds", 30)
        for page in pages:
            t0 = time.perf_counter_ns()
            call(page)
            latencies.append(time.perf_counter_ns() - t0)
            if time.perf_counter() > deadline:
                break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    times1, io1 = os.times(), io_counters()
    calls = len(latencies) if kind != "bulk" else len(pages)
    store.close()
    report = {
        "calls": calls,
        "elapsed": elapsed,
        "cpu": cpu,
        "cpu_user": times1.user - times0.user,
        "cpu_system": times1.system - times0.system,
        "io": {k: io1[k] - io0.get(k, 0) for k in io1},
        "kinds": dict(kinds),
    }
    print(json.dumps({**report, "latencies_ns": latencies}), flush=True)


if __name__ == "__main__":
    main()
