"""Chinese word segmentation of Han runs: jieba-rs (the default), or jieba.

jieba's tokenizer is made and its dictionary loaded once per dictionary, on first use
(:func:`jieba_tokenizer`); :mod:`simhash_filter.core.text` segments each Han run with
:func:`segment_function`; this module imports nothing of the package.

``rjieba`` is the Python binding of jieba-rs, a Rust port of jieba with the same dictionary
and HMM: it gave jieba's words on every Chinese and Japanese text of the public data, several
times faster (bench/history/cost.md, 2026-11-26), so it is the default. The segmenter is
named in the fingerprint spec, so a database never mixes the two: identical output on the
data measured is not a proof of identical output on every text. ``jieba`` stays for a custom
dictionary (``SIMHASH_FILTER_SEGMENTER = "jieba"``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from typing import Any

__all__ = [
    "DEFAULT_SEGMENTER",
    "SEGMENTERS",
    "check_segmenter",
    "jieba_tokenizer",
    "jieba_version",
    "segment_function",
    "segmenter_spec",
]

DEFAULT_SEGMENTER = "rjieba"
SEGMENTERS = ("jieba", "rjieba")

Segment = Callable[[str], list[str]]

_jieba_lock = threading.Lock()


def check_segmenter(name: str, dictionary: str | None = None) -> None:
    """ValueError, saying why, when ``name`` cannot segment (unknown, not installed, or
    asked for a dictionary it cannot load). rjieba is looked up, not imported: its import
    loads the dictionary (~0.12 s CPU), which the crawl process, signing no page when page
    workers do, never needs."""
    if name not in SEGMENTERS:
        raise ValueError(f"segmenter must be one of {', '.join(SEGMENTERS)}, got {name!r}")
    if name == "rjieba":
        if dictionary is not None:
            raise ValueError("the rjieba segmenter has no custom dictionary (use jieba)")
        if find_spec("rjieba") is None:
            raise ValueError("the rjieba segmenter needs the rjieba package: pip install rjieba")


def segmenter_spec(name: str) -> str:
    """The segmenter's name and version, as the fingerprint spec records it."""
    check_segmenter(name)
    if name == "jieba":
        return f"jieba-{jieba_version()}"
    try:
        return f"rjieba-{version('rjieba')}"
    except PackageNotFoundError:
        return "rjieba-unknown"


def segment_function(name: str, dictionary: str | None, hmm: bool) -> Segment:
    """A function that splits one run of Han characters into words."""
    if name == "rjieba":
        import rjieba

        def segment(run: str) -> list[str]:
            return list(rjieba.cut(run, hmm))

        return segment
    lcut = jieba_tokenizer(dictionary).lcut  # the dictionary loads on first use

    def segment_with_jieba(run: str) -> list[str]:
        return list(lcut(run, HMM=hmm))

    return segment_with_jieba


@cache
def jieba_tokenizer(dictionary: str | None = None) -> Any:
    """The jieba tokenizer for a dictionary, initialized once (thread-safe).

    A memo of an immutable resource, not mutable state: every caller gets the same
    ready tokenizer, and the dictionary is loaded only when Chinese text first appears.
    """
    # functools.cache runs the body once per concurrent first caller; the memo read
    # under the lock makes every one of them get the same, single tokenizer.
    with _jieba_lock:
        return _initialized_jieba_tokenizer(dictionary)


@cache
def _initialized_jieba_tokenizer(dictionary: str | None) -> Any:
    import jieba

    tokenizer = jieba.Tokenizer() if dictionary is None else jieba.Tokenizer(dictionary)
    quiet = logging.getLogger("jieba")
    previous = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        tokenizer.initialize()
    finally:
        quiet.setLevel(previous)
    return tokenizer


def jieba_version() -> str:
    import jieba

    return str(getattr(jieba, "__version__", "unknown"))
