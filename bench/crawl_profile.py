"""Where a page's CPU goes in the filter, stage by stage (``bench_crawl --part profile``).

Every page of ``pages_en`` and ``pages_zh`` with its three variants, one at a time in this
process, the stages run as the page work runs them (``page/work.py``) and each timed with
``time.process_time`` (CPU, not wall): decoding and parsing, trafilatura's main text (both
passes when the first is short), the visible text, normalization (machine text out, NFKC,
case fold), segmentation (tokenization, jieba for Han runs), the signature (weights, simhash,
sketch), the hand-off to a page worker and back (the job and the answer pickled and
unpickled, as ``multiprocessing.Connection`` does on both ends; the socket copy itself is
not counted), and the store (``check_and_add`` on a SQLite file, one page a transaction,
as a crawl whose pages arrive one by one does). Medians and means a page, per language.
"""

from __future__ import annotations

import pickle
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench.crawl_site import variants

_T = TypeVar("_T")

STAGES = (
    "parse",
    "extraction",
    "visible text",
    "normalization",
    "segmentation",
    "signature",
    "hand-off",
    "store",
)


def _timed(totals: dict[str, float], stage: str, fn: Callable[[], _T]) -> _T:
    t0 = time.process_time()
    value = fn()
    totals[stage] = totals.get(stage, 0.0) + time.process_time() - t0
    return value


def _round_trip(value: object) -> object:
    """``value`` pickled and unpickled: a hand-off's CPU on both ends."""
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def _one_page(page: bytes, url: str, fingerprinter: Any, store: Any) -> dict[str, float]:
    from simhash_filter.core.text import fold, strip_machine_text
    from simhash_filter.page.decode import decode_html
    from simhash_filter.page.extract import _main_text, _visible_text, parse_bounded
    from simhash_filter.page.pool import PageJob

    t: dict[str, float] = {}
    job = PageJob(url, None, page)
    _timed(t, "hand-off", lambda: _round_trip(job))
    tree = _timed(t, "parse", lambda: parse_bounded(decode_html(page)))
    if tree is None:
        return t
    text = _timed(t, "extraction", lambda: _main_text(tree, url))
    visible = _timed(t, "visible text", lambda: _visible_text(tree))
    if not text:
        return t
    capped = text[: fingerprinter.max_chars]
    folded = _timed(t, "normalization", lambda: fold(strip_machine_text(capped)))
    _timed(t, "segmentation", lambda: fingerprinter.tokenizer.tokenize(folded))
    # sign() normalizes and tokenizes again: the signature is the rest of its time
    t0 = time.process_time()
    signature = fingerprinter.sign(text, page_text=visible)
    spent = time.process_time() - t0
    t["signature"] = max(0.0, spent - t["normalization"] - t["segmentation"])
    if signature is None:
        return t
    _timed(t, "hand-off", lambda: _round_trip(signature))
    _timed(
        t,
        "store",
        lambda: store.check_and_add(
            url, signature.fingerprint, text_length=signature.text_length, sketch=signature.sketch
        ),
    )
    return t


def stage_profile(corpus: list[tuple[str, str, bytes]], workdir: Path) -> dict[str, Any]:
    """Per language: the median and mean CPU ms a page of each stage, and their sum."""
    from simhash_filter import Fingerprinter
    from simhash_filter.core.signature import MatchRule
    from simhash_filter.store import FingerprintStore, StoreOptions

    fingerprinter = Fingerprinter()
    fingerprinter.fingerprint("warm up jieba 预热分词词典 " * 10)
    results: dict[str, Any] = {}
    for lang in ("en", "zh"):
        per_page: list[dict[str, float]] = []
        url = f"sqlite:///{workdir / f'profile-{lang}.db'}"
        with FingerprintStore.open(
            url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule())
        ) as store:
            for _, name, html in (p for p in corpus if p[0] == lang):
                for n, page in enumerate([html, *variants(html)]):
                    page_url = f"https://{lang}.example/{name}/{n}"
                    per_page.append(_one_page(page, page_url, fingerprinter, store))
        row: dict[str, Any] = {"pages": len(per_page)}
        for stage in STAGES:
            values = [1000 * p.get(stage, 0.0) for p in per_page]
            row[stage] = {"median": statistics.median(values), "mean": statistics.mean(values)}
        totals = [1000 * sum(p.values()) for p in per_page]
        row["total"] = {"median": statistics.median(totals), "mean": statistics.mean(totals)}
        results[lang] = row
    return results


def print_profile(profile: dict[str, Any]) -> None:
    print("| stage (CPU ms a page, one thread) | English median | mean | Chinese median | mean |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for stage in (*STAGES, "total"):
        en, zh = profile["en"][stage], profile["zh"][stage]
        print(
            f"| {stage} | {en['median']:.2f} | {en['mean']:.2f} "
            f"| {zh['median']:.2f} | {zh['mean']:.2f} |"
        )
    print(f"| pages | {profile['en']['pages']} | | {profile['zh']['pages']} | |")
