"""Main-text extraction modes against the public ground truth: CPU a page and closeness.

    .venv/bin/python -m bench.bench_extraction [--data DIR] [--rounds 3]

Every page of ``pages_en`` (181, with a human-extracted article body) and ``pages_zh`` (69,
hand-copied main text), decoded and parsed once by the page work (``decode_html`` +
``parse_bounded``), then extracted by each mode: trafilatura's ``favor_precision`` with its
fallback extractors (the extraction before issue 30), without them (``fast``), the balanced
mode (``fast``), and the page work's own (:func:`simhash_filter.page.extract._main_text`:
precision ``fast``, the balanced pass below 500 characters when it is prose). Closeness is
the character-5-gram Jaccard of the extracted text and the ground truth (the measure the
match rule approximates); ``empty``: no text at all; ``J < 0.5``: pages whose extraction is
mostly something else. CPU is ``time.process_time`` a page, the modes interleaved page by
page, median over pages of the median over ``--rounds``. The page work runs twice: as the
workers run it (trafilatura's XPaths translated to Python by
:mod:`~simhash_filter.page.fast_xpath`, the copies nothing reads left out by
:mod:`~simhash_filter.page.tree_copies`; the other modes run so too) and with trafilatura's
own XPaths and copies; the pages whose text differs between the two are counted (must be 0).
The same comparison runs on the three variants of every page the crawl benches serve
(``bench.crawl_site.variants``): 1,000 pages and variants in all, and "trafilatura's own" there
is every replacement off: its XPaths, its copies, its link-density tests
(:mod:`~simhash_filter.page.link_density`) and the ``Extractor`` it builds for each call.
The decoding is compared too: trafilatura's own (``decode_file``) against the page work's,
counted in pages whose extracted text holds more than 10 U+FFFD.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import trafilatura
from trafilatura.utils import decode_file

from bench._common import DATA_DIR, ROOT, machine, write_results
from bench.crawl_site import variants
from bench.quality_data import jaccard_c5
from simhash_filter.page import extract as page_extract
from simhash_filter.page import fast_xpath, link_density, tree_copies
from simhash_filter.page.decode import decode_html
from simhash_filter.page.extract import _main_text, parse_bounded


def _pages(data: Path) -> list[tuple[str, bytes, str]]:
    """(language, page bytes, ground-truth text) of every public page."""
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text(encoding="utf-8"))
    pages = [
        (
            "en",
            gzip.decompress((data / "pages_en" / "html" / f"{key}.html.gz").read_bytes()),
            value["articleBody"],
        )
        for key, value in sorted(truth.items())
    ]
    for path in sorted((data / "pages_zh" / "original").glob("*.html")):
        text = (data / "pages_zh" / "cleaned" / f"{path.stem}.txt").read_text(errors="replace")
        pages.append(("zh", path.read_bytes(), text))
    return pages


def _trafilatura(**options: Any) -> Callable[[Any], str]:
    def extract(tree: Any) -> str:
        text = trafilatura.extract(
            tree,
            include_comments=False,
            include_tables=True,
            deduplicate=False,
            output_format="txt",
            **options,
        )
        return (text or "").strip()

    return extract


LANGS = ("en", "zh")
PAGE_WORK = "page work (precision fast, balanced prose below 500)"
LXML_XPATHS = (
    "page work, trafilatura's own XPaths, copies, link tests and options (every replacement off)"
)
MODES: dict[str, Callable[[Any], str]] = {
    "precision + fallback extractors (before)": _trafilatura(favor_precision=True),
    "precision, fast": _trafilatura(favor_precision=True, fast=True),
    "balanced, fast": _trafilatura(fast=True),
    PAGE_WORK: lambda tree: _main_text(tree, None) or "",
    LXML_XPATHS: lambda tree: _main_text(tree, None) or "",
}


_REPLACEMENTS = (fast_xpath, tree_copies, link_density)


def _no_options(url: str | None, *, favor_precision: bool, fast: bool = True) -> None:
    """``options=None``: trafilatura builds its ``Extractor`` from the keywords, as before."""


@contextmanager
def every_replacement_off() -> Iterator[None]:
    """trafilatura's own XPaths, copies, link-density tests and per-call ``Extractor``."""
    for module in _REPLACEMENTS:
        module.uninstall()
    own_options = page_extract.pass_options
    page_extract.pass_options = _no_options  # type: ignore[assignment]
    try:
        yield
    finally:
        page_extract.pass_options = own_options
        for module in _REPLACEMENTS:
            module.install()


def variants_differ(pages: list[tuple[str, bytes, str]]) -> dict[str, int]:
    """Pages and variants (the three each page has in the crawl benches) whose page-work text
    differs from trafilatura's own, with the number compared."""
    compared = differ = 0
    for _lang, body, _ in pages:
        for page in [body, *variants(body)]:
            mine = parse_bounded(decode_html(page))
            own = parse_bounded(decode_html(page))
            compared += 1
            if mine is None or own is None:
                differ += (mine is None) != (own is None)
                continue
            text = _main_text(mine, None)
            with every_replacement_off():
                differ += text != _main_text(own, None)
    return {"compared": compared, "differ": differ}


def run(data: Path, rounds: int) -> dict[str, Any]:
    pages = _pages(data)
    texts: dict[str, list[str]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    old_decode = []
    for _lang, body, _ in pages:
        tree = parse_bounded(decode_html(body))
        old_tree = parse_bounded(decode_file(body))
        old_decode.append(MODES["precision + fallback extractors (before)"](old_tree))
        for mode, extract in MODES.items():
            times = []
            with every_replacement_off() if mode == LXML_XPATHS else nullcontext():
                for _ in range(rounds):
                    t0 = time.process_time()
                    text = extract(tree)
                    times.append(time.process_time() - t0)
            texts[mode].append(text)
            cpu[mode].append(statistics.median(times))
    result: dict[str, Any] = {"pages": {lang: sum(p[0] == lang for p in pages) for lang in LANGS}}
    rows = []
    for lang in LANGS:
        idx = [i for i, p in enumerate(pages) if p[0] == lang]
        by_mode = {"trafilatura's decoding, precision + fallbacks (before)": old_decode} | texts
        for mode, out in by_mode.items():
            closeness = [jaccard_c5(out[i], pages[i][2]) for i in idx]
            rows.append(
                {
                    "lang": lang,
                    "mode": mode,
                    "cpu_ms": 1000 * statistics.median(cpu[mode][i] for i in idx)
                    if mode in cpu
                    else None,
                    "mean_j": statistics.mean(closeness),
                    "below_half": sum(j < 0.5 for j in closeness),
                    "empty": sum(not out[i] for i in idx),
                    "mojibake": sum(out[i].count("\ufffd") > 10 for i in idx),
                }
            )
    result["rows"] = rows
    pairs = zip(texts[PAGE_WORK], texts[LXML_XPATHS], strict=True)
    result["xpath_differs"] = sum(a != b for a, b in pairs)
    result["variants"] = variants_differ(pages)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    result = run(args.data, args.rounds)
    print(f"machine: {machine()}\n")
    print(
        "| lang | extraction | CPU ms/page (median) | mean J to truth | J < 0.5 | empty "
        "| mojibake |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in result["rows"]:
        ms = "-" if r["cpu_ms"] is None else f"{r['cpu_ms']:.2f}"
        print(
            f"| {r['lang']} | {r['mode']} | {ms} | {r['mean_j']:.3f} | {r['below_half']} "
            f"| {r['empty']} | {r['mojibake']} |"
        )
    print(
        "\npages whose page-work text differs with every replacement off: "
        f"{result['xpath_differs']}"
    )
    print(
        "pages and variants whose page-work text differs with every replacement off: "
        f"{result['variants']['differ']} of {result['variants']['compared']}"
    )
    path = write_results("bench_extraction", result)
    print(f"\nraw results: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
