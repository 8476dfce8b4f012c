"""The keep policy: when the content check calls a new page a copy of a kept one, which
URL stays.

``"first"``: the page kept first stays (the filter's behaviour before keep policies).
``"canonical"`` (the default): the URL the cluster's canonical hints support most stays. A
URL's *support* is the number of the cluster's pages that declare it their canonical: the
kept page, the new page, and the copies of the kept page dropped so far (their hints are
logged with the drops). The new page replaces the kept one (the kept one is *superseded*)
only when its support is strictly greater, and never when it declares another URL its
canonical (it says itself it is a variant). Ties keep the first. So a page that is its own
canonical replaces a variant, a URL its variants name replaces the variant kept first, and
hints that name a page outside the cluster (a site whose every page names its home page)
change nothing: the content check made the cluster, the hints only choose within it.

Pure: the store evaluates it under its locks on canonical URLs it read (store/supersede.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

__all__ = [
    "KEEP_CANONICAL",
    "KEEP_FIRST",
    "KEEP_POLICIES",
    "ClusterPage",
    "could_prefer_new",
    "prefers_new",
    "support",
]

KEEP_CANONICAL = "canonical"
KEEP_FIRST = "first"
KEEP_POLICIES = (KEEP_CANONICAL, KEEP_FIRST)
"""The values of ``SIMHASH_FILTER_KEEP``."""


class ClusterPage(NamedTuple):
    """A page of a cluster of copies: its URL and the canonical it declares (None: none),
    both in the store's canonical form."""

    url: str
    declared: str | None


def support(url: str, kept: ClusterPage, new: ClusterPage, votes: Mapping[str, int]) -> int:
    """How many of the cluster's pages declare ``url`` their canonical: ``kept``, ``new``,
    and ``votes`` (declared canonical → how many of the kept page's logged copies, other
    than ``new``, declare it)."""
    return int(kept.declared == url) + int(new.declared == url) + votes.get(url, 0)


def prefers_new(kept: ClusterPage, new: ClusterPage, votes: Mapping[str, int]) -> bool:
    """True when ``new``, a copy of ``kept``, should be kept in its place (see the module
    doc)."""
    if new.url == kept.url or (new.declared is not None and new.declared != new.url):
        return False
    return support(new.url, kept, new, votes) > support(kept.url, kept, new, votes)


def could_prefer_new(url: str, declared: str | None) -> bool:
    """False when no kept page and no votes could make the keep policy prefer a page
    (it declares another URL its canonical): the store need not be asked."""
    return declared is None or declared == url
