"""simhash-filter: drop near-duplicate pages at crawl time.

The core (``Fingerprinter``, ``MatchRule``, ``hamming_distance``, ``similarity``) is
imported eagerly; everything else (the store, extraction, the Scrapy components) loads on
first use, so a user of the core pays for neither SQLAlchemy nor Scrapy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .features import IdfTable
from .fingerprint import Fingerprinter
from .signature import MatchRule, PageSignature, Verification
from .simhash import hamming_distance, similarity

if TYPE_CHECKING:
    from .addon import Addon
    from .bands import BandScheme
    from .extract import extract_page, extract_text
    from .middlewares import NearDuplicateMiddleware
    from .pipelines import FilterUnavailable, NearDuplicate, NearDuplicatePipeline
    from .store import FingerprintStore
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
    "Verdict",
    "VerdictKind",
    "Verification",
    "extract_page",
    "extract_text",
    "hamming_distance",
    "similarity",
]

_LAZY = {
    "Addon": ".addon",
    "BandScheme": ".bands",
    "FingerprintStore": ".store",
    "Match": ".store.records",
    "Verdict": ".store.records",
    "VerdictKind": ".store.records",
    "NearDuplicate": ".pipelines",
    "FilterUnavailable": ".pipelines",
    "extract_page": ".extract",
    "extract_text": ".extract",
    "NearDuplicatePipeline": ".pipelines",
    "NearDuplicateMiddleware": ".middlewares",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
