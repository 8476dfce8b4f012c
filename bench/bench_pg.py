"""PostgreSQL write path benchmark: the project's check_and_add against a one-round-trip floor.

    .venv/bin/python -m bench.bench_pg             # ~7 min here
    .venv/bin/python -m bench.bench_pg --seconds 5 --procs 1,4

One run, one PostgreSQL server, one throw-away database holding ``--pages`` stored pages
(random fingerprints, loaded with ``add_many``), new random pages for every call:

- ``store``: ``FingerprintStore.check_and_add``, one page a call;
- ``store-batch16``: ``FingerprintStore.add_many`` of 16 pages a call (the pipeline's
  group commit);
- ``store-async``: as ``store``, opened with ``durable=False`` (``synchronous_commit=off``);
- ``store-generic``, ``store-generic-batch16``: the same calls through the store's generic
  SQLAlchemy path (what PostgreSQL used before store/pg.py), side by side in the same run;
- ``floor``: a minimal hand-written equivalent written here, one server-side PL/pgSQL
  function called once per page (one round trip, autocommit, a prepared statement with
  typed parameters): the same advisory locks, probe, decision and rows as the store. The
  run first replays a mixed stream (new, duplicate, unchanged, changed pages) through the
  store and through the function on two fresh databases and stops unless verdicts and
  table contents agree;
- ``floor-async``: the same with ``SET LOCAL synchronous_commit = off``;
- ``pgbench``: ``pgbench -N -M prepared`` (scale 1: 100k accounts) as a yardstick, when
  installed.

Each with 1, 2 and 4 processes (``--procs``), ``--seconds`` each, variants interleaved per
process count, ``--rounds`` times in alternating order (the median round is reported). Per
variant: pages/s (all processes), calls/s, client CPU per page (the worker processes' CPU
time), server CPU per page (utime + stime of the backends serving the benchmark database,
sampled from /proc every 50 ms), latency p50/p99 per call. Round trips and statements per
page come from a separate short run of one process through a counting TCP proxy (a round
trip: the client sends after having received; a statement: an Execute or Query message).
``near()`` p50/p99 and its round trips are measured on the same database.

Raw results go to ``bench/results/bench_pg-<time>.json``; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import selectors
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import ROOT, create_pg_database, drop_pg_database, machine, write_results

SPEC = "bench;random-fingerprints"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_U63 = 1 << 63
_U64 = 1 << 64

# --------------------------------------------------------------------------- the floor

FLOOR_SQL = r"""
CREATE OR REPLACE FUNCTION sf_bench_check(
    p_url text, p_domain text, p_fp int8, p_len int4,
    p_index_tables int2[], p_index_keys int8[],
    p_probe_tables int2[], p_probe_keys int8[],
    p_locks int8[], p_global int8, p_k int4, p_now timestamptz, p_async bool)
RETURNS TABLE(kind text, match_id int8, match_url text, match_fp int8, match_distance int4,
              previous int8)
LANGUAGE plpgsql AS $f$
DECLARE
    v_id int8;
    v_fp int8;
    v_mid int8;
    v_murl text;
    v_mfp int8;
    v_md int4;
BEGIN
    IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    PERFORM pg_advisory_xact_lock_shared(p_global);
    PERFORM count(pg_advisory_xact_lock(x)) FROM unnest(p_locks) WITH ORDINALITY AS u(x, i);
    SELECT id, fingerprint INTO v_id, v_fp FROM pages WHERE url = p_url;
    IF v_id IS NOT NULL AND bit_count((v_fp # p_fp)::bit(64)) <= p_k THEN
        UPDATE pages SET last_seen = p_now WHERE id = v_id;
        RETURN QUERY SELECT 'unchanged'::text, NULL::int8, NULL::text, NULL::int8,
                            NULL::int4, v_fp;
        RETURN;
    END IF;
    SELECT c.page_id, p.url, c.fingerprint, c.d INTO v_mid, v_murl, v_mfp, v_md
    FROM (SELECT DISTINCT b.page_id, b.fingerprint,
                 bit_count((b.fingerprint # p_fp)::bit(64))::int4 AS d
          FROM unnest(p_probe_tables, p_probe_keys) AS q(t, key)
          JOIN bands b ON b.table_no = q.t AND b.key = q.key
          WHERE b.page_id IS DISTINCT FROM v_id) AS c
    JOIN pages p ON p.id = c.page_id
    WHERE c.d <= p_k
    ORDER BY c.d, p.url COLLATE "C"
    LIMIT 1;
    IF v_mid IS NOT NULL THEN
        INSERT INTO duplicates (url, domain, fingerprint, duplicate_of, distance, seen_at)
        VALUES (p_url, p_domain, p_fp, v_mid, v_md, p_now);
        RETURN QUERY SELECT 'duplicate'::text, v_mid, v_murl, v_mfp, v_md, NULL::int8;
        RETURN;
    END IF;
    IF v_id IS NOT NULL THEN
        UPDATE pages SET fingerprint = p_fp, text_length = p_len, last_seen = p_now
        WHERE id = v_id;
        -- bands has no index on page_id: a scan, only ever taken by the equivalence replay
        DELETE FROM bands WHERE page_id = v_id;
        INSERT INTO bands (table_no, key, page_id, fingerprint)
        SELECT t, key, v_id, p_fp FROM unnest(p_index_tables, p_index_keys) AS q(t, key);
        RETURN QUERY SELECT 'changed'::text, NULL::int8, NULL::text, NULL::int8,
                            NULL::int4, v_fp;
        RETURN;
    END IF;
    INSERT INTO pages (url, domain, fingerprint, text_length, first_seen, last_seen)
    VALUES (p_url, p_domain, p_fp, p_len, p_now, p_now) RETURNING id INTO v_id;
    INSERT INTO bands (table_no, key, page_id, fingerprint)
    SELECT t, key, v_id, p_fp FROM unnest(p_index_tables, p_index_keys) AS q(t, key);
    RETURN QUERY SELECT 'new'::text, NULL::int8, NULL::text, NULL::int8, NULL::int4,
                        NULL::int8;
END
$f$;
"""

FLOOR_CALL = "SELECT * FROM sf_bench_check(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"


def signed(value: int) -> int:
    return value - _U64 if value >= _U63 else value


def unsigned(value: int | None) -> int | None:
    if value is None:
        return None
    return value + _U64 if value < 0 else value


class FloorClient:
    """One psycopg connection calling ``sf_bench_check`` once per page."""

    def __init__(self, conninfo: str, *, durable: bool = True) -> None:
        import psycopg
        from psycopg.types.numeric import Int2, Int4, Int8

        from simhash_filter.store import FingerprintStore

        self._int2, self._int4, self._int8 = Int2, Int4, Int8
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.durable = durable
        store = FingerprintStore.open_existing(sqlalchemy_url(conninfo))
        self.scheme = store.scheme
        store.close()

    def check(self, url: str, fingerprint: int, text_length: int) -> tuple[Any, ...]:
        from simhash_filter.store import canonical_url, url_domain
        from simhash_filter.store.locks import GLOBAL_LOCK, lock_ids

        Int2, Int4, Int8 = self._int2, self._int4, self._int8
        canonical = canonical_url(url)
        index_keys = self.scheme.index_keys(fingerprint)
        probe_keys = self.scheme.probe_keys(fingerprint)
        locks = lock_ids([(canonical, set(enumerate(index_keys)) | set(probe_keys))])
        row = self.conn.execute(
            FLOOR_CALL,
            (
                canonical,
                url_domain(canonical),
                Int8(signed(fingerprint)),
                Int4(text_length),
                [Int2(t) for t in range(len(index_keys))],
                [Int8(signed(key)) for key in index_keys],
                [Int2(t) for t, _ in probe_keys],
                [Int8(signed(key)) for _, key in probe_keys],
                [Int8(x) for x in locks],
                Int8(GLOBAL_LOCK),
                Int4(self.scheme.max_distance),
                datetime.now(UTC),
                not self.durable,
            ),
            prepare=True,
        ).fetchone()
        assert row is not None
        return tuple(row)

    def close(self) -> None:
        self.conn.close()


# --------------------------------------------------------------------------- databases


def sqlalchemy_url(conninfo: str) -> str:
    return conninfo.replace("postgresql://", "postgresql+psycopg://", 1)


def libpq_url(url: str) -> str:
    return re.sub(r"^postgresql\+\w+://", "postgresql://", url)


def database_name(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).database)


def install_floor(url: str) -> None:
    import psycopg

    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(FLOOR_SQL)  # type: ignore[arg-type]


def load_pages(url: str, pages: int, seed: int) -> float:
    """Make the index and store ``pages`` random pages with ``add_many``; seconds taken."""
    from simhash_filter.store import FingerprintStore

    rng = random.Random(seed)
    start = time.perf_counter()
    with FingerprintStore.open(url, spec=SPEC) as store:
        rows = ((f"http://stored.example/{i}", rng.getrandbits(64), 1000) for i in range(pages))
        store.add_many(rows, batch_size=5000)
    with psycopg_connect(url) as conn:
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - start


def psycopg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(libpq_url(url), autocommit=True)


# --------------------------------------------------------------------------- equivalence


def mixed_stream(seed: int, count: int) -> list[tuple[str, int, int]]:
    """Pages that hit every verdict: new pages, near copies of stored ones (DUPLICATE),
    re-crawls within k (UNCHANGED) and beyond it (CHANGED), some CHANGED into a copy."""
    rng = random.Random(seed)
    stream: list[tuple[str, int, int]] = []
    seen: list[tuple[str, int]] = []

    def flip(fp: int, bits: int) -> int:
        for bit in rng.sample(range(64), bits):
            fp ^= 1 << bit
        return fp

    for i in range(count):
        roll = rng.random()
        if not seen or roll < 0.35:
            url, fp = f"http://eq{i % 7}.example/p{i}", rng.getrandbits(64)
        elif roll < 0.6:  # a near copy under a new URL
            url, fp = f"http://copy.example/c{i}", flip(rng.choice(seen)[1], rng.randint(0, 4))
        elif roll < 0.8:  # a re-crawl within k
            url, old = rng.choice(seen)
            fp = flip(old, rng.randint(0, 4))
        elif roll < 0.9:  # a re-crawl beyond k
            url, old = rng.choice(seen)
            fp = flip(old, rng.randint(5, 20))
        else:  # a re-crawl that became a copy of another page
            url = rng.choice(seen)[0]
            fp = flip(rng.choice(seen)[1], rng.randint(0, 3))
        stream.append((url, fp, rng.randint(0, 5000)))
        seen.append((url, fp))
    return stream


def table_contents(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg_connect(url) as conn:
        return {
            "pages": conn.execute(
                "SELECT id, url, domain, fingerprint, text_length FROM pages ORDER BY id"
            ).fetchall(),
            "bands": conn.execute(
                "SELECT table_no, key, page_id, fingerprint FROM bands "
                "ORDER BY table_no, key, page_id"
            ).fetchall(),
            "duplicates": conn.execute(
                "SELECT id, url, domain, fingerprint, duplicate_of, distance FROM duplicates "
                "ORDER BY id"
            ).fetchall(),
        }


def check_floor_equivalence(count: int = 400) -> dict[str, Any]:
    """Replay one mixed stream through the store and through the floor function on two
    fresh databases; raise unless verdicts and rows agree."""
    from simhash_filter.store import FingerprintStore

    stream = mixed_stream(7, count)
    urls = [create_pg_database("sf_bench_eq"), create_pg_database("sf_bench_eq")]
    try:
        with FingerprintStore.open(urls[0], spec=SPEC) as store:
            expected = []
            for url, fp, length in stream:
                v = store.check_and_add(url, fp, text_length=length)
                m = v.duplicate_of
                expected.append(
                    (
                        v.kind.value,
                        m.page_id if m else None,
                        m.url if m else None,
                        m.fingerprint if m else None,
                        m.distance if m else None,
                        v.previous_fingerprint,
                    )
                )
        FingerprintStore.open(urls[1], spec=SPEC).close()
        install_floor(urls[1])
        floor = FloorClient(libpq_url(urls[1]))
        got = []
        for url, fp, length in stream:
            kind, mid, murl, mfp, md, prev = floor.check(url, fp, length)
            got.append((kind, mid, murl, unsigned(mfp), md, unsigned(prev)))
        floor.close()
        kinds: dict[str, int] = {}
        for verdict in expected:
            kinds[verdict[0]] = kinds.get(verdict[0], 0) + 1
        bad = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        if bad:
            i = bad[0]
            raise SystemExit(
                f"floor disagrees with the store at call {i}: {stream[i]} -> "
                f"store {expected[i]}, floor {got[i]}"
            )
        a, b = table_contents(urls[0]), table_contents(urls[1])
        for table in a:
            if a[table] != b[table]:
                raise SystemExit(f"floor and store rows differ in {table}")
        return {"calls": count, "verdicts": kinds, "rows": {t: len(r) for t, r in a.items()}}
    finally:
        for url in urls:
            drop_pg_database(url)


# --------------------------------------------------------------------------- workers


def worker_main(spec: dict[str, Any]) -> None:
    """One benchmark process: warm up, say "ready", wait for "go", run, print JSON."""
    kind, url, seconds = spec["kind"], spec["url"], spec["seconds"]
    calls_limit = spec.get("calls")
    rng = random.Random(spec["seed"])
    prefix = f"http://w{spec['seed']}.new.example/"
    counter = iter(range(10**9))

    def new_row() -> tuple[str, int, int]:
        return f"{prefix}{next(counter)}", rng.getrandbits(64), 1000

    call: Callable[[], int]
    closer: Callable[[], None]
    if kind.startswith("floor"):
        floor = FloorClient(libpq_url(url), durable=kind == "floor")

        def call() -> int:
            floor.check(*new_row())
            return 1

        closer = floor.close
    else:
        from simhash_filter.store import FingerprintStore

        if kind == "store-async":
            store = FingerprintStore.open(url, spec=SPEC, create=False, durable=False)
        else:
            store = FingerprintStore.open_existing(url)
        if "-generic" in kind:
            store._pg = None  # the SQLAlchemy path (statements.py), as before store/pg.py
        if kind.endswith("batch16"):

            def call() -> int:
                store.add_many([new_row() for _ in range(16)], batch_size=16)
                return 16

        elif kind.startswith("near"):

            def call() -> int:
                store.near(rng.getrandbits(64))
                return 1

        else:

            def call() -> int:
                url_, fp, length = new_row()
                store.check_and_add(url_, fp, text_length=length)
                return 1

        closer = store.close

    for _ in range(spec.get("warmup", 30)):
        call()
    print("ready", flush=True)
    sys.stdin.readline()
    latencies: list[int] = []
    pages = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        t0 = time.perf_counter_ns()
        pages += call()
        latencies.append(time.perf_counter_ns() - t0)
        if calls_limit is not None:
            if len(latencies) >= calls_limit:
                break
        elif time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    closer()
    print(
        json.dumps(
            {
                "pages": pages,
                "calls": len(latencies),
                "elapsed": elapsed,
                "cpu": cpu,
                "latencies_ns": latencies,
            }
        ),
        flush=True,
    )


@dataclass
class Cell:
    """One variant at one process count."""

    variant: str
    procs: int
    pages: int = 0
    calls: int = 0
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def row(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "procs": self.procs,
            "pages": self.pages,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "pages_per_s": round(self.rate, 1),
            "calls_per_s": round(self.calls / self.seconds, 1) if self.seconds else 0.0,
            "client_cpu_ms_per_page": round(1000 * self.client_cpu / max(1, self.pages), 3),
            "server_cpu_ms_per_page": round(1000 * self.server_cpu / max(1, self.pages), 3),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            **self.extra,
        }


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- server CPU


def _backend_pids(database: str) -> list[int]:
    """Backends serving ``database`` (from their process titles)."""
    pids = []
    needle = f" {database} ".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                title = f.read()
        except OSError:
            continue
        if title.startswith(b"postgres: ") and needle in title:
            pids.append(int(entry.name))
    return pids


def _cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


class BackendCpu:
    """CPU time of the backends of one database over a window, sampled every 50 ms (a
    backend that exits loses at most its last 50 ms; one that starts counts whole)."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = False

    def _sample(self) -> None:
        for pid in _backend_pids(self.database):
            cpu = _cpu_seconds(pid)
            if cpu is None:
                continue
            if pid not in self.first:
                self.first[pid] = cpu if not self._started else 0.0
            self.last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> BackendCpu:
        self._sample()
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


# --------------------------------------------------------------------------- runs


def start_workers(specs: list[dict[str, Any]]) -> list[subprocess.Popen[str]]:
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.bench_pg", "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for spec in specs
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            _, err = proc.communicate(timeout=60)
            raise RuntimeError(f"worker failed: {line} {err[-3000:]}")
    return procs


def finish_workers(procs: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed: {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def go(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def run_python_cell(
    variant: str, url: str, database: str, n_procs: int, seconds: float, seed: int
) -> Cell:
    specs = [
        {"kind": variant, "url": url, "seconds": seconds, "seed": seed + w} for w in range(n_procs)
    ]
    procs = start_workers(specs)
    with BackendCpu(database) as server:
        go(procs)
        reports = finish_workers(procs)
    latencies = [ns / 1e6 for r in reports for ns in r["latencies_ns"]]
    return Cell(
        variant=variant,
        procs=n_procs,
        pages=sum(r["pages"] for r in reports),
        calls=sum(r["calls"] for r in reports),
        seconds=max(r["elapsed"] for r in reports),
        client_cpu=sum(r["cpu"] for r in reports),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


def pgbench_binary() -> str | None:
    return shutil.which("pgbench")


def pgbench_args(url: str) -> list[str]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    args = ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres"]
    return [*args, u.database or "postgres"]


def pgbench_env(url: str) -> dict[str, str]:
    from sqlalchemy.engine import make_url

    env = dict(os.environ)
    password = make_url(url).password
    if password:
        env["PGPASSWORD"] = str(password)
    return env


def run_pgbench_cell(binary: str, url: str, database: str, n_procs: int, seconds: float) -> Cell:
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            binary, "-N", "-M", "prepared", "-n", "-c", str(n_procs), "-j", str(min(n_procs, 2)),
            "-T", str(max(1, round(seconds))), "--log", f"--log-prefix={tmp}/pgb",
            *pgbench_args(url),
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with BackendCpu(database) as server:
            result = subprocess.run(
                args, capture_output=True, text=True, env=pgbench_env(url), timeout=600
            )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            raise RuntimeError(result.stderr[-2000:])
        latencies: list[float] = []
        for path in Path(tmp).glob("pgb*"):
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3:
                    latencies.append(int(parts[2]) / 1000)
    done = re.search(r"number of transactions actually processed: (\d+)", result.stdout)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", result.stdout)
    pages = int(done.group(1)) if done else len(latencies)
    rate = float(tps.group(1)) if tps else 0.0
    return Cell(
        variant="pgbench -N",
        procs=n_procs,
        pages=pages,
        calls=pages,
        seconds=pages / rate if rate else seconds,
        client_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        server_cpu=server.seconds,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
    )


# --------------------------------------------------------------------------- round trips


class CountingProxy:
    """A TCP proxy in front of PostgreSQL that counts, over all its connections, round
    trips (the client sends after having received) and statements (Execute and Query
    messages of the frontend protocol; the server must not use SSL)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.round_trips = 0
        self.statements = 0
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.round_trips, self.statements

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, None)
        peers: dict[socket.socket, tuple[socket.socket, dict[str, Any], bool]] = {}
        while not self._stop:
            for key, _ in sel.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    server = socket.create_connection(self.target)
                    for s in (client, server):
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    state: dict[str, Any] = {"last": "server", "buf": b"", "started": False}
                    peers[client] = (server, state, True)
                    peers[server] = (client, state, False)
                    sel.register(client, selectors.EVENT_READ, None)
                    sel.register(server, selectors.EVENT_READ, None)
                    continue
                if sock not in peers:  # closed with its peer earlier in this round
                    continue
                other, state, from_client = peers[sock]
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for s in (sock, other):
                        sel.unregister(s)
                        s.close()
                        peers.pop(s, None)
                    continue
                with self._lock:
                    if from_client:
                        if state["last"] == "server":
                            self.round_trips += 1
                        state["last"] = "client"
                        self.statements += self._parse(state, data)
                    else:
                        state["last"] = "server"
                other.sendall(data)

    @staticmethod
    def _parse(state: dict[str, Any], data: bytes) -> int:
        buf = state["buf"] + data
        count = 0
        while True:
            if not state["started"]:  # untyped: SSL/GSS requests, then the startup message
                if len(buf) < 8:
                    break
                length, code = struct.unpack("!ii", buf[:8])
                if len(buf) < length:
                    break
                buf = buf[length:]
                if code not in (80877103, 80877104, 80877102):
                    state["started"] = True
                continue
            if len(buf) < 5:
                break
            kind = buf[:1]
            (length,) = struct.unpack("!i", buf[1:5])
            if len(buf) < 1 + length:
                break
            if kind in (b"E", b"Q"):
                count += 1
            buf = buf[1 + length :]
        state["buf"] = buf
        return count

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.listener.close()


def count_round_trips(variant: str, url: str, calls: int, seed: int) -> dict[str, float]:
    """Round trips and statements per page of one worker, through the counting proxy."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        spec = {"kind": variant, "url": proxied, "seconds": 0, "calls": calls, "seed": seed}
        procs = start_workers([spec])
        rt0, st0 = proxy.snapshot()
        go(procs)
        (report,) = finish_workers(procs)
        time.sleep(0.2)  # let the proxy pass on the close
        rt1, st1 = proxy.snapshot()
    finally:
        proxy.close()
    pages = report["pages"]
    return {
        "round_trips_per_page": round((rt1 - rt0) / pages, 3),
        "statements_per_page": round((st1 - st0) / pages, 3),
    }


def count_pgbench_round_trips(binary: str, url: str, transactions: int) -> dict[str, float]:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    proxy = CountingProxy((u.host or "127.0.0.1", u.port or 5432))
    try:
        proxied = u.set(port=proxy.port).render_as_string(hide_password=False)
        subprocess.run(
            [
                binary,
                "-N",
                "-M",
                "prepared",
                "-n",
                "-c",
                "1",
                "-t",
                str(transactions),
                *pgbench_args(proxied),
            ],
            capture_output=True,
            check=True,
            env=pgbench_env(url),
            timeout=300,
        )
        time.sleep(0.2)
        rt, st = proxy.snapshot()
    finally:
        proxy.close()
    # the connection set-up's few round trips are included (< 0.01 per transaction)
    return {
        "round_trips_per_page": round(rt / transactions, 3),
        "statements_per_page": round(st / transactions, 3),
    }


def measure_near(kind: str, url: str, database: str, calls: int) -> dict[str, Any]:
    """near() latency of one process at the stored pages, and its round trips."""
    spec = {"kind": kind, "url": url, "seconds": 0, "calls": calls, "seed": 77}
    procs = start_workers([spec])
    with BackendCpu(database) as server:
        go(procs)
        (report,) = finish_workers(procs)
    latencies = [ns / 1e6 for ns in report["latencies_ns"]]
    return {
        "calls": report["calls"],
        "p50_ms": round(percentile(latencies, 0.5), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "client_cpu_ms_per_call": round(1000 * report["cpu"] / report["calls"], 3),
        "server_cpu_ms_per_call": round(1000 * server.seconds / report["calls"], 3),
        **count_round_trips(kind, url, 200, seed=78),
    }


# --------------------------------------------------------------------------- main


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def markdown(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| variant | procs | pages/s | calls/s | round trips / page | statements / page "
        "| client CPU / page | server CPU / page | p50 | p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        rt = c.get("round_trips_per_page")
        st = c.get("statements_per_page")
        lines.append(
            f"| {c['variant']} | {c['procs']} | {c['pages_per_s']:,.0f} | "
            f"{c['calls_per_s']:,.0f} | {'' if rt is None else rt} | "
            f"{'' if st is None else st} | {c['client_cpu_ms_per_page']:.2f} ms | "
            f"{c['server_cpu_ms_per_page']:.2f} ms | {c['p50_ms']:.2f} ms | "
            f"{c['p99_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pages", type=int, default=100_000, help="stored pages (100000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per cell (10)")
    parser.add_argument("--procs", default="1,2,4", help="process counts (1,2,4)")
    parser.add_argument(
        "--variants",
        default="store,store-generic,store-batch16,store-generic-batch16,store-async,floor,"
        "floor-async,pgbench",
        help="which variants, in this order within each process count",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every cell this many times (in alternating order) and report the "
        "median round (1)",
    )
    parser.add_argument("--near", type=int, default=2000, help="near() calls to time (2000)")
    parser.add_argument("--label", default="", help="a word stored with the results")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(json.loads(args.worker))
        return 0

    variants = [v for v in args.variants.split(",") if v]
    procs = [int(p) for p in args.procs.split(",")]
    pgbench = pgbench_binary() if "pgbench" in variants else None
    if "pgbench" in variants and pgbench is None:
        log("pgbench is not installed: skipping it (apt-get install postgresql-contrib)")
    results: dict[str, Any] = {
        "label": args.label,
        "machine_at_start": machine(),
        "pages": args.pages,
        "seconds_per_cell": args.seconds,
        "cells": [],
    }
    log("checking the floor function against the store on a mixed stream")
    results["floor_equivalence"] = check_floor_equivalence()
    log(f"floor equivalence: {results['floor_equivalence']}")
    url = create_pg_database("sf_bench_pg")
    pg_url = create_pg_database("sf_bench_pgbench") if pgbench is not None else ""
    try:
        bench_db = database_name(url)
        log(f"loading {args.pages:,} pages into {bench_db}")
        results["load_seconds"] = round(load_pages(url, args.pages, seed=1), 1)
        install_floor(url)
        with psycopg_connect(url) as conn:
            results["server"] = conn.execute("SELECT version()").fetchone()[0]
            results["server_settings"] = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]
                for name in ("synchronous_commit", "fsync", "shared_buffers", "wal_level")
            }
        if pgbench is not None:
            subprocess.run(
                [pgbench, "-i", "-s", "1", "-q", *pgbench_args(pg_url)],
                capture_output=True,
                check=True,
                env=pgbench_env(pg_url),
                timeout=300,
            )
        round_trips: dict[str, dict[str, float]] = {}
        for variant in variants:
            if variant == "pgbench":
                if pgbench is not None:
                    round_trips[variant] = count_pgbench_round_trips(pgbench, pg_url, 500)
            else:
                round_trips[variant] = count_round_trips(variant, url, 200, seed=900)
            log(f"round trips {variant}: {round_trips.get(variant)}")
        seed = 1000
        measured: dict[tuple[str, int], list[Cell]] = {}
        for round_no in range(args.rounds):
            order = variants if round_no % 2 == 0 else variants[::-1]
            for n in procs:
                for variant in order:
                    if variant == "pgbench":
                        if pgbench is None:
                            continue
                        cell = run_pgbench_cell(
                            pgbench, pg_url, database_name(pg_url), n, args.seconds
                        )
                    else:
                        cell = run_python_cell(variant, url, bench_db, n, args.seconds, seed)
                    seed += 100
                    measured.setdefault((variant, n), []).append(cell)
                    log(
                        f"{variant} x{n}: {cell.rate:,.0f} pages/s, client "
                        f"{1000 * cell.client_cpu / max(1, cell.pages):.3f} ms, server "
                        f"{1000 * cell.server_cpu / max(1, cell.pages):.3f} ms, "
                        f"p50 {cell.p50_ms:.3f} ms"
                    )
        for n in procs:
            for variant in variants:
                cells = sorted(measured.get((variant, n), []), key=lambda c: c.rate)
                if not cells:
                    continue
                cell = cells[(len(cells) - 1) // 2]  # the median round (the lower of two)
                cell.extra.update(round_trips.get(variant, {}))
                row = cell.row()
                row["pages_per_s_each_round"] = [round(c.rate, 1) for c in cells]
                results["cells"].append(row)
        if args.near:
            results["near"] = {}
            for kind in ("near", "near-generic"):
                results["near"][kind] = measure_near(kind, url, bench_db, args.near)
                log(f"{kind}: {results['near'][kind]}")
        with psycopg_connect(url) as conn:
            results["pages_at_end"] = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    finally:
        if not args.keep:
            for db in (url, pg_url):
                if db:
                    drop_pg_database(db)
    print(markdown(results["cells"]))
    log(f"raw results: {write_results('bench_pg', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
