"""Chinese word segmentation of Han runs: jieba (the default), or jieba-rs (opt-in).

``rjieba`` is the Python binding of jieba-rs, a Rust port of jieba with the same dictionary
and HMM: on the Han runs this project segments it gave the same words as jieba on every
Chinese text of the public data measured (see bench/README.md), several times faster. It is
opt-in (``pip install rjieba``; ``SIMHASH_FILTER_SEGMENTER = "rjieba"``) and named in the
fingerprint spec, so a database never mixes the two: identical output on the data measured
is not a proof of identical output on every text.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

__all__ = [
    "DEFAULT_SEGMENTER",
    "SEGMENTERS",
    "check_segmenter",
    "segment_function",
    "segmenter_spec",
]

DEFAULT_SEGMENTER = "jieba"
SEGMENTERS = ("jieba", "rjieba")

Segment = Callable[[str], list[str]]


def check_segmenter(name: str, dictionary: str | None = None) -> None:
    """ValueError, saying why, when ``name`` cannot segment (unknown, not installed, or
    asked for a dictionary it cannot load)."""
    if name not in SEGMENTERS:
        raise ValueError(f"segmenter must be one of {', '.join(SEGMENTERS)}, got {name!r}")
    if name == "rjieba":
        if dictionary is not None:
            raise ValueError("the rjieba segmenter has no custom dictionary (use jieba)")
        try:
            import rjieba  # noqa: F401
        except ImportError:
            raise ValueError(
                "the rjieba segmenter needs the rjieba package: pip install rjieba"
            ) from None


def segmenter_spec(name: str) -> str:
    """The segmenter's name and version, as the fingerprint spec records it."""
    check_segmenter(name)
    if name == "jieba":
        from .text import jieba_version

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
    from .text import jieba_tokenizer  # jieba's dictionary loads on first use

    lcut = jieba_tokenizer(dictionary).lcut

    def segment_with_jieba(run: str) -> list[str]:
        return list(lcut(run, HMM=hmm))

    return segment_with_jieba
