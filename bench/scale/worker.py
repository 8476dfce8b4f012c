"""One measuring process: ``python -m bench.scale.worker SPEC.json``.

Opens the filled database with ``FingerprintStore.open_existing``, warms up, prints
"ready", waits for a line on stdin ("go"), runs, prints one JSON line. ``kind``:
``check`` (``check_and_add`` of each page), ``near`` (``near()`` of each fingerprint) or
``bulk`` (``add_many`` of all pages in batches). Pages come pickled from the parent as
``(url, fingerprint, text_length, sketch)``.
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from collections import Counter
from pathlib import Path

from simhash_filter.store import FingerprintStore, PageRow


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
    cpu0 = time.process_time()
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
    calls = len(latencies) if kind != "bulk" else len(pages)
    store.close()
    report = {"calls": calls, "elapsed": elapsed, "cpu": cpu, "kinds": dict(kinds)}
    print(json.dumps({**report, "latencies_ns": latencies}), flush=True)


if __name__ == "__main__":
    main()
