"""Canonical first: a variant whose canonical was never seen waits, held in memory, while its
canonical is fetched and checked; then it is replayed through the same check.

The downloader middlewares (``NearDuplicateMiddleware``, or ``CanonicalFirstMiddleware`` in pipeline
mode; :mod:`.canonical_first`), under a keep policy other than ``"first"``, hold the variant's
response (the middleware's, with its finished page work: no second download, no second parse),
schedule the canonical (its strong hint, else the URL the host's rules or, with ``VIEWS_WAIT``, its
view marker map it onto) with the variant's callback, and release every variant held for it once the
canonical's outcome is known: its response checked, any other status, or a download error (a
canonical's request the dupefilter drops is queued or fetched already: its response answers;
``MAX_WAIT`` seconds at most). A released variant is replayed: its request again (``dont_filter``),
answered from memory by the middleware, checked like any response: a copy of the canonical is
dropped, anything else (the canonical differs, 404s, cannot be reached) is kept. Nothing is lost; at
most :data:`MAX_HELD` responses wait at once (past it, a variant is checked at once: emitted when
new, and its canonical, when it comes, is dropped as its copy and recorded as the cluster's
canonical (``late_canonical``), or, under ``"supersede"``, replaces it), and an idle spider releases
them all.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import TYPE_CHECKING, NamedTuple

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from scrapy.http import Request, Response

    from simhash_filter.page.work import PageWork

__all__ = [
    "DETOUR_META_KEY",
    "MAX_HELD",
    "REPLAY_META_KEY",
    "CanonicalFirst",
    "Detours",
    "Held",
]

MAX_HELD = 512
"""Variant responses held in memory at most, waiting for their canonicals."""
MAX_SETTLED = 100_000
"""Canonicals whose outcome is known, remembered at most (no variant waits for them again)."""
DETOUR_META_KEY = "simhash_filter_canonical_for"
"""Meta key of a canonical's request scheduled by the middleware: the key it releases."""
REPLAY_META_KEY = "simhash_filter_replay"
"""Meta key of a held variant's replayed request: the token of its held response."""


class CanonicalFirst(IgnoreRequest):
    """The variant's response waits for its canonical (``simhash_filter.crawl.pages.detours``); its
    request is replayed once the canonical's outcome is known. An errback sees this first."""


class Held(NamedTuple):
    """A variant waiting for its canonical: its request, response and page work (None: not
    done, the pipeline's canonical first)."""

    request: Request
    response: Response
    work: PageWork | None


class Detours:
    """The variants held for their canonicals (thread-safe, bounded by ``limit``)."""

    def __init__(self, limit: int = MAX_HELD) -> None:
        self._limit = limit
        self._waiting: dict[str, list[Held]] = {}  # canonical key -> variants
        self._replays: dict[str, Held] = {}  # replay token -> released variant
        self._answering: dict[str, Held] = {}  # replay token -> variant answered, in flight
        self._since: dict[str, float] = {}  # canonical key -> when its first variant waited
        self._settled: dict[str, None] = {}  # canonical keys whose outcome is known
        self._tokens = itertools.count()
        self._lock = threading.Lock()

    def held(self) -> int:
        """Variants waiting now."""
        with self._lock:
            return sum(map(len, self._waiting.values()))

    def waits_for(self, key: str) -> bool:
        """True when variants wait for the canonical ``key``."""
        with self._lock:
            return key in self._waiting

    def hold(self, key: str, variant: Held) -> bool | None:
        """Hold ``variant`` for the canonical ``key``: True when it is the first (its
        canonical must be scheduled), False when others wait for it too, None when the
        bound is reached (not held)."""
        with self._lock:
            if sum(map(len, self._waiting.values())) + len(self._replays) >= self._limit:
                return None
            waiting = self._waiting.setdefault(key, [])
            waiting.append(variant)
            self._since.setdefault(key, time.monotonic())
            return len(waiting) == 1

    def overdue(self, seconds: float) -> list[str]:
        """The canonicals variants have waited for longer than ``seconds``."""
        deadline = time.monotonic() - seconds
        with self._lock:
            return [key for key, since in self._since.items() if since < deadline]

    def settle(self, key: str) -> None:
        """The canonical ``key``'s outcome is known: no variant is held for it again."""
        with self._lock:
            self._settled[key] = None
            while len(self._settled) > MAX_SETTLED:
                del self._settled[next(iter(self._settled))]

    def settled(self, key: str) -> bool:
        """True when the canonical ``key``'s outcome is known (:meth:`settle`)."""
        with self._lock:
            return key in self._settled

    def release(self, key: str | None = None) -> list[Request]:
        """The replay requests of the variants held for ``key`` (None: all of them)."""
        with self._lock:
            if key is None:
                released = [v for held in self._waiting.values() for v in held]
                self._waiting.clear()
                self._since.clear()
            else:
                released = self._waiting.pop(key, [])
                self._since.pop(key, None)
            requests = []
            for variant in released:
                token = str(next(self._tokens))
                self._replays[token] = variant
                requests.append(_replay(variant, token))
            return requests

    def pending(self) -> list[Request]:
        """The replay requests of every released variant not answered yet (a replay the
        engine will not dequeue any more: the crawl is closing)."""
        with self._lock:
            return [_replay(variant, token) for token, variant in self._replays.items()]

    def drain(self) -> list[Held]:
        """Every variant still held or released but not replayed (forgotten here)."""
        with self._lock:
            held = [v for waiting in self._waiting.values() for v in waiting]
            held += self._replays.values()
            self._waiting.clear()
            self._since.clear()
            self._replays.clear()
            self._answering.clear()
            return held

    def answer(self, token: str) -> Held | None:
        """The released variant of a replay token, answered from memory (once): in flight
        until :meth:`replay`, no longer :meth:`pending`."""
        with self._lock:
            variant = self._replays.pop(token, None)
            if variant is not None:
                self._answering[token] = variant
            return variant

    def replay(self, token: str) -> Held | None:
        """The released variant of a replay token (once)."""
        with self._lock:
            return self._answering.pop(token, None) or self._replays.pop(token, None)


def _replay(variant: Held, token: str) -> Request:
    """The replay request of a released variant: its request, answered from memory."""
    meta = {**variant.request.meta, REPLAY_META_KEY: token}
    return variant.request.replace(dont_filter=True, meta=meta)
