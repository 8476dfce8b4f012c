"""``simhash_filter.Addon``: the whole plug-in in one line of ``settings.py``.

    ADDONS = {"simhash_filter.Addon": 100}

The add-on registers :class:`~simhash_filter.crawl.pipeline.NearDuplicatePipeline` in
``ITEM_PIPELINES`` (at :data:`PIPELINE_PRIORITY`, unless the project already lists it), and,
when ``SIMHASH_FILTER_MIDDLEWARE`` is True,
:class:`~simhash_filter.crawl.middleware.NearDuplicateMiddleware` in ``DOWNLOADER_MIDDLEWARES``
too. Every other setting keeps its ``SIMHASH_FILTER_*`` default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .middleware import PRIORITY as MIDDLEWARE_PRIORITY
from .middleware import NearDuplicateMiddleware
from .pipeline import NearDuplicatePipeline
from .start_failure import crawl_config

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = ["PIPELINE_PRIORITY", "Addon"]

PIPELINE_PRIORITY = 250
"""Early: near-duplicates are dropped before storage pipelines (usually 300 and up) see them."""


class Addon:
    """Scrapy add-on for simhash-filter."""

    def __repr__(self) -> str:
        """The name a project enables it by: Scrapy's "Enabled addons" log line shows it."""
        return "simhash_filter.Addon"

    def update_settings(self, settings: Settings) -> None:
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", NearDuplicatePipeline, PIPELINE_PRIORITY
        )
        if crawl_config(settings).middleware:
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", NearDuplicateMiddleware, MIDDLEWARE_PRIORITY
            )
