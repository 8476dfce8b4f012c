"""What the bench's database is made with (``--rule``), and the random pages it stores.

Every page has a random fingerprint and, under the default rule, a valid random sketch of
256 text slots (``encode_sketch`` without the page part, so the boilerplate check never
applies).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from simhash_filter.core.signature import MatchRule
    from simhash_filter.index.schemes import IndexScheme
    from simhash_filter.store import FingerprintStore

__all__ = [
    "SKETCH_SLOTS",
    "SPEC",
    "Page",
    "Setup",
    "random_sketch",
    "similar_sketch",
    "stored_pages",
]

SPEC = "bench;random-fingerprints"
SKETCH_SLOTS = 256
SIMHASH_K1 = 9
"""``default``'s candidate distance: the simhash rule this bench's floor models (the
project's default before the minhash-lsh index; bench_scale measures that one)."""
SIMHASH_INDEX = "multi-index"
"""The index ``default`` opens: a simhash-radius probe, as the floor's SQL is."""
"""Text slots of the bench's sketches (the default of simhash_filter.core.sketch)."""


class Page(NamedTuple):
    """One page to check or store: URL, fingerprint, text length, sketch (or None)."""

    url: str
    fingerprint: int
    text_length: int
    sketch: bytes | None


@dataclass(frozen=True)
class Setup:
    """What the database is made with (``--rule``): the match rule (None: a page within
    k bits is a duplicate), the band blocks, and whether pages carry sketches. ``name``
    is ``legacy``, ``default``, or ``default`` with options: ``default,k1=7,blocks=4``
    (the default rule at another candidate distance, ``MatchRule.for_distance``)."""

    name: str

    def _options(self) -> dict[str, int]:
        kind, *options = self.name.split(",")
        if kind not in ("default", "legacy") or (kind == "legacy" and options):
            raise ValueError(f"--rule: not a rule: {self.name!r}")
        values = dict(option.partition("=")[::2] for option in options)
        if not set(values) <= {"k1", "blocks"}:
            raise ValueError(f"--rule: options are k1= and blocks=, got {self.name!r}")
        return {key: int(value) for key, value in values.items()}

    @property
    def rule(self) -> MatchRule | None:
        from simhash_filter.core.signature import MatchRule

        if not self.sketches:
            return None
        return MatchRule.for_distance(self._options().get("k1", SIMHASH_K1))

    @property
    def blocks(self) -> int | None:
        return self._options().get("blocks")

    @property
    def sketches(self) -> bool:
        return self.name.split(",")[0] == "default"

    def open(
        self,
        url: str,
        *,
        create: bool = True,
        durable: bool | None = None,
        write_path: str | None = None,
    ) -> FingerprintStore:
        """The store as a crawler opens it (rule given; index and blocks: the defaults;
        ``write_path``: the store's named write path, None for the best available)."""
        from simhash_filter.store import FingerprintStore, StoreOptions

        return FingerprintStore.open(
            url,
            StoreOptions(
                spec=SPEC,
                rule=self.rule,
                index=SIMHASH_INDEX if self.sketches else None,
                blocks=self.blocks,
                create=create,
                durable=durable,
                write_path=write_path,
            ),
        )

    def scheme(self) -> IndexScheme:
        """The scheme a new database gets under this setup (what ``open`` makes)."""
        from simhash_filter.index.schemes import DEFAULT_MAX_DISTANCE, make_scheme

        rule = self.rule
        return make_scheme(
            SIMHASH_INDEX if self.sketches else None,
            max_distance=DEFAULT_MAX_DISTANCE if rule is None else rule.max_distance,
            blocks=self.blocks,
        )

    def judge_params(self, scheme: IndexScheme) -> tuple[int, int, float, int]:
        """The floor's (radius, candidate_distance, min_similarity, fallback_distance).
        Without a rule, no page has a sketch, so "within k, by distance alone" is the
        fallback at k."""
        rule = self.rule
        if rule is None:
            k = scheme.max_distance
            return k, k, 1.0, k
        return (
            rule.max_distance,
            rule.candidate_distance,
            rule.min_similarity,
            rule.fallback_distance,
        )

    def sketch(self, rng: random.Random) -> bytes | None:
        return random_sketch(rng) if self.sketches else None


def random_sketch(rng: random.Random) -> bytes:
    """A valid sketch of random slots (no page part)."""
    import numpy as np

    from simhash_filter.core.signature import encode_sketch

    return encode_sketch(np.frombuffer(rng.randbytes(2 * SKETCH_SLOTS), dtype="<u2"))


def similar_sketch(rng: random.Random, sketch: bytes, changed: int) -> bytes:
    """``sketch`` with ``changed`` of its text slots replaced by other values."""
    import numpy as np

    from simhash_filter.core.signature import decode_sketch, encode_sketch

    slots = decode_sketch(sketch).text.copy()
    for i in rng.sample(range(len(slots)), changed):
        slots[i] = (int(slots[i]) + rng.randint(1, 0xFFFF)) & 0xFFFF
    return encode_sketch(np.asarray(slots, dtype=np.uint16))


def stored_pages(setup: Setup, count: int, seed: int) -> Iterator[Page]:
    """The ``count`` pages loaded before the run: random fingerprints (and sketches)."""
    rng = random.Random(seed)
    for i in range(count):
        yield Page(f"http://stored.example/{i}", rng.getrandbits(64), 1000, setup.sketch(rng))
