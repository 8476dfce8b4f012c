"""Which duplicate fetches a crawl still makes, by kind: the URL pairs behind the figure.

    .venv/bin/python -m bench.aliasing.breakdown --site wordpress --tree head=.

One crawl with the filter off (what is reachable), then one crawl of the tree: each 200 whose
content was already fetched under another URL is a duplicate fetch, paired with the first URL
that fetched that content. A pair is named by the shapes of its two URLs (numbers as ``N``,
slugs as ``*``, the parameters' names kept), so ``/author/*/page/N/ = /page/N/`` counts every
author archive page that repeats a home page. Printed as a table, largest kind first, with
an example pair per kind.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench._common import DATA_DIR
from bench.aliasing.sites import BenchSite, target_of
from bench.bench_canonical import (
    Tree,
    Variant,
    _fetched,
    _pages,
    baseline,
    make_sites,
    one_run,
    parse_variant,
)

__all__ = ["duplicate_pairs", "shape"]

_WORDS = {"author", "category", "tag", "page", "feed", "comments", "amp", "print", "index.html"}
_NUMBER = re.compile(r"^\d+$")


def _segment(segment: str) -> str:
    if not segment or segment.lower() in _WORDS:
        return segment
    if _NUMBER.match(segment):
        return "N"
    return "*" if segment == segment.lower() else "*UPPER*"


def shape(target: str) -> str:
    """``/author/editor/page/2/?replytocom=5`` → ``/author/*/page/N/?replytocom``."""
    path, _, query = target.partition("?")
    shaped = "/".join(_segment(s) for s in path.split("/"))
    names = sorted({part.partition("=")[0] for part in query.split("&") if part})
    return shaped + ("?" + "&".join(names) if names else "")


def duplicate_pairs(site: BenchSite, hits: list[str], contents: list[str | None]) -> list[tuple]:
    """(duplicate target, first target of that content, content) for each duplicate fetch."""
    first: dict[str, str] = {}
    pairs = []
    for target, content in zip(hits, contents, strict=True):
        if content is None:
            continue
        if content in first:
            pairs.append((target_of(target), first[content], content))
        else:
            first[content] = target_of(target)
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="wordpress")
    parser.add_argument("--tree", default="head=.", metavar="NAME=PATH")
    parser.add_argument("--variant", default="default", metavar="NAME[:K=V ...]")
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--articles", type=int, default=150)
    args = parser.parse_args(argv)
    name, _, path = args.tree.partition("=")
    tree = Tree(name, Path(path).resolve())
    variant: Variant = parse_variant(args.variant)
    site = make_sites([args.site], args.data, args.articles)[0]
    base = Path(tempfile.mkdtemp(prefix="bench-breakdown-"))
    try:
        truth = baseline(site, tree, {}, base)
        off = truth.run.metrics.duplicate_fetches
        print(f"filter off: {off} duplicate fetches", file=sys.stderr)
        _run, hits, _crawl = one_run(site, tree, variant, {}, 1, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        getattr(site, "close", lambda: None)()
    pages = _pages(hits)
    contents, _ = _fetched(site, pages)
    pairs = duplicate_pairs(site, [h.target for h in pages], contents)
    kinds: Counter[str] = Counter()
    examples: dict[str, tuple] = {}
    by_content: defaultdict[str, int] = defaultdict(int)
    for dup, first, content in pairs:
        key = f"`{shape(dup)}` = `{shape(first)}`"
        kinds[key] += 1
        examples.setdefault(key, (dup, first))
        by_content[content.partition("/")[0]] += 1
    print(f"{tree.name} / {variant.name}: {len(pages)} requests, {len(pairs)} duplicate fetches")
    print("by content: " + ", ".join(f"{k} {v}" for k, v in sorted(by_content.items())))
    print("\n| duplicate = first fetched | fetches | example |\n| --- | ---: | --- |")
    for key, count in kinds.most_common():
        dup, first = examples[key]
        print(f"| {key} | {count} | `{dup}` = `{first}` |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
