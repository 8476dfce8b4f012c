"""Which of a rule's predictions are still fetched: 1 in N, by a hash of the URL.

Deterministic (CRC-32 of the URL's canonical form), so every crawler sharing the rules and a
crawl resumed from ``JOBDIR`` pick the same sample: a URL sampled once is sampled always.
"""

from __future__ import annotations

import zlib

__all__ = ["is_sampled"]


def is_sampled(url: str, rate: int) -> bool:
    """True when ``url`` is in the 1-in-``rate`` sample (``rate`` 0: no sample; 1: all)."""
    if rate <= 0:
        return False
    return zlib.crc32(url.encode("utf-8", "surrogatepass")) % rate == 0
