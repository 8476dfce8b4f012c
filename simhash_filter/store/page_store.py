"""What the crawl's page check needs of a store, declared by the store: ``FingerprintStore``
is one, and a client (the filter's group commit, a test's stand-in) takes this protocol
instead of copying the store's signatures."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .records import Match, PageRecord, PageRow, Supersession, Verdict


class PageStore(Protocol):
    """Pages go in as :class:`PageRow` records, in groups (``add_many``) or one at a time
    (the keep policy's ``supersede`` and ``mark_canonical``); ``was_seen`` and ``lookup``
    read what is kept."""

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]: ...

    def supersede(self, page: PageRow, kept: Match) -> Supersession | None: ...

    def mark_canonical(self, page: PageRow, kept: Match) -> bool: ...

    def was_seen(self, url: str) -> bool: ...

    def lookup(self, url: str) -> PageRecord | None: ...

    def close(self) -> None: ...
