"""Where a crawl process's memory is (issue 45), without tracemalloc's cost: the big
containers held by attributes of the crawl's objects (simhash_filter's and Scrapy's), by
size; live objects by type (gc); glibc's heap (in use and free) and SQLite's own memory.

Used by :mod:`bench.bench_crawl_scale` (``SCALE_SNAPSHOT_AT``): one JSON file per snapshot.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import time
import types
from collections import Counter
from typing import Any

_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
_MIN_LEN = 500  # containers shorter than this are not measured


def deep_size(obj: Any, seen: set[int], depth: int = 0) -> int:
    """Bytes of ``obj`` and what it holds (containers, instances' dicts and slots), each
    object once (``seen``), to a depth of 6; types, modules and functions not counted."""
    if id(obj) in seen or isinstance(obj, _OPAQUE) or depth > 6:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj, 0)
    if isinstance(obj, dict):
        items: Any = [x for kv in obj.items() for x in kv]
    elif isinstance(obj, list | tuple | set | frozenset) or type(obj).__name__ == "deque":
        items = obj
    elif type(obj).__name__ in ("WeakKeyDictionary", "WeakValueDictionary"):
        items = [obj.data]
    else:
        items = []
        if hasattr(obj, "__dict__"):
            items.append(vars(obj))
        for slot in getattr(type(obj), "__slots__", ()):
            value = getattr(obj, slot, None)
            if value is not None:
                items.append(value)
    return size + sum(deep_size(item, seen, depth + 1) for item in items)


def _containers(obj: Any) -> list[tuple[str, Any]]:
    found = []
    names = list(vars(obj)) if hasattr(obj, "__dict__") else []
    names += list(getattr(type(obj), "__slots__", ()))
    for name in names:
        value = getattr(obj, name, None)
        try:
            n = len(value)  # type: ignore[arg-type]
        except TypeError:
            continue
        if n >= _MIN_LEN and not isinstance(value, str | bytes):
            found.append((name, value))
    return found


def big_containers(top: int = 40) -> list[dict[str, Any]]:
    """The largest containers held by an attribute of an object of simhash_filter, Scrapy,
    Twisted or the bench: owner class, attribute, length, deep size."""
    rows = []
    for obj in gc.get_objects():
        module = getattr(type(obj), "__module__", "")
        if not isinstance(module, str) or not module.startswith(
            ("simhash_filter", "scrapy", "twisted", "bench", "crawler")
        ):
            continue
        if isinstance(obj, _OPAQUE):
            continue
        try:
            held = _containers(obj)
        except Exception:  # a property that fails: not ours to measure
            continue
        for name, value in held:
            size = deep_size(value, set())
            rows.append(
                {"owner": f"{module}.{type(obj).__qualname__}", "attr": name,
                 "len": len(value), "bytes": size}
            )  # fmt: skip
    rows.sort(key=lambda row: -row["bytes"])
    return rows[:top]


def malloc_info() -> dict[str, int]:
    """glibc's mallinfo2: heap bytes in use, free (held, not returned), mmapped."""

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost",
            )
        ]  # fmt: skip

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {"arena": info.arena, "in_use": info.uordblks, "free": info.fordblks,
            "mmapped": info.hblkhd}  # fmt: skip


def sqlite_memory() -> int:
    """Bytes SQLite's allocator holds in this process (page caches, statements)."""
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        return int(lib.sqlite3_memory_used())
    except OSError:
        return -1


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pending_tasks(top: int = 15) -> dict[str, int]:
    """The asyncio tasks alive, by the coroutine each runs and the one it awaits (a task a
    pending request or page holds shows here)."""
    import asyncio

    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running loop (a crawl on another reactor)
        return {}
    names: Counter[str] = Counter()
    for task in tasks:
        stack = task.get_stack(limit=3)
        names[" < ".join(frame.f_code.co_qualname for frame in reversed(stack))] += 1
    return dict(names.most_common(top))


def done_tasks(sample: int = 200, top: int = 10) -> dict[str, int]:
    """Finished asyncio tasks still referenced, by their coroutine's name and what refers to
    them (a sample): what keeps them alive."""
    import asyncio

    tasks = [obj for obj in gc.get_objects() if isinstance(obj, asyncio.Task) and obj.done()]
    names: Counter[str] = Counter()
    for task in tasks[:sample]:
        coro = task.get_coro()
        referrers = [type(r).__qualname__ for r in gc.get_referrers(task) if r is not tasks]
        names[f"{getattr(coro, '__qualname__', '?')} <- {','.join(sorted(referrers))}"] += 1
    return {"done": len(tasks), **dict(names.most_common(top))}


def engine_pools() -> list[str]:
    """Each SQLAlchemy engine's pool status (connections held: each SQLite connection has
    a page cache of its own)."""
    from sqlalchemy.engine import Engine

    return [
        f"{obj.url.render_as_string(hide_password=True)}: {obj.pool.status()}"
        for obj in gc.get_objects()
        if isinstance(obj, Engine)
    ]


def pymalloc_stats() -> dict[str, int]:
    """CPython's small-object allocator (``sys._debugmallocstats``, written to fd 2 in C):
    its 1 MiB arenas mapped now, and the bytes of them in live objects and in free blocks
    and pools (an arena is unmapped only once every block in it is free)."""
    import os
    import tempfile

    wanted = {
        "# arenas allocated current": "arenas",
        "# bytes in allocated blocks": "allocated",
        "# bytes in available blocks": "available",
        "# bytes in unused pools": "unused_pools",
        "# bytes lost to pool headers": "pool_headers",
        "# bytes lost to quantization": "quantization",
        "# bytes lost to arena alignment": "alignment",
    }
    with tempfile.TemporaryFile("w+") as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = {}
        for line in out:
            name, _, value = line.rpartition("=")
            key = wanted.get(name.strip())
            if key:
                found[key] = int(value.strip().replace(",", ""))
    return found


def mappings() -> dict[str, int]:
    """The process's resident KiB by kind of mapping (``/proc/self/smaps``): the C heap,
    anonymous mappings (thread arenas, pymalloc's arenas, numpy's buffers, thread stacks),
    shared libraries and other files, and the largest anonymous ones."""
    kinds: Counter[str] = Counter()
    anonymous: list[int] = []
    name, rss = "", 0
    try:
        with open("/proc/self/smaps") as smaps:
            lines = smaps.read().splitlines()
    except OSError:
        return {}
    for line in [*lines, "0-0 ---p 0 0:0 0"]:
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            if name == "[heap]":
                kinds["heap"] += rss
            elif name == "":
                kinds["anonymous"] += rss
                anonymous.append(rss)
            elif name.startswith("["):
                kinds["other"] += rss
            else:
                kinds["so" if ".so" in name else "file"] += rss
            name, rss = (head[5] if len(head) > 5 else ""), 0
        elif head and head[0] == "Rss:":
            rss = int(head[1])
    anonymous.sort(reverse=True)
    return {**kinds, **{f"anon_top{n}": kib for n, kib in enumerate(anonymous[:8])}}


def probe(trim: bool = False) -> dict[str, Any]:
    """Everything above, for one snapshot; with ``trim``, then glibc's ``malloc_trim(0)``
    (the free heap given back) and the RSS after it."""
    counts = Counter(type(obj).__qualname__ for obj in gc.get_objects())
    started = time.perf_counter()
    gc.collect()
    found = {
        "gc_objects": sum(counts.values()),
        "gc_full_ms": 1000 * (time.perf_counter() - started),
        "gc_stats": gc.get_stats(),
        "types": dict(counts.most_common(60)),
        "tasks": pending_tasks(),
        "done_tasks": done_tasks(),
        "pools": engine_pools(),
        "containers": big_containers(),
        "malloc": malloc_info(),
        "sqlite_bytes": sqlite_memory(),
        "pymalloc": pymalloc_stats(),
        "mappings_kib": mappings(),
    }
    if trim:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.malloc_trim(0)
        found["rss_kib_trimmed"] = _rss_kib()
        found["malloc_trimmed"] = malloc_info()
        found["mappings_kib_trimmed"] = mappings()
    return found
