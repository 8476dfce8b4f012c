"""Same-site pages that are different articles under one real site's heavy template (issue 43).

    .venv/bin/python -m bench.bench_templates [--data DIR] [--hosts N]

Built at run time from ``pages_en`` (nothing of it is stored in the repository): each of
``--hosts`` real pages lends its own template (its menus, sidebars, footers, as served) to a
host; the element holding the page's article (the one with most ``<p>`` children) gets, in
turn, the ground-truth text of other articles, and, for a third of the host's pages, only the
first two sentences of one (a page whose own text is short beside the template). Every page of
a host is a different document: a drop among them is a false drop. The positives: articles
copied into two hosts' templates (two sites), which must still be dropped.

The pages go through the page work and ``FingerprintStore.check_and_add`` in crawl order
(hosts interleaved), under each variant:

- ``main``: the page work without templates (the filter before issue 43);
- ``templates``: the host's template learned in the store as the pages are admitted
  (``TEMPLATE_MIN_PAGES`` = ``--min-pages``), as the crawl does;
- ``trafilatura dedup``: the main text from ``trafilatura.extract(..., deduplicate=True)``
  (its process-wide LRU of text segments) instead, the nearest existing piece.

Prints, per variant, false drops (different articles called copies), the positives dropped
and missed, and the pages signed by their bytes.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lxml import etree
from lxml.html import fromstring, tostring

from bench._common import DATA_DIR, machine
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import PageSignature
from simhash_filter.core.template import HostTemplate
from simhash_filter.page.extract import visible_text
from simhash_filter.page.work import work_page
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.records import VerdictKind
from simhash_filter.store.templates import TemplateStore

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _articles(data: Path) -> list[tuple[str, bytes, str]]:
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text(encoding="utf-8"))
    out = []
    for key, value in sorted(truth.items()):
        body = value["articleBody"]
        raw = gzip.decompress((data / "pages_en" / "html" / f"{key}.html.gz").read_bytes())
        out.append((key, raw, body))
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def _with_body(raw: bytes, original: str, text: str) -> str | None:
    """The real page with its article (the ``<p>`` elements whose text is in the ground
    truth ``original``) replaced by ``text`` (one ``<p>`` a paragraph), or None when the
    article is not found in paragraphs."""
    try:
        tree = fromstring(raw)
    except (etree.ParserError, ValueError):
        return None
    truth = _norm(original)
    found = [
        p for p in tree.iter("p") if len(_norm(p.text_content())) > 20
        and _norm(p.text_content()) in truth
    ]  # fmt: skip
    if sum(len(_norm(p.text_content())) for p in found) < 0.6 * len(truth):
        return None
    parents: dict[Any, int] = {}
    for p in found:
        parents[p.getparent()] = parents.get(p.getparent(), 0) + 1
    body = max(parents, key=lambda e: parents[e])
    at = body.index(next(p for p in found if p.getparent() is body))
    for p in found:
        p.getparent().remove(p)
    paragraphs = [p for p in text.split("\n") if p.strip()] or [text]
    for n, paragraph in enumerate(paragraphs):
        element = etree.Element("p")
        element.text = paragraph
        body.insert(at + n, element)
    return str(tostring(tree, encoding="unicode"))


def build(
    data: Path, hosts: int, per_host: int, copies: int, seed: int = 43
) -> list[tuple[str, str, str]]:
    """(url, html, document) in crawl order: hosts interleaved."""
    rng = random.Random(seed)
    articles = _articles(data)
    rng.shuffle(articles)
    usable = [a for a in articles if _with_body(a[1], a[2], "x") is not None]
    templates = usable[:hosts]
    texts = [a[2] for a in articles if a not in templates]
    by_host: list[list[tuple[str, str, str]]] = []
    next_text = 0
    for h, (_key, raw, original) in enumerate(templates):
        pages: list[tuple[str, str, str]] = []
        for n in range(per_host):
            text = texts[next_text % len(texts)]
            doc = f"doc-{next_text % len(texts)}"
            next_text += 1
            if n % 3 == 2:  # a short own text beside the template
                text = " ".join(_SENTENCE.split(text)[:2])
                doc += "-short"
            page = _with_body(raw, original, text)
            if page is not None:
                pages.append((f"http://host{h}.example/{n}", page, doc))
        by_host.append(pages)
    for c in range(copies):  # one article in two hosts' templates: a copy
        a, b = rng.sample(range(len(templates)), 2)
        index = (next_text + c) % len(texts)
        for h in (a, b):
            page = _with_body(templates[h][1], templates[h][2], texts[index])
            if page is not None:
                by_host[h].append((f"http://host{h}.example/copy-{c}", page, f"doc-{index}"))
    order = []
    for n in range(max(len(p) for p in by_host)):
        order += [pages[n] for pages in by_host if n < len(pages)]
    return order


Signer = Callable[[str, str, HostTemplate | None], PageSignature | None]


def _trafilatura_dedup(fp: Fingerprinter) -> Signer:
    import trafilatura

    def sign(url: str, page: str, _: HostTemplate | None) -> PageSignature | None:
        text = trafilatura.extract(
            page, url=url, deduplicate=True, fast=True, favor_precision=True, include_tables=True
        )
        return fp.sign(text, page_text=visible_text(page)) if text else None

    return sign


def run(pages: list[tuple[str, str, str]], variant: str, min_pages: int) -> dict[str, Any]:
    fp = Fingerprinter()
    dedup = _trafilatura_dedup(fp) if variant == "trafilatura dedup" else None
    doc_of = {url: doc for url, _, doc in pages}
    result: dict[str, Any] = {"false_drops": [], "copies_dropped": 0, "copies_missed": 0}
    result["exact"] = 0
    with tempfile.TemporaryDirectory() as tmp:
        store = FingerprintStore.open(f"sqlite:///{tmp}/t.db", StoreOptions(spec=fp.spec))
        learner = TemplateStore(store)
        seen_copy: set[str] = set()
        for url, page, doc in pages:
            host = url.split("/")[2]
            template = learner.template(host, min_pages) if variant == "templates" else None
            if dedup is not None:
                signature = dedup(url, page, None)
            else:
                work = work_page(fp, url, None, page, max_bytes=1 << 21, template=template)
                signature = work.signature
            if signature is None:
                continue
            result["exact"] += signature.exact
            verdict = store.check_and_add(url, signature.fingerprint, sketch=signature.sketch)
            if verdict.kind is VerdictKind.NEW and variant == "templates":
                learner.learn([(host, signature.blocks)])
            dropped = verdict.kind is VerdictKind.DUPLICATE and verdict.duplicate_of is not None
            if doc in seen_copy:  # the same document again: a copy
                result["copies_dropped" if dropped else "copies_missed"] += 1
            seen_copy.add(doc)
            if dropped and doc_of[verdict.duplicate_of.url] != doc:  # type: ignore[union-attr]
                result["false_drops"].append(f"{url} ({doc}) as {verdict.duplicate_of.url}")  # type: ignore[union-attr]
        store.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--hosts", type=int, default=12)
    parser.add_argument("--per-host", type=int, default=15)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--min-pages", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=["main", "templates", "trafilatura dedup"])
    args = parser.parse_args(argv)
    pages = build(args.data, args.hosts, args.per_host, args.copies)
    shorts = sum(doc.endswith("-short") for _, _, doc in pages)
    print(f"pages: {len(pages)} ({shorts} with a short own text), hosts: {args.hosts}")
    print(f"machine: {machine()}\n")
    print("| variant | false drops | copies dropped | copies missed | signed by bytes |")
    print("| --- | ---: | ---: | ---: | ---: |")
    results = {}
    for variant in args.variants:
        r = results[variant] = run(pages, variant, args.min_pages)
        print(
            f"| {variant} | {len(r['false_drops'])} | {r['copies_dropped']} "
            f"| {r['copies_missed']} | {r['exact']} |"
        )
    for variant, r in results.items():
        for line in r["false_drops"][:10]:
            print(f"  {variant}: false drop {html.escape(line)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
