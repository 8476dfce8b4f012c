"""``UncheckedJournal``: the pages that passed unchecked, kept until the store is back.

A page that could not be checked (a lock timeout, an outage) passes when ``FAIL_OPEN`` is
True, and it is then in no index: later copies of it would be kept too. Its signature is
kept here, in memory, and checked and added when a check succeeds again (the filter's
catch-up), so the index stays complete: a copy found then is recorded by the store as a
duplicate (its item was already emitted; ``simhash_filter/unchecked/emitted_duplicates``).

In memory, with a bound (:data:`DEFAULT_LIMIT` pages, about 1 KB each: the page's text is
not kept, only its signature): the journal lives as long as the crawl, and what a crawl
keeps of a page there is what the store would have had from it. A page beyond the bound,
or still here when the crawl ends with the store away, is counted
(``simhash_filter/unchecked/lost``) and stays out of the index: a later crawl checks it.
Thread-safe: the reactor adds, the catch-up (a worker thread) takes and puts back.
"""

from __future__ import annotations

import threading
from collections import deque

from simhash_filter.store.records import PageRow, Verdict, VerdictKind

__all__ = ["DEFAULT_LIMIT", "CatchUpCount", "UncheckedJournal"]

DEFAULT_LIMIT = 10_000
"""Pages the journal keeps at most."""


class UncheckedJournal:
    """A bounded, ordered set of pages waiting for their check (see the module doc)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        self.limit = limit
        self._rows: deque[PageRow] = deque()
        self._lock = threading.Lock()

    def add(self, row: PageRow) -> bool:
        """Keep ``row`` (without its text); False when the journal is full."""
        with self._lock:
            if len(self._rows) >= self.limit:
                return False
            self._rows.append(row._replace(text=None))
            return True

    def take(self, n: int) -> list[PageRow]:
        """Up to ``n`` of the oldest pages, taken out (:meth:`put_back` what failed)."""
        with self._lock:
            return [self._rows.popleft() for _ in range(min(n, len(self._rows)))]

    def put_back(self, rows: list[PageRow]) -> None:
        """Return pages taken but not checked to the front, in their order."""
        with self._lock:
            self._rows.extendleft(reversed(rows))

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)


class CatchUpCount:
    """What the catch-up found since the journal was last empty."""

    def __init__(self) -> None:
        self.pages = 0
        self.copies = 0

    def add(self, verdict: Verdict) -> None:
        self.pages += 1
        self.copies += verdict.kind is VerdictKind.DUPLICATE

    def summary(self) -> str:
        return (
            f"{self.pages} pages that passed unchecked were checked once the store was back: "
            f"{self.pages - self.copies} are in the index, {self.copies} were copies of kept "
            "pages (their items had passed; logged as duplicates)"
        )
