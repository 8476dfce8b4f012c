"""The middleware → pipeline hand-off: a response the middleware checked is not checked
again when its item reaches the pipeline."""

from __future__ import annotations

import threading
from collections import OrderedDict

from simhash_filter.crawl.pages.outcomes import FilterResult
from simhash_filter.urls.key import canonical_url

__all__ = ["HANDOFF_SIZE", "Handoff"]

HANDOFF_SIZE = 10_000
"""Responses checked by the middleware whose item has not come yet, kept at most."""


class Handoff:
    """The middleware → pipeline hand-off: a response checked once is not checked again.

    Keyed by canonical URL, bounded (the oldest go first), thread-safe."""

    def __init__(self, size: int = HANDOFF_SIZE) -> None:
        self._size = size
        self._checks: OrderedDict[str, FilterResult] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, result: FilterResult) -> None:
        """Keep a response's check (not a drop, but a late canonical) for the item the spider
        will make of it."""
        if result.key is None:  # not a URL: no item can name it
            return
        key = result.key.url
        with self._lock:
            self._checks[key] = result
            self._checks.move_to_end(key)
            while len(self._checks) > self._size:
                self._checks.popitem(last=False)

    def recall(self, url: str) -> FilterResult | None:
        """The middleware's check of ``url`` (once), or None when there is none."""
        if not self._checks:
            return None
        try:
            key = canonical_url(url)
        except ValueError:
            return None
        with self._lock:
            return self._checks.pop(key, None)
