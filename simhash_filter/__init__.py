"""simhash-filter: drop near-duplicate pages at crawl time.

The core (``Fingerprinter``, ``MatchRule``, ``hamming_distance``, ``similarity``) is
imported eagerly; everything else (the store, extraction, the Scrapy components) loads on
first use, so a user of the core pays for neither SQLAlchemy nor Scrapy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core.features import IdfTable
from .core.fingerprint import Fingerprinter
from .core.signature import MatchRule, PageSignature, Verification
from .core.simhash import hamming_distance, similarity

if TYPE_CHECKING:
    from .crawl.addon import Addon
    from .crawl.pages.declared_canonical import link_canonical
    from .crawl.pages.middleware import NearDuplicateMiddleware
    from .crawl.pages.pipeline import FilterUnavailable, NearDuplicate, NearDuplicatePipeline
    from .crawl.signals import page_superseded
    from .index.schemes import BandScheme, PermutedScheme
    from .page.extract import extract_page, extract_text
    from .store import FingerprintStore, StoreOptions
    from .store.records import Match, Verdict, VerdictKind

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "BandScheme",
    "FilterUnavailable",
    "FingerprintStore",
    "Fingerprinter",
    "IdfTable",
    "Match",
    "MatchRule",
    "NearDuplicate",
    "NearDuplicateMiddleware",
    "NearDuplicatePipeline",
    "PageSignature",
    "PermutedScheme",
    "StoreOptions",
    "Verdict",
    "VerdictKind",
    "Verification",
    "extract_page",
    "extract_text",
    "hamming_distance",
    "link_canonical",
    "page_superseded",
    "similarity",
]

_LAZY = {
    "Addon": ".crawl.addon",
    "BandScheme": ".index.schemes",
    "PermutedScheme": ".index.schemes",
    "FingerprintStore": ".store",
    "StoreOptions": ".store",
    "Match": ".store.records",
    "Verdict": ".store.records",
    "VerdictKind": ".store.records",
    "NearDuplicate": ".crawl.pages.pipeline",
    "FilterUnavailable": ".crawl.pages.pipeline",
    "extract_page": ".page.extract",
    "extract_text": ".page.extract",
    "NearDuplicatePipeline": ".crawl.pages.pipeline",
    "NearDuplicateMiddleware": ".crawl.pages.middleware",
    "link_canonical": ".crawl.pages.declared_canonical",
    "page_superseded": ".crawl.signals",
}
"""Where each lazily imported public name lives (``BandScheme``: the old name of
:class:`PermutedScheme`, kept for users who wrote it)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
