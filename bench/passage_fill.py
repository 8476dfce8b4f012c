"""The texts ``bench_passage_index`` stores and the bulk fill that stores them (see that
module's doc): Markov chains trained on the data folder's real texts, batches made by
worker processes, written to SQLite and PostgreSQL side by side."""

from __future__ import annotations

import gzip
import itertools
import json
import multiprocessing
import random
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from multiprocessing.pool import AsyncResult
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, text

from bench._common import DATA_DIR
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.passage import text_terms
from simhash_filter.core.stored_text import pack_text, unpack_text
from simhash_filter.store import FingerprintStore, StoreOptions, passage_index
from simhash_filter.store.encoding import to_sql_int
from simhash_filter.store.schema import page_texts_table, pages_table

BATCH = 5000


class Chain:
    """A first-order Markov chain over tokens (words or characters), sampled with numpy."""

    def __init__(self, sequences: list[list[str]], joiner: str) -> None:
        vocab: dict[str, int] = {}
        follows: dict[int, list[int]] = defaultdict(list)
        for seq in sequences:
            ids = [vocab.setdefault(t, len(vocab)) for t in seq]
            for a, b in itertools.pairwise(ids):
                follows[a].append(b)
        self.tokens = np.array(list(vocab), dtype=object)
        self.joiner = joiner
        n = len(vocab)
        counts = np.array([len(follows.get(i, [])) for i in range(n)], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.counts = counts
        self.next = np.array([b for i in range(n) for b in follows.get(i, [])], dtype=np.int64)
        self.starts = np.flatnonzero(counts > 0)

    def texts(self, count: int, length: int, rng: np.random.Generator) -> list[str]:
        cur = rng.choice(self.starts, size=count)
        out = np.empty((count, length), dtype=np.int64)
        for step in range(length):
            out[:, step] = cur
            dead = self.counts[cur] == 0
            cur = np.where(dead, rng.choice(self.starts, size=count), cur)
            pick = (rng.random(count) * self.counts[cur]).astype(np.int64)
            cur = self.next[self.offsets[cur] + pick]
        return [self.joiner.join(row) for row in self.tokens[out]]


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def chains() -> tuple[Chain, Chain]:
    truth = json.loads((DATA_DIR / "pages_en" / "ground-truth.json").read_text())
    english = [str(page["articleBody"]) for page in truth.values()]
    newest: dict[str, tuple[int, str]] = {}
    for doc in _jsonl(DATA_DIR / "neardup_peps_en" / "docs.jsonl.gz"):
        key, version = str(doc["doc_key"]), int(doc["version_index"])  # type: ignore[call-overload]
        if key not in newest or version > newest[key][0]:
            newest[key] = (version, str(doc["text"]))
    english += [t for _, t in newest.values()]
    chinese = [p.read_text(errors="replace") for p in (DATA_DIR / "pages_zh" / "cleaned").iterdir()]
    for doc in _jsonl(DATA_DIR / "haystack_multilingual" / "docs.jsonl.gz"):
        if doc["lang"] == "en":
            english.append(str(doc["text"]))
        elif str(doc["lang"]).startswith("zh"):
            chinese.append(str(doc["text"]))
    en = Chain([t.split() for t in english], " ")
    zh = Chain([list(" ".join(t.split())) for t in chinese], "")
    return en, zh


def make_texts(en: Chain, zh: Chain, count: int, chars: int, seed: int) -> list[tuple[str, str]]:
    """(language, text) pairs."""
    rng = np.random.default_rng(seed)
    n_zh = count // 3
    english = en.texts(count - n_zh, chars // 6, rng)  # ~6 characters a word with its space
    chinese = zh.texts(n_zh, chars, rng)
    mixed = [("en", t) for t in english] + [("zh", t) for t in chinese]
    order = rng.permutation(count)
    return [mixed[i] for i in order]


Made = list[tuple[str, str, bytes, list[str], str]]
_CHAINS: tuple[Chain, Chain] | None = None
"""A fill worker's chains (set in the worker process only: :func:`_worker`)."""


def _worker(chains_: tuple[Chain, Chain]) -> None:
    global _CHAINS
    _CHAINS = chains_


def _made(first: int, count: int, chars: int) -> Made:
    """A batch made in a worker: (language, text, stored blob, the index's terms, the same
    as ``tsvector`` text), the blob and terms cut as the write path cuts them (``pack_text``,
    ``text_terms``)."""
    assert _CHAINS is not None
    made: Made = []
    for lang, body in make_texts(*_CHAINS, count, chars, seed=first + 7):
        terms = text_terms(body)
        made.append((lang, body, pack_text(body), terms, " ".join(map(_lexeme, terms))))
    return made


class Target:
    """One database the fill writes the same batches to; ``pages`` its stored texts."""

    def __init__(self, url: str) -> None:
        self.url = url
        with FingerprintStore.open(url, StoreOptions(spec=Fingerprinter().spec)):
            pass
        self.engine = create_engine(url)
        self.dialect = self.engine.dialect.name
        self.seconds = 0.0
        with self.engine.connect() as conn:  # (an existing database: grown from its size)
            self.pages = int(conn.execute(text("SELECT COALESCE(MAX(id), 0) FROM pages")).one()[0])
        self.built = False

    def begin(self) -> None:
        """Before a run of batches: an empty PostgreSQL table's GIN index dropped (built
        after, in one go); a filled one's kept, the batches' entries going in through it (a
        single-process build over 1M rows took longest of all on a loaded machine)."""
        if self.dialect == "postgresql" and self.pages == 0:
            with self.engine.begin() as conn:
                conn.execute(text(f"DROP INDEX IF EXISTS {passage_index.TABLE}_terms"))
            self.built = True

    def sample(self) -> list[str]:
        """The query sample of the texts already stored (the first 20 of every batch)."""
        found: list[str] = []
        with self.engine.connect() as conn:
            for first in range(0, self.pages, BATCH):
                rows = conn.execute(
                    text("SELECT page_id, text FROM page_texts WHERE page_id BETWEEN :a AND :b"),
                    {"a": first + 1, "b": first + 20},
                )
                for page_id, blob in sorted(rows):
                    body = unpack_text(bytes(blob)).text
                    lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in body[:50]) else "en"
                    found.append(f"{page_id}\t{lang}\t{body}")
        return found

    def write(self, first: int, made: Made) -> None:
        if first < self.pages:  # (a resumed fill: a batch this database has)
            return
        start = time.perf_counter()
        rng = random.Random(first)
        now = datetime.now(UTC)
        pages = [
            (first + i + 1, f"https://bench.example/{first + i + 1}", len(t))
            for i, (_, t, _, _, _) in enumerate(made)
        ]
        if self.dialect == "sqlite":
            with self.engine.begin() as conn:
                conn.execute(
                    pages_table.insert(),
                    [
                        {"id": i, "url": u, "domain": "bench.example",
                         "fingerprint": rng.getrandbits(64), "text_length": n,
                         "first_seen": now, "last_seen": now}
                        for i, u, n in pages
                    ],
                )  # fmt: skip
                passage_index.index_terms(
                    conn, {first + i + 1: terms for i, (_, _, _, terms, _) in enumerate(made)}
                )
                conn.execute(
                    page_texts_table.insert(),
                    [
                        {"page_id": first + i + 1, "text": b}
                        for i, (_, _, b, _, _) in enumerate(made)
                    ],
                )
        else:
            self._copy(pages, made, rng, now)
        self.seconds += time.perf_counter() - start
        self.pages = first + len(made)

    def _copy(
        self,
        pages: list[tuple[int, str, int]],
        made: Made,
        rng: random.Random,
        now: datetime,
    ) -> None:
        """PostgreSQL: the three tables by ``COPY`` (the index's terms as ``tsvector`` text:
        each term quoted, the same entry as the write path's ``array_to_tsvector``)."""
        raw = self.engine.raw_connection()
        try:
            conn = raw.driver_connection
            assert conn is not None
            with conn.cursor() as cur:
                columns = "id, url, domain, fingerprint, text_length, first_seen, last_seen"
                with cur.copy(f"COPY pages ({columns}) FROM STDIN") as copy:
                    for i, u, n in pages:
                        fp = to_sql_int(rng.getrandbits(64))
                        copy.write_row((i, u, "bench.example", fp, n, now, now))
                with cur.copy("COPY page_texts (page_id, text) FROM STDIN") as copy:
                    for (i, _, _), (_, _, blob, _, _) in zip(pages, made, strict=True):
                        copy.write_row((i, blob))
                table = passage_index.TABLE
                with cur.copy(f"COPY {table} (page_id, terms) FROM STDIN") as copy:
                    for (i, _, _), (_, _, _, _, lexemes) in zip(pages, made, strict=True):
                        copy.write_row((i, lexemes))
                for (i, _, _), (_, _, _, terms, _) in list(zip(pages, made, strict=True))[:3]:
                    cur.execute(  # the same entry as the write path's (index_terms)
                        f"SELECT terms = array_to_tsvector(%s::text[]) FROM {table} "
                        "WHERE page_id = %s",
                        (terms, i),
                    )
                    assert cur.fetchone() == (True,), f"page {i}: the COPY's entry differs"
            conn.commit()
        finally:
            raw.close()

    def end(self) -> None:
        """After a run of batches: PostgreSQL's GIN index built (if it was dropped), the
        tables vacuumed (the index's pending entries merged) and analysed."""
        if self.dialect != "postgresql":
            return
        start = time.perf_counter()
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if self.built:
                conn.execute(text("SET maintenance_work_mem = '1GB'"))
                conn.execute(
                    text(
                        f"CREATE INDEX {passage_index.TABLE}_terms ON {passage_index.TABLE} "
                        "USING gin (terms)"
                    )
                )
                self.built = False
            conn.execute(text("VACUUM ANALYZE"))
        self.seconds += time.perf_counter() - start


def _lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def fill(targets: list[Target], chains_: tuple[Chain, Chain], size: int, chars: int) -> list[str]:
    """Fill every target up to ``size`` stored texts, the same batches to each (made by two
    worker processes, written by a thread a database); a sample of the texts to query (the
    first 20 of every batch)."""
    have = min(t.pages for t in targets)
    for t in targets:
        t.begin()
    sample: list[str] = []
    starts = list(range(have, size, BATCH))
    writers = [(t, ThreadPoolExecutor(1)) for t in targets]  # a thread a database, its own
    with multiprocessing.get_context("fork").Pool(2, _worker, (chains_,)) as pool:
        pending: deque[tuple[int, AsyncResult[Made]]] = deque()
        for first in [*starts, None]:  # at most 3 batches made ahead of the writes
            if first is not None:
                pending.append(
                    (first, pool.apply_async(_made, (first, min(BATCH, size - first), chars)))
                )
            while pending and (first is None or len(pending) > 3):
                done, result = pending.popleft()
                made = result.get()
                for future in [w.submit(t.write, done, made) for t, w in writers]:
                    future.result()
                sample += [
                    f"{done + i + 1}\t{lang}\t{body}"
                    for i, (lang, body, _, _, _) in enumerate(made[:20])
                ]
                if (done // BATCH) % 20 == 0:
                    print(f"filled {done + len(made):,}", flush=True)
    for t, w in writers:
        w.shutdown()
        t.end()
    return sample
