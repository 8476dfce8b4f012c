"""``HeldRequests``: skipped requests kept to schedule them again, within a memory bound.

A request a rule skipped may have to be fetched after all (its rule retires, or a page names
its URL its canonical). The first :data:`WHOLE_REQUESTS` are kept as they were (callback,
meta, headers); past that only their URL is kept, and the request made again is
``Request(url)`` (the spider's default callback), as for a skipped URL read back from the
store. A crawl's ``Request`` takes ~1.6 KB (its headers and meta), its URL ~0.15 KB: 20,000
whole requests held were ~30 MB of a 100k-page crawl's memory (issue 45).
"""

from __future__ import annotations

from scrapy import Request

__all__ = ["MAX_HELD", "WHOLE_REQUESTS", "HeldRequests"]

MAX_HELD = 20_000
"""Skipped requests held at most (whole or by URL); past it one is not held (the store still
lists it under its rule, so a retired rule fetches it again)."""
WHOLE_REQUESTS = 2_000
"""Of those, held as they were at most; the others by URL alone."""


class HeldRequests:
    """URL → the skipped request, or its URL alone (module doc)."""

    def __init__(self, limit: int | None = None, whole: int | None = None) -> None:
        self.limit = MAX_HELD if limit is None else limit
        self.whole = WHOLE_REQUESTS if whole is None else whole
        self._held: dict[str, Request | None] = {}
        self._whole = 0  # entries holding a Request

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, url: object) -> bool:
        return url in self._held

    @property
    def whole_held(self) -> int:
        """Requests held as they were (not by URL alone)."""
        return self._whole

    def hold(self, url: str, request: Request) -> bool:
        """Hold ``request`` under ``url`` (whole while there is room); False when full."""
        if url in self._held:
            return True
        if len(self._held) >= self.limit:
            return False
        whole = self._whole < self.whole
        self._held[url] = request if whole else None
        self._whole += whole
        return True

    def pop(self, url: str) -> Request | None:
        """The request held under ``url`` (made again from the URL when only it was held),
        no longer held; None when nothing is."""
        if url not in self._held:
            return None
        request = self._held.pop(url)
        if request is None:
            return Request(url)
        self._whole -= 1
        return request
