"""A crawl's close, seen in time to hand the held variants to the spider.

Scrapy sends no signal when a close begins (``CLOSESPIDER_*``, a shutdown, a component's
``CloseSpider``): ``spider_closed`` comes after the item pipelines closed, too late for an
item. What Scrapy does at a close is finish the requests in progress, then close the
scraper. :class:`CloseWatch` puts a ticket among those requests, looks every
:data:`LOOK_EVERY` seconds whether the engine is closing, and when it is, awaits ``flush``
(which hands the held responses to the scraper) before it takes the ticket back, so the
scraper closes after them. The ticket is no download: Scrapy's back-pressure and its idle
check never count it. Two attributes of Scrapy's engine (``_slot``: its ``closing`` and its
requests in progress) are read here and nowhere else; an engine without them gets no
ticket (the held variants are then checked at ``spider_closed``, without their items).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from scrapy.core.engine import ExecutionEngine

__all__ = ["LOOK_EVERY", "CloseWatch"]

logger = logging.getLogger(__name__)

LOOK_EVERY = 0.25
"""Seconds between two looks at whether the engine is closing."""


class CloseWatch:
    """Awaits ``flush`` once the engine closes, before the scraper closes (module doc)."""

    def __init__(self, engine: ExecutionEngine, flush: Callable[[], Awaitable[None]]) -> None:
        slot: Any = getattr(engine, "_slot", None)  # Scrapy's, see the module doc
        self._slot = slot
        self._flush = flush
        self._ticket = Request("data:,simhash_filter-held-variants", dont_filter=True)
        self._looking = create_looping_call(self._look)
        self._flushing: object = None  # the flush under way (its errors are logged)
        self.watching = all(
            hasattr(self._slot, name) for name in ("closing", "add_request", "remove_request")
        )
        if self.watching:
            self._slot.add_request(self._ticket)
            self._looking.start(LOOK_EVERY, now=False)

    @property
    def closing(self) -> bool:
        """True once the engine began to close (hold nothing more: no flush is coming)."""
        return self._slot is not None and getattr(self._slot, "closing", None) is not None

    def _look(self) -> None:
        if self._slot.closing is not None:
            self._looking.stop()
            self._flushing = deferred_from_coro(self._flush_then_let_go())

    async def _flush_then_let_go(self) -> None:
        try:
            await self._flush()
        except Exception:  # the close must go on whatever happened
            logger.error("simhash_filter: could not release the held variants", exc_info=True)
        finally:
            self.stop()

    def stop(self) -> None:
        """Take the ticket back (the close goes on), and look no more."""
        if self._looking.running:
            self._looking.stop()
        if self.watching:
            self.watching = False
            self._slot.remove_request(self._ticket)
