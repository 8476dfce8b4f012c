"""The keep policy: when the content check calls a new page a copy of a kept one, which
URL stays.

``"first"``: the page kept first stays (the filter's behaviour before keep policies).
``"canonical"`` (the default) chooses before emission: the crawl fetches canonicals first
where it can, and a copy that arrives after its kept page, even the one the rule below
prefers, is dropped (the store records it as the cluster's canonical): an emitted item is
never taken back. ``"supersede"`` (for storage that can replace a record) keeps the preferred
copy in the kept page's place, as decided by :func:`prefers_new`, in this order:

1. **Hints.** A URL's *support* is the number of the cluster's pages that declare it their
   canonical: the kept page, the new page, and the copies of the kept page dropped so far
   (their hints are logged with the drops). The URL with more support stays. A new page that
   declares another URL its canonical never replaces the kept one (it says itself it is a
   variant) -- unless that hint is *disproved*: it names a URL whose stored page the content
   check called a different page (the home page a misconfigured template names). A disproved
   hint counts as no hint: evidence, never a verdict.
2. **URL rules**, on a tie: the URL rules (universal and learned, see simhash_filter/urls/)
   give each URL a *form* and the steps that led there. When both URLs have the same form,
   the one fewer steps away stays (the rules map ``/print/a?utm_source=x`` onto ``/a``, never
   the reverse). Rules that relate the two URLs are safe to use here even unproven: the
   content check already called the pages copies, so choosing one loses nothing.
3. Otherwise the first stays.

Pure: the store evaluates it under its locks, on canonical URLs, hints, disproofs and forms
it read (store/supersede.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

__all__ = [
    "KEEP_CANONICAL",
    "KEEP_FIRST",
    "KEEP_POLICIES",
    "KEEP_SUPERSEDE",
    "ClusterPage",
    "UrlForm",
    "could_prefer_new",
    "defers",
    "prefers_new",
    "rules_prefer_new",
    "support",
]

KEEP_CANONICAL = "canonical"
KEEP_SUPERSEDE = "supersede"
KEEP_FIRST = "first"
KEEP_POLICIES = (KEEP_CANONICAL, KEEP_SUPERSEDE, KEEP_FIRST)
"""The values of ``SIMHASH_FILTER_KEEP``."""


class ClusterPage(NamedTuple):
    """A page of a cluster of copies: its URL and the canonical it declares (None: none),
    both in the store's canonical form."""

    url: str
    declared: str | None


class UrlForm(NamedTuple):
    """A URL's form under the URL rules and how many rule steps lead there (0: the URL is
    its own form)."""

    url: str
    steps: int


def support(url: str, kept: ClusterPage, new: ClusterPage, votes: Mapping[str, int]) -> int:
    """How many of the cluster's pages declare ``url`` their canonical: ``kept``, ``new``,
    and ``votes`` (declared canonical → how many of the kept page's logged copies, other
    than ``new``, declare it)."""
    return int(kept.declared == url) + int(new.declared == url) + votes.get(url, 0)


def rules_prefer_new(kept: UrlForm, new: UrlForm) -> bool:
    """True when the URL rules put the new URL nearer the pair's common form than the kept
    one (the same form, fewer steps); never for both orders of one pair."""
    return kept.url == new.url and new.steps < kept.steps


def prefers_new(
    kept: ClusterPage,
    new: ClusterPage,
    votes: Mapping[str, int],
    *,
    disproved: Collection[str] = (),
    forms: Callable[[], tuple[UrlForm, UrlForm]] | None = None,
) -> bool:
    """True when ``new``, a copy of ``kept``, should be kept in its place (see the module
    doc). ``disproved``: declared URLs whose stored page is not in the cluster; ``forms``:
    the kept and the new URL's forms under the URL rules, asked only on a tie of hints
    (None: no rules)."""
    if new.url == kept.url:
        return False
    if defers(new) and new.declared not in disproved:
        return False
    ahead = support(new.url, kept, new, votes) - support(kept.url, kept, new, votes)
    if ahead != 0 or forms is None:
        return ahead > 0
    return rules_prefer_new(*forms())


def defers(new: ClusterPage) -> bool:
    """True when ``new`` declares another URL its canonical: :func:`prefers_new` keeps it
    a copy whatever the votes and the rules say, unless that hint is disproved (so the
    store asks only whether it is, before reading the cluster)."""
    return new.declared is not None and new.declared != new.url


def could_prefer_new(url: str, declared: str | None, kept_url: str) -> bool:
    """False when no store read could make the keep policy prefer a page: it declares the
    kept page ``kept_url`` its canonical (a variant the content check confirmed)."""
    return declared is None or declared == url or declared != kept_url
