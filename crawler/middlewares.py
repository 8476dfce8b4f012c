"""Downloader middlewares of the ``crawler`` project.

:class:`RobotsTxtMiddleware` replaces Scrapy's own (same settings, same stats): in Scrapy
2.13 and later, when several requests to a host wait for its robots.txt at once, only the
first of them is checked against it and the others are let through. Scrapy awaits the one
pending Deferred through ``Deferred.asFuture``, which consumes its result (Twisted:
"implicitly converts self into a Deferred firing with None"), so every later waiter gets
``None``, which means "no robots.txt". A crawl whose first requests to a host come together
(several start URLs on one site, a shared scheduler handing a fresh worker a batch of
queued requests) then fetches pages robots.txt disallows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxt
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from scrapy.http import Request
    from scrapy.robotstxt import RobotParser

__all__ = ["RobotsTxtMiddleware"]


class RobotsTxtMiddleware(_ScrapyRobotsTxt):
    """Scrapy's RobotsTxtMiddleware, with each request that waits for a robots.txt still
    being downloaded given the parsed file (a Deferred of its own), not ``None``."""

    async def robot_parser(self, request: Request) -> RobotParser | None:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if not isinstance(pending, Deferred):
            return await super().robot_parser(request)
        own: Deferred[RobotParser | None] = Deferred()

        def relay(result: RobotParser | Failure | None) -> RobotParser | Failure | None:
            if isinstance(result, Failure):
                own.errback(result)
            else:
                own.callback(result)
            return result  # unchanged, for the next waiter

        pending.addBoth(relay)
        return await maybe_deferred_to_future(own)
