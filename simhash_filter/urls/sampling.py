"""Which of a rule's predictions are still fetched: 1 in N, by a hash of the URL.

Deterministic (CRC-32 of the URL's path and query, without scheme and host), so every
crawler sharing the rules and a crawl resumed from ``JOBDIR`` pick the same sample: a URL
sampled once is sampled always, on any host or port serving it.
"""

from __future__ import annotations

import zlib

__all__ = ["is_sampled", "sample_key"]


def sample_key(url: str) -> str:
    """The part of ``url`` the sample is drawn on: from the path on (``/a?b=1``)."""
    start = url.find("//")
    start = url.find("/", start + 2) if start >= 0 else url.find("/")
    return "/" if start < 0 else url[start:]


def is_sampled(url: str, rate: int) -> bool:
    """True when ``url`` is in the 1-in-``rate`` sample (``rate`` 1: all of them)."""
    if rate <= 1:
        return rate == 1
    key = sample_key(url).encode("utf-8", "surrogatepass")
    return zlib.crc32(key) % rate == 0
