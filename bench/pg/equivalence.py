"""The floor's check against the store: one mixed stream replayed through both.

:func:`mixed_stream` makes pages that reach every verdict and every branch of the rule;
:func:`check_floor_equivalence` replays it through ``check_and_add`` and through the floor
function on two fresh databases and stops the bench unless verdicts and rows agree.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from bench._common import create_pg_database, drop_pg_database
from bench.pg.database import libpq_url, table_contents
from bench.pg.floor import FloorClient, install_floor
from bench.pg.setup import SKETCH_SLOTS, Page, Setup, similar_sketch
from simhash_filter.store.encoding import from_sql_int

__all__ = ["check_floor_equivalence", "mixed_stream"]


def mixed_stream(setup: Setup, seed: int, count: int) -> list[tuple[str, Page]]:
    """(case, page) pairs that hit every verdict and every branch of the rule: new pages;
    near copies with similar sketches (dropped; some at the similarity threshold); near
    fingerprints with dissimilar sketches (kept); pages without a sketch (the fallback
    distance); re-crawls within reach (unchanged) and beyond it (changed); re-crawls
    that became a copy of another page."""
    rng = random.Random(seed)
    stream: list[tuple[str, Page]] = []
    seen: list[Page] = []
    radius = setup.judge_params(setup.scheme())[0]
    slots = SKETCH_SLOTS

    def flip(fp: int, bits: int) -> int:
        for bit in rng.sample(range(64), bits):
            fp ^= 1 << bit
        return fp

    def sketch_like(base: bytes | None) -> bytes | None:
        if base is None or rng.random() < 0.15:
            return setup.sketch(rng) if rng.random() < 0.5 else None
        # below, at and above the threshold (0.7 of 256 slots: 180 equal confirm, 179 not)
        changed = rng.choice([0, 5, 20, 60, 76, 77, 120])
        return similar_sketch(rng, base, min(changed, slots))

    for i in range(count):
        roll = rng.random()
        if not seen or roll < 0.25:
            case = "new"
            page = Page(
                f"http://eq{i % 7}.example/p{i}",
                rng.getrandbits(64),
                rng.randint(0, 5000),
                setup.sketch(rng) if rng.random() < 0.8 else None,
            )
        elif roll < 0.45:
            case = "near copy"
            base = rng.choice(seen)
            page = Page(
                f"http://copy.example/c{i}",
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                sketch_like(base.sketch),
            )
        elif roll < 0.55:
            case = "near, dissimilar sketch"
            base = rng.choice(seen)
            page = Page(
                f"http://other.example/o{i}",
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                setup.sketch(rng),
            )
        elif roll < 0.65:
            case = "near, no sketch"
            base = rng.choice(seen)
            page = Page(
                f"http://bare.example/b{i}",
                flip(base.fingerprint, rng.randint(0, 5)),
                rng.randint(0, 5000),
                None,
            )
        elif roll < 0.8:
            case = "re-crawl within reach"
            base = rng.choice(seen)
            page = Page(
                base.url,
                flip(base.fingerprint, rng.randint(0, radius)),
                rng.randint(0, 5000),
                sketch_like(base.sketch),
            )
        elif roll < 0.9:
            case = "re-crawl beyond reach"
            base = rng.choice(seen)
            page = Page(
                base.url,
                flip(base.fingerprint, rng.randint(radius + 1, 20)),
                rng.randint(0, 5000),
                setup.sketch(rng) if rng.random() < 0.8 else None,
            )
        else:
            case = "re-crawl into a copy"
            other = rng.choice(seen)
            page = Page(
                rng.choice(seen).url,
                flip(other.fingerprint, rng.randint(0, 3)),
                rng.randint(0, 5000),
                sketch_like(other.sketch),
            )
        stream.append((case, page))
        seen.append(page)
    return stream


def check_floor_equivalence(setup: Setup, count: int = 600) -> dict[str, Any]:
    """Replay one mixed stream through the store and through the floor function on two
    fresh databases; raise unless verdicts and rows agree, and unless the stream reached
    every branch (see :func:`mixed_stream`)."""
    stream = mixed_stream(setup, 7, count)
    urls = [create_pg_database("sf_bench_eq"), create_pg_database("sf_bench_eq")]
    try:
        with setup.open(urls[0]) as store:
            expected = []
            for _, page in stream:
                v = store.check_and_add(
                    page.url, page.fingerprint, text_length=page.text_length, sketch=page.sketch
                )
                m = v.duplicate_of
                expected.append(
                    (
                        v.kind.value,
                        m.page_id if m else None,
                        m.url if m else None,
                        m.fingerprint if m else None,
                        m.distance if m else None,
                        m.similarity if m else None,
                        v.previous_fingerprint,
                    )
                )
        setup.open(urls[1]).close()
        install_floor(urls[1])
        floor = FloorClient(libpq_url(urls[1]), setup)
        got = []
        for _, page in stream:
            kind, mid, murl, mfp, md, msim, prev = floor.check(page)
            got.append((kind, mid, murl, unsigned(mfp), md, msim, unsigned(prev)))
        floor.close()
        bad = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        if bad:
            i = bad[0]
            raise SystemExit(
                f"floor disagrees with the store at call {i} ({stream[i][0]}): {stream[i][1]} "
                f"-> store {expected[i]}, floor {got[i]}"
            )
        a, b = table_contents(urls[0]), table_contents(urls[1])
        for table in a:
            if a[table] != b[table]:
                raise SystemExit(f"floor and store rows differ in {table}")
        outcomes = Counter(
            f"{case} -> {verdict[0]}" + (", by sketch" if verdict[5] is not None else "")
            for (case, _), verdict in zip(stream, expected, strict=True)
        )
        needed = [
            "new -> new",
            "re-crawl within reach -> unchanged",
            "re-crawl beyond reach -> changed",
        ]
        if setup.sketches:
            needed += [
                "near copy -> duplicate, by sketch",
                "near, dissimilar sketch -> new",
                "near, no sketch -> duplicate",
                "near, no sketch -> new",
            ]
        else:
            needed += ["near copy -> duplicate"]
        missing = [outcome for outcome in needed if not outcomes[outcome]]
        if missing:
            raise SystemExit(f"the equivalence stream missed {missing}: {dict(outcomes)}")
        return {
            "calls": count,
            "verdicts": dict(Counter(v[0] for v in expected)),
            "outcomes": dict(sorted(outcomes.items())),
            "rows": {t: len(r) for t, r in a.items()},
        }
    finally:
        for url in urls:
            drop_pg_database(url)


def unsigned(value: int | None) -> int | None:
    """A signed BIGINT the floor returned, as the unsigned int the store's verdicts hold."""
    return None if value is None else from_sql_int(value)
