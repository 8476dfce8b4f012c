"""The plug-in's Scrapy signals (connect to them with ``crawler.signals.connect``).

``page_superseded``: a kept page was replaced by a copy under the keep policy
(``SIMHASH_FILTER_KEEP = "canonical"``, docs/keep.md). Sent once per replacement, with

- ``old_url``: the URL kept before (now recorded as superseded in the store),
- ``new_url``: the URL kept in its place, both in the store's canonical form
  (``simhash_filter.store.canonical_url``: w3lib's ``canonicalize_url``, query sorted): key
  stored items by ``canonical_url(item_url)`` to find the old one,
- ``item``: the item of the new page (it passes the pipeline), or None when the filter runs
  without the pipeline (the middleware alone),
- ``spider``.

A storage pipeline replaces its stored ``old_url`` with ``item`` (docs/keep.md has an example).
Handlers may be ``async def``; the pipeline awaits them before the item moves on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from simhash_filter.store.records import Supersession

__all__ = ["page_superseded", "send_superseded"]

page_superseded = object()
"""Sent when a kept page is superseded by its canonical copy (see the module doc)."""


async def send_superseded(crawler: Crawler, superseded: Supersession, item: Any) -> None:
    """Send :data:`page_superseded` and wait for its handlers (a handler's error is logged
    by Scrapy and does not stop the item)."""
    await crawler.signals.send_catch_log_async(
        signal=page_superseded,
        old_url=superseded.old_url,
        new_url=superseded.new_url,
        item=item,
        spider=crawler.spider,
    )
