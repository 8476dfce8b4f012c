"""``simhash_filter.Addon``: the whole plug-in in one line of ``settings.py``.

    ADDONS = {"simhash_filter.Addon": 100}

The add-on registers :class:`~simhash_filter.crawl.pages.pipeline.NearDuplicatePipeline` in
``ITEM_PIPELINES`` (at :data:`PIPELINE_PRIORITY`, unless the project already lists it), and,
when ``SIMHASH_FILTER_MIDDLEWARE`` is True,
:class:`~simhash_filter.crawl.pages.middleware.NearDuplicateMiddleware` in
``DOWNLOADER_MIDDLEWARES`` too, else (unless ``SIMHASH_FILTER_KEEP`` is ``"first"``) the
pipeline's canonical first,
:class:`~simhash_filter.crawl.pages.canonical_first.CanonicalFirstMiddleware`.
Unless ``SIMHASH_FILTER_REQUEST_FILTER`` is False it also sets
``REQUEST_FINGERPRINTER_CLASS`` to
:class:`~simhash_filter.crawl.requests.fingerprinter.RuleFingerprinter`
(at the add-on's priority: a fingerprinter the project set stays), adds the
:class:`~simhash_filter.crawl.requests.request_filter.RequestFilter` extension and (unless
``SIMHASH_FILTER_FORM_FIRST`` is False) the
:class:`~simhash_filter.crawl.requests.form_first.FormFirstMiddleware`, and replaces
scrapy-redis's dupefilter by
:class:`~simhash_filter.crawl.requests.redis_dupefilter.RedisDupeFilter`. It also adds
:class:`~simhash_filter.crawl.heap_trim.HeapTrim` (the C heap's free memory given back now
and then) and lowers ``CONCURRENT_ITEMS`` to :data:`ITEMS_PER_RESPONSE` unless the project
sets it.
Every other setting keeps its ``SIMHASH_FILTER_*`` default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from simhash_filter.core.keep import KEEP_FIRST
from simhash_filter.crawl.heap_trim import HeapTrim
from simhash_filter.crawl.pages.canonical_first import CanonicalFirstMiddleware
from simhash_filter.crawl.pages.middleware import PRIORITY as MIDDLEWARE_PRIORITY
from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware
from simhash_filter.crawl.pages.pipeline import NearDuplicatePipeline
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.form_first import PRIORITY as FORM_FIRST_PRIORITY
from simhash_filter.crawl.requests.form_first import FormFirstMiddleware
from simhash_filter.crawl.requests.request_filter import RequestFilter
from simhash_filter.crawl.requests.variants_last import PRIORITY as VARIANTS_LAST_PRIORITY
from simhash_filter.crawl.requests.variants_last import VariantsLastMiddleware
from simhash_filter.crawl.start_failure import crawl_config

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = ["EXTENSION_PRIORITY", "ITEMS_PER_RESPONSE", "PIPELINE_PRIORITY", "Addon"]

EXTENSION_PRIORITY = 500
REDIS_DUPEFILTER = "simhash_filter.crawl.requests.redis_dupefilter.RedisDupeFilter"
SCRAPY_REDIS_DUPEFILTER = "scrapy_redis.dupefilter.RFPDupeFilter"

PIPELINE_PRIORITY = 250
"""Early: near-duplicates are dropped before storage pipelines (usually 300 and up) see them."""
ITEMS_PER_RESPONSE = 16
"""``CONCURRENT_ITEMS`` at the add-on's priority (Scrapy's default is 100; a project's own
setting stays). Scrapy starts that many tasks for each response's output, and they live until
its last item leaves the pipelines; the filter's pipeline holds an item while its page is
signed and, with views waiting, until its canonical is fetched. At 100, a 100k-page crawl held
~12,000 finished tasks, and the crawl process spent ~20% more CPU a page making them."""


PUBLIC_PATHS: dict[type, str] = {
    NearDuplicatePipeline: "simhash_filter.NearDuplicatePipeline",
    NearDuplicateMiddleware: "simhash_filter.NearDuplicateMiddleware",
}
"""The import paths users write (the README's), for the components the package exports."""


def import_path(component: type) -> str:
    """The path a component is registered under: the one users write, so Scrapy's "Enabled
    item pipelines" line reads ``simhash_filter.NearDuplicatePipeline``, not ``<class …>``."""
    return PUBLIC_PATHS.get(component, f"{component.__module__}.{component.__qualname__}")


def _setdefault_component(settings: Settings, name: str, component: type, priority: int) -> None:
    """Scrapy's ``setdefault_in_component_priority_dict`` by import path: ``component`` at
    ``priority`` unless the project lists it already (as a class or by any path to it)."""
    components = settings.getdict(name)
    if any(load_object(listed) is component for listed in components):
        return
    components[import_path(component)] = priority
    settings.set(name, components, settings.getpriority(name) or 0)


class Addon:
    """Scrapy add-on for simhash-filter."""

    def __repr__(self) -> str:
        """The name a project enables it by: Scrapy's "Enabled addons" log line shows it."""
        return "simhash_filter.Addon"

    def update_settings(self, settings: Settings) -> None:
        _setdefault_component(settings, "ITEM_PIPELINES", NearDuplicatePipeline, PIPELINE_PRIORITY)
        config = crawl_config(settings)
        if config.middleware:
            _setdefault_component(
                settings, "DOWNLOADER_MIDDLEWARES", NearDuplicateMiddleware, MIDDLEWARE_PRIORITY
            )
        elif config.enabled and config.keep != KEEP_FIRST:
            _setdefault_component(
                settings, "DOWNLOADER_MIDDLEWARES", CanonicalFirstMiddleware, MIDDLEWARE_PRIORITY
            )
        if config.enabled:
            _setdefault_component(settings, "EXTENSIONS", HeapTrim, EXTENSION_PRIORITY)
            settings.set("CONCURRENT_ITEMS", ITEMS_PER_RESPONSE, priority="addon")
        if config.enabled and config.variants_last:
            _setdefault_component(
                settings, "SPIDER_MIDDLEWARES", VariantsLastMiddleware, VARIANTS_LAST_PRIORITY
            )
        if config.enabled and config.request_filter:
            self._request_side(settings)
            if config.form_first:
                _setdefault_component(
                    settings, "DOWNLOADER_MIDDLEWARES", FormFirstMiddleware, FORM_FIRST_PRIORITY
                )

    @staticmethod
    def _request_side(settings: Settings) -> None:
        settings.set(
            "REQUEST_FINGERPRINTER_CLASS", import_path(RuleFingerprinter), priority="addon"
        )
        _setdefault_component(settings, "EXTENSIONS", RequestFilter, EXTENSION_PRIORITY)
        dupefilter = settings.get("DUPEFILTER_CLASS")
        if (
            dupefilter == SCRAPY_REDIS_DUPEFILTER
            or getattr(dupefilter, "__module__", "") + "." + getattr(dupefilter, "__name__", "")
            == SCRAPY_REDIS_DUPEFILTER
        ):
            settings.set(
                "DUPEFILTER_CLASS",
                REDIS_DUPEFILTER,
                priority=settings.getpriority("DUPEFILTER_CLASS") or "addon",
            )
