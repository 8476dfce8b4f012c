"""Crawl-level quality: a loopback site built from public pages at bench time, crawled for real.

    .venv/bin/python -m bench.bench_crawl_quality [--base DIR] [--data DIR]

The site (nothing of it is stored in the repository; it is made from ``pages_en``,
``pages_zh`` and ``neardup_peps_en`` each run), every page labelled with the document it
carries:

- **articles**: a real page of ``pages_en``/``pages_zh`` (its own template), its ground-truth
  article in a print view, in an AMP-like light template, and in a newspaper template whose
  sidebar carries teasers of other articles, and the real page's bytes again under
  ``?ref=rss``: five pages, one document;
- **different articles in one template**: the newspaper pages above, one document each;
- **documentation**: two versions of a PEP (character-5-gram Jaccard >= 0.9 apart) in one
  documentation template whose navigation lists every PEP: one document a PEP, many PEPs;
- **sidebar blogs**: short posts in one blog template with a shared book list at 12-13% of the
  visible text: one document a post;
- **little text**: gallery pages (a heading and a caption), each also byte-identical under
  ``?utm_source=feed``: one document each, too little text to fingerprint.

A drop is right when the page it was dropped for carries the same document; every other
drop is wrong. A document crawled more than once and kept more than once is a miss per
extra page kept. Precision = right drops / drops; recall = right drops / (right drops +
misses): the page filter's own. Every wrong drop and miss is listed. ``--base``: a checkout
of another commit (a git worktree of main) crawled the same way in the same run, interleaved.

A page the crawl never fetched (the request filter skipped it before the download, issue 29)
is neither kept nor dropped: it is *skipped*, and *lost* when no fetched page kept its
document, else a copy *avoided*. The output's recall counts the copies kept out of the
crawl's output either way: (right drops + avoided) / (right drops + avoided + misses).
``--request-filter off`` measures the page filter alone (every URL fetched, so the
byte-identical copies reach the exact-content key); ``both`` crawls each way.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import html
import json
import random
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, ROOT, machine, write_results
from bench.bench_crawl import crawl
from bench.crawl_site import hub_pages
from crawler.articles import Article
from crawler.testsite import Page, SiteServer, news_template, print_template

ARTICLES_EN = 40
ARTICLES_ZH = 20
PEPS = 30
BLOG_POSTS = 12
GALLERIES = 15


def _article(title: str, body: str) -> Article:
    paragraphs = tuple(p.strip() for p in body.split("\n") if p.strip())
    return Article("a", title[:90], paragraphs)


def _amp(article: Article) -> str:
    paras = "".join(f"<p>{html.escape(p)}</p>" for p in article.paragraphs)
    return (
        '<!doctype html><html amp lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(article.title)}</title>"
        '<link rel="canonical" href="/"><style amp-custom>body{font:16px serif}</style></head>'
        f'<body><header class="amp-bar"><a href="/">News</a></header><article>'
        f"<h1>{html.escape(article.title)}</h1>{paras}</article>"
        "<footer>Light version. Back to the full site.</footer></body></html>"
    )


def _articles(data: Path) -> list[tuple[str, bytes, Article]]:
    """(name, real page bytes, ground-truth article) for English and Chinese pages."""
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text(encoding="utf-8"))
    en = []
    for key, value in sorted(truth.items()):
        body = value["articleBody"]
        if len(body) > 1500:
            raw = gzip.decompress((data / "pages_en" / "html" / f"{key}.html.gz").read_bytes())
            en.append((f"en-{key[:12]}", raw, _article(body.split(".")[0], body)))
    zh = []
    for path in sorted((data / "pages_zh" / "original").glob("*.html")):
        text = (data / "pages_zh" / "cleaned" / f"{path.stem}.txt").read_text(errors="replace")
        if sum("\u4e00" <= c <= "\u9fff" for c in text) >= 300:
            zh.append((f"zh-{path.stem[:12]}", path.read_bytes(), _article(text[:30], text)))
    return en[:ARTICLES_EN] + zh[:ARTICLES_ZH]


def _docs_page(title: str, text: str, nav: list[str]) -> str:
    links = "".join(f'<li><a href="/docs/{n}">{html.escape(n)}</a></li>' for n in nav)
    body = "".join(
        f"<pre>{html.escape(b)}</pre>" if b.startswith("    ") else f"<p>{html.escape(b)}</p>"
        for b in text.split("\n\n")
        if b.strip()
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)} | "
        "Python Enhancement Proposals</title></head><body><div class='layout'>"
        f"<nav class='sidebar'><h2>All PEPs</h2><ul>{links}</ul></nav>"
        f"<main><article class='pep'><h1>{html.escape(title)}</h1>{body}</article></main>"
        "</div><footer>Python Software Foundation. Source on GitHub.</footer></body></html>"
    )


def _peps(data: Path) -> list[tuple[str, str, str]]:
    """(PEP, version a text, version b text): two versions >= 0.9 alike, one pair a PEP."""
    base = data / "neardup_peps_en"
    with gzip.open(base / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = {d["id"]: d for d in map(json.loads, fh)}
    chosen: dict[str, tuple[str, str, str]] = {}
    with open(base / "pairs.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            pep = row["id_a"].split("-")[0]
            if (
                row["relation"].startswith("same_doc")
                and 0.9 <= float(row["jaccard_c5"]) < 1.0
                and pep not in chosen
                and 2000 <= len(docs[row["id_a"]]["text"]) <= 30000
            ):
                chosen[pep] = (pep, docs[row["id_a"]]["text"], docs[row["id_b"]]["text"])
    return list(chosen.values())[:PEPS]


_BOOKS = [
    ("The Estuary Year", "a naturalist's diary of the tides, the birds and the mudflats."),
    ("Salt and Timber", "how a harbour town built its ships, and what became of them."),
    ("Quiet Engines", "a short history of the steam ferries that crossed the bay."),
    ("The Lamplighter's Map", "a novel of a night-time city and the people who light it."),
    ("Cooking on a Boat", "simple recipes for a single burner and a rolling deck."),
    ("Stones of the Shore", "a field guide to the pebbles and fossils of the coast."),
]


def _blog_post(title: str, paragraphs: list[str]) -> str:
    books = "".join(
        f"<div class='book'><h4>{html.escape(t)}</h4><p>{html.escape(d)}</p></div>"
        for t, d in _BOOKS
    )
    post = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} - Notes from the Estuary</title></head><body>"
        "<div class='blog-header'><a href='/'>Notes from the Estuary</a></div>"
        f"<div class='post'><h1 class='entry-title'>{html.escape(title)}</h1>"
        f"<div class='entry-content'>{post}</div></div>"
        f"<div class='widget books'><h3>Books I recommend</h3>{books}</div>"
        "<div class='blog-footer'>Powered by a small blogging engine.</div></body></html>"
    )


def _gallery(n: int, rng: random.Random) -> str:
    words = ["harbour", "dawn", "ferry", "gull", "pier", "mist", "nets", "tide", "crane"]
    caption = " ".join(rng.choice(words) for _ in range(6))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Photo {n}</title></head><body><nav><a href='/'>Home</a> "
        "<a href='/photos'>Photos</a></nav>"
        f"<h1>Photo {n}</h1><img src='/p/{n}.jpg' alt=''><p>{caption}.</p></body></html>"
    )


def build_site(data: Path) -> tuple[dict[str, Page], dict[str, str]]:
    """The site's pages by path, and the document each page carries (its label)."""
    pages: dict[str, Page] = {}
    label: dict[str, str] = {}

    def add(path: str, body: str | bytes, doc: str) -> None:
        pages[path] = Page(body.encode() if isinstance(body, str) else body, "text/html")
        label[path] = doc

    articles = _articles(data)
    for n, (name, raw, article) in enumerate(articles):
        others = [a for _, _, a in articles[n + 1 : n + 4]]
        add(f"/a/{name}/page.html", raw, name)
        add(f"/a/{name}/page.html?ref=rss", raw, name)
        add(f"/a/{name}/print.html", print_template(article, date="5 March 2024"), name)
        add(f"/a/{name}/amp.html", _amp(article), name)
        add(
            f"/a/{name}/news.html",
            news_template(article, date="5 March 2024", more_stories=others),
            name,
        )
    peps = _peps(data)
    nav = [f"pep-{pep}" for pep, _, _ in peps]
    for pep, a, b in peps:
        add(f"/docs/pep-{pep}", _docs_page(f"PEP {pep}", a, nav), f"pep-{pep}")
        add(f"/docs/pep-{pep}/next", _docs_page(f"PEP {pep}", b, nav), f"pep-{pep}")
    for n, (name, _, article) in enumerate(articles[:BLOG_POSTS]):
        post = [p for p in article.paragraphs if len(p) > 80][:2]
        add(f"/blog/{n}.html", _blog_post(article.title, post), f"post-{name}")
    rng = random.Random(5)
    for n in range(GALLERIES):
        page = _gallery(n, rng)
        add(f"/photos/{n}.html", page, f"photo-{n}")
        add(f"/photos/{n}.html?utm_source=feed", page, f"photo-{n}")
    pages.update(hub_pages(list(label)))
    return pages, label


def score(label: dict[str, str], base_url: str, db: Path, fetched: set[str]) -> dict[str, Any]:
    """Right and wrong drops, misses, skips and lost documents, precision and recall of one
    crawl's database; ``fetched``: the canonical URLs the site served."""
    from simhash_filter.store import FingerprintStore, canonical_url

    path_of = {canonical_url(base_url + p): p for p in label}
    with FingerprintStore.open_existing(f"sqlite:///{db}") as store:
        drops = [(path_of[d.url], path_of[d.duplicate_of_url]) for d in store.duplicates()]
    dropped = {page for page, _ in drops}
    skipped = {p for url, p in path_of.items() if url not in fetched}
    right = [(p, of) for p, of in drops if label[p] == label[of]]
    wrong = [(p, of) for p, of in drops if label[p] != label[of]]
    kept_by_doc: dict[str, list[str]] = defaultdict(list)
    for page, doc in label.items():
        if page not in dropped and page not in skipped:
            kept_by_doc[doc].append(page)
    lost = sorted({label[p] for p in skipped} - set(kept_by_doc))
    avoided = [p for p in skipped if label[p] in kept_by_doc]  # copies never fetched
    misses = [sorted(kept) for kept in kept_by_doc.values() if len(kept) > 1]
    n_missed = sum(len(kept) - 1 for kept in misses)
    exact_passed = [  # a byte-identical pair of which both pages were kept
        p for p in label if "?" in p and {p, p.split("?")[0]}.isdisjoint(dropped | skipped)
    ]
    return {
        "pages": len(label),
        "fetched": len(label) - len(skipped),
        "skipped": len(skipped),
        "lost": lost,
        "drops": len(drops),
        "right": len(right),
        "wrong_drops": [f"{p} (for {of})" for p, of in wrong],
        "misses": [" = ".join(kept) for kept in misses],
        "missed": n_missed,
        "precision": len(right) / len(drops) if drops else 1.0,
        "recall": len(right) / (len(right) + n_missed) if right or n_missed else 1.0,
        "avoided": len(avoided),
        "output_recall": (
            (len(right) + len(avoided)) / (len(right) + len(avoided) + n_missed)
            if right or avoided or n_missed
            else 1.0
        ),
        "exact_copies_kept": exact_passed,
        "kinds_missed": dict(Counter(p.split("/")[1] for kept in misses for p in kept[1:])),
    }


def feed_rows(label: dict[str, str], base_url: str, feed: Path) -> dict[str, Any]:
    """The feed's rows (what a stream consumer got, issue 42), the documents they carry and
    the documents written more than once."""
    from simhash_filter.store import canonical_url

    path_of = {canonical_url(base_url + p): p for p in label}
    lines = feed.read_text().splitlines() if feed.exists() else []
    docs = Counter(
        label.get(path_of.get(canonical_url(json.loads(x)["url"]), ""), "?") for x in lines
    )
    return {
        "feed_rows": len(lines),
        "feed_documents": len(docs),
        "written_twice": sorted(d for d, n in docs.items() if n > 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--base", type=Path, default=None, help="another checkout, crawled too")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--request-filter",
        choices=("on", "off", "both"),
        default="both",
        help="crawl with the request filter on (the default crawl), off (the page filter alone)",
    )
    args = parser.parse_args(argv)
    from simhash_filter.store import canonical_url

    site, label = build_site(args.data)
    print(f"site: {len(label)} labelled pages, {len(set(label.values()))} documents")
    print(f"machine: {machine()}\n")
    codes = {"head": ROOT} | ({"base": args.base} if args.base else {})
    modes = ("on", "off") if args.request_filter == "both" else (args.request_filter,)
    runs = [
        (f"{name}, requests {mode}", code, mode) for mode in modes for name, code in codes.items()
    ]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in runs}
    with tempfile.TemporaryDirectory() as tmp, SiteServer(site) as server:
        for repeat in range(args.repeats):
            for name, code, mode in runs if repeat % 2 == 0 else runs[::-1]:
                work = Path(tmp) / name.replace(", ", "-").replace(" ", "-")
                work.mkdir(exist_ok=True)
                mark = len(server.hits)
                feed = work / "feed.jsonl"
                extra: dict[str, object] = {
                    "SIMHASH_FILTER_REQUEST_FILTER": mode == "on",
                    "FEEDS": json.dumps({str(feed): {"format": "jsonlines", "overwrite": True}}),
                }
                stats = crawl(
                    server.base_url,
                    work,
                    mode="html",
                    filter_on=True,
                    concurrency=32,
                    code=code,
                    extra=extra,
                )
                fetched = {canonical_url(server.base_url + p) for p, _ in server.hits[mark:]}
                result = score(label, server.base_url, work / "bench.db", fetched)
                result["no_text"] = stats.get("simhash_filter/no_text", 0)
                result.update(feed_rows(label, server.base_url, feed))
                results[name].append(result)
    print(
        "| code | pages | fetched | drops | right | wrong | missed | precision | recall "
        "| skipped | avoided | lost | output recall | no_text | feed rows / documents "
        "| written twice |"
    )
    print("| --- |" + " ---: |" * 15)
    for name, rs in results.items():
        for r in rs:
            print(
                f"| {name} | {r['pages']} | {r['fetched']} | {r['drops']} | {r['right']} "
                f"| {len(r['wrong_drops'])} | {r['missed']} | {r['precision']:.3f} "
                f"| {r['recall']:.3f} | {r['skipped']} | {r['avoided']} | {len(r['lost'])} "
                f"| {r['output_recall']:.3f} | {r['no_text']} "
                f"| {r['feed_rows']} / {r['feed_documents']} | {len(r['written_twice'])} |"
            )
    for name, rs in results.items():
        r = rs[0]
        print(f"\n{name}: missed by kind {r['kinds_missed']}")
        print(f"{name}: byte-identical pairs both kept: {len(r['exact_copies_kept'])}")
        for line in r["wrong_drops"]:
            print(f"  wrong drop: {line}")
        for doc in r["lost"]:
            print(f"  lost (only behind skipped URLs): {doc}")
        for line in r["misses"]:
            print(f"  miss: {line}")
    path = write_results("bench_crawl_quality", results)
    print(f"\nraw results: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
