"""Crawl less, keep the right copy (issue 29): requests, duplicate fetches, lost pages, canonicals.

    .venv/bin/python -m bench.bench_canonical --sites generated,wordpress \\
        --tree main=/work/main --tree head=. \\
        --variant default --variant 'noreq:SIMHASH_FILTER_REQUEST_FILTER=False'

Each run is a real ``scrapy crawl site`` subprocess, with its tree first on ``PYTHONPATH`` and
as its working directory (so the tree's plug-in and ``crawler`` project run), a fresh SQLite
index, no download delay (``-s`` overrides any of it), over one site:

- ``generated``: :mod:`crawler.testsite.aliasing` filled with real texts of ``../shared/data``
  (tracking, session, reply, print, AMP, mirror, case, ``index.html`` aliases; ``?p=``,
  ``?page=``, ``?lang=de``, ``view.php?id=`` choosing content; right and wrong canonicals);
- ``wordpress``: Debian's WordPress of ``bench/aliasing/wordpress.sh`` (start it and fill it
  first: ``sh bench/aliasing/wordpress.sh && python -m bench.aliasing.wordpress fill``).

Per run, from the site's own request log and ground truth: requests (robots.txt aside),
duplicate fetches (a 200 whose content was already fetched under another URL), unique pages
lost (content reachable on the site, never fetched), kept items, contents kept twice, the share
of aliased clusters whose kept URL is the canonical, and the plug-in's ``simhash_filter/*``
stats. Every site is first crawled once with the filter off: the baseline, and for WordPress
the set of reachable contents. Runs interleave trees and variants; raw results go to
``bench/results/bench_canonical-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, ROOT, machine, write_results
from bench.aliasing.sites import BenchSite, GeneratedSite, Hit, WordPressSite, target_of

CRAWL_SETTINGS = {
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
    "LOG_LEVEL": "INFO",
}
"""Loopback crawls: no politeness delay (counts do not depend on it; ``-s`` overrides)."""


@dataclass(frozen=True, slots=True)
class Tree:
    """A checkout whose plug-in and ``crawler`` project a run uses."""

    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class Variant:
    """A named set of extra ``-s`` settings."""

    name: str
    settings: tuple[tuple[str, str], ...] = ()


OFF = Variant("filter off", (("SIMHASH_FILTER_ENABLED", "False"),))


@dataclass
class Crawl:
    """What one ``scrapy crawl`` left: exit code, items, stats, log tail, wall time, and the
    file the plug-in was imported from (which tree really ran)."""

    returncode: int
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    feed: list[dict[str, Any]]
    log_tail: str
    seconds: float
    plugin: str


@dataclass
class Metrics:
    """One run's figures (see the module docstring)."""

    requests: int
    fetches: int
    redirects: int
    errors: int
    duplicate_fetches: int
    reachable: int
    lost: int
    unkept: int
    kept_items: int
    kept_twice: int
    aliased_clusters: int
    canonical_kept: int
    feed_rows: int = 0
    feed_contents: int = 0
    feed_twice: int = 0
    canonical_named: int = 0
    feed_clusters: int = 0
    plugin_stats: dict[str, Any] = field(default_factory=dict)
    lost_examples: list[str] = field(default_factory=list)
    unkept_examples: list[str] = field(default_factory=list)
    twice_examples: list[str] = field(default_factory=list)
    not_canonical_examples: list[str] = field(default_factory=list)


@dataclass
class Run:
    """One crawl of one site by one tree and variant, and its figures."""

    site: str
    tree: str
    variant: str
    settings: dict[str, str]
    repeat: int
    seconds: float
    returncode: int
    plugin: str
    commit: str
    metrics: Metrics


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    env.pop("SCRAPY_SETTINGS_MODULE", None)  # the tree's scrapy.cfg decides
    return env


def tree_commit(tree: Path) -> str:
    """The tree's commit (``+`` when its files differ from it)."""
    git = ["git", "-C", str(tree)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "-uno"], capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def plugin_file(tree: Path) -> str:
    """The ``simhash_filter`` a crawl in ``tree`` imports (proves the tree is the one run)."""
    out = subprocess.run(
        [sys.executable, "-c", "import simhash_filter; print(simhash_filter.__file__)"],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or out.stderr.strip()[-300:]


def crawl(site: BenchSite, tree: Tree, settings: dict[str, str], workdir: Path) -> Crawl:
    """``scrapy crawl site`` over ``site`` in ``tree``, items and stats into ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    items, stats, log = workdir / "items.jsonl", workdir / "stats.json", workdir / "scrapy.log"
    # the example project's storage pipeline (a tree that has it): superseded items replaced
    kept_file = workdir / "kept.jsonl"
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={site.start_url}"]
    command += ["-O", str(items)]
    merged = {
        **CRAWL_SETTINGS,
        **getattr(site, "crawl_settings", dict)(),  # WordPress: a user agent of its own
        "STATS_FILE": str(stats),
        "LOG_FILE": str(log),
        "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{workdir / 'dedup.db'}",
        "KEPT_PAGES_FILE": str(kept_file),
        **settings,
    }
    for key, value in merged.items():
        command += ["-s", f"{key}={value}"]
    started = time.monotonic()
    proc = subprocess.run(
        command, cwd=tree.path, env=_env(tree.path), capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    stored = kept_file if kept_file.exists() else items  # what a storage pipeline keeps
    lines = stored.read_text().splitlines() if stored.exists() else []
    feed = items.read_text().splitlines() if items.exists() else []  # what a stream got
    log_text = log.read_text(errors="replace") if log.exists() else proc.stderr
    return Crawl(
        proc.returncode,
        [json.loads(line) for line in lines if line.strip()],
        json.loads(stats.read_text()) if stats.exists() else {},
        [json.loads(line) for line in feed if line.strip()],
        log_text[-2000:],
        seconds,
        plugin_file(tree.path),
    )


def _pages(hits: list[Hit]) -> list[Hit]:
    """The hits of a crawl's pages (robots.txt aside)."""
    return [h for h in hits if h.target.split("?")[0] != "/robots.txt"]


def _fetched(site: BenchSite, hits: list[Hit]) -> tuple[list[str | None], Counter[str]]:
    """The content of each 200 hit (``None`` for others) and how often each was fetched."""
    contents = [site.content_of(h.target) if h.status == 200 else None for h in hits]
    return contents, Counter(c for c in contents if c is not None)


def measure(
    site: BenchSite, hits: list[Hit], crawl_: Crawl, reachable: set[str], aliased: set[str]
) -> Metrics:
    """The figures of one crawl from the site's log (``hits``), its items and the truth."""
    hits = _pages(hits)
    contents, fetched = _fetched(site, hits)
    kept: dict[str, list[str]] = {}
    for item in crawl_.items:
        target = target_of(item["url"])
        content = site.content_of(target)
        if content is not None:
            kept.setdefault(content, []).append(target)
    lost = sorted(reachable - set(fetched) - set(kept))
    unkept = sorted((reachable & set(fetched)) - set(kept))
    twice = sorted(c for c, targets in kept.items() if len(targets) > 1)
    clusters = [c for c in kept if c in aliased and site.canonical(c) is not None]
    wrong = [c for c in clusters if site.canonical(c) not in kept[c]]
    rows, named = _feed(site, crawl_.feed)
    feed_clusters = [c for c in rows if c in aliased and site.canonical(c) is not None]
    plugin = {k: v for k, v in crawl_.stats.items() if k.startswith("simhash_filter/")}
    return Metrics(
        requests=len(hits),
        fetches=sum(1 for c in contents if c is not None),
        redirects=sum(1 for h in hits if 300 <= h.status < 400),
        errors=sum(1 for h in hits if h.status >= 400),
        duplicate_fetches=sum(n - 1 for n in fetched.values()),
        reachable=len(reachable),
        lost=len(lost),
        unkept=len(unkept),
        kept_items=len(crawl_.items),
        kept_twice=len(twice),
        aliased_clusters=len(clusters),
        canonical_kept=len(clusters) - len(wrong),
        feed_rows=len(crawl_.feed),
        feed_contents=len(rows),
        feed_twice=sum(1 for n in rows.values() if n > 1),
        canonical_named=sum(1 for c in feed_clusters if site.canonical(c) in named[c]),
        feed_clusters=len(feed_clusters),
        plugin_stats=plugin,
        lost_examples=lost[:20],
        unkept_examples=unkept[:20],
        twice_examples=[f"{c}: {kept[c]}" for c in twice[:10]],
        not_canonical_examples=[
            f"{c}: kept {kept[c]}, canonical {site.canonical(c)}{_hint(site, c)}" for c in wrong
        ],
    )


def _feed(site: BenchSite, feed: list[dict[str, Any]]) -> tuple[Counter[str], dict[str, set[str]]]:
    """The ``-O`` feed's rows per content, and per content the URLs its rows name: their own
    and their ``canonical_url`` field (issue 42)."""
    rows: Counter[str] = Counter()
    named: dict[str, set[str]] = {}
    for item in feed:
        content = site.content_of(target_of(item["url"]))
        if content is None:
            continue
        rows[content] += 1
        urls = named.setdefault(content, set())
        urls.add(target_of(item["url"]))
        if isinstance(item.get("canonical_url"), str):
            urls.add(target_of(item["canonical_url"]))
    return rows, named


def _hint(site: BenchSite, content: str) -> str:
    """The canonical hint a content declares, where the site knows it (the generated one)."""
    hint = getattr(site, "hint", None)
    return f", {hint(content)}" if hint is not None else ""


# -- runs ---------------------------------------------------------------------------------


@dataclass
class Baseline:
    """What the crawl with the filter off tells about a site: reachable and aliased contents."""

    reachable: set[str]
    aliased: set[str]
    run: Run


def one_run(
    site: BenchSite, tree: Tree, variant: Variant, common: dict[str, str], repeat: int, base: Path
) -> tuple[Run, list[Hit], Crawl]:
    """Crawl ``site`` once; the run (figures filled by the caller), the site's hits, the crawl."""
    settings = {**common, **dict(variant.settings)}
    workdir = base / f"{site.name}-{tree.name}-{variant.name}-{repeat}".replace(" ", "_")
    mark = site.mark()
    result = crawl(site, tree, settings, workdir)
    time.sleep(0.5)  # the access log's last lines
    hits = site.hits_since(mark)
    if result.returncode != 0:
        print(f"  crawl failed ({result.returncode}):\n{result.log_tail}", file=sys.stderr)
    empty = Metrics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)  # (filled by the caller)
    run = Run(
        site.name,
        tree.name,
        variant.name,
        settings,
        repeat,
        result.seconds,
        result.returncode,
        result.plugin,
        tree_commit(tree.path),
        empty,
    )
    return run, hits, result


def baseline(site: BenchSite, tree: Tree, common: dict[str, str], base: Path) -> Baseline:
    """The filter-off crawl: every content a crawl can reach, and the aliased ones."""
    run, hits, result = one_run(site, tree, OFF, common, 0, base)
    contents, _ = _fetched(site, _pages(hits))
    targets: dict[str, set[str]] = {}
    for hit, content in zip(_pages(hits), contents, strict=True):
        if content is not None:
            targets.setdefault(content, set()).add(target_of(hit.target))
    truth = getattr(site, "truth", None)
    if truth is not None:
        for target, content in truth.urls.items():
            targets.setdefault(content, set()).add(target)
    known = site.reachable()
    reachable = known if known is not None else set(targets)
    aliased = {c for c, t in targets.items() if len(t) > 1}
    run.metrics = measure(site, hits, result, reachable, aliased)
    return Baseline(reachable, aliased, run)


def run_all(
    sites: list[BenchSite],
    trees: list[Tree],
    variants: list[Variant],
    common: dict[str, str],
    repeats: int,
    keep_dir: Path | None = None,
) -> list[Run]:
    """The baseline of each site, then every tree × variant, interleaved, ``repeats`` times.

    ``keep_dir``: each crawl's work folder (feed, dedup.db, log) is kept there, to diagnose a run.
    """
    runs: list[Run] = []
    base = keep_dir or Path(tempfile.mkdtemp(prefix="bench-canonical-"))
    try:
        for site in sites:
            print(f"{site.name}: baseline crawl (filter off) with {trees[0].name}", file=sys.stderr)
            truth = baseline(site, trees[0], common, base)
            runs.append(truth.run)
            for repeat in range(1, repeats + 1):
                for variant in variants:
                    for tree in trees:
                        print(
                            f"{site.name}: {tree.name} / {variant.name} #{repeat}", file=sys.stderr
                        )
                        run, hits, result = one_run(site, tree, variant, common, repeat, base)
                        run.metrics = measure(site, hits, result, truth.reachable, truth.aliased)
                        runs.append(run)
    finally:
        if keep_dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return runs


# -- report -------------------------------------------------------------------------------


def _skipped(stats: dict[str, Any]) -> int:
    return sum(int(v) for k, v in stats.items() if k.startswith("simhash_filter/requests/skipped"))


def print_table(runs: list[Run]) -> None:
    """One markdown table: a row per run."""
    print(
        "| site | tree | variant | requests | 200s | duplicate fetches | redirects | lost "
        "| fetched, not kept | kept items | kept twice | kept canonical | feed rows / contents "
        "| written twice | canonical kept or named | skipped | superseded | dropped | s |"
    )
    print("|" + " --- |" * 19)
    for r in runs:
        m = r.metrics
        share = f"{m.canonical_kept}/{m.aliased_clusters}"
        if m.aliased_clusters:
            share += f" ({100 * m.canonical_kept / m.aliased_clusters:.0f}%)"
        dup = f"{m.duplicate_fetches} ({100 * m.duplicate_fetches / max(1, m.fetches):.0f}%)"
        print(
            f"| {r.site} | {r.tree} | {r.variant} | {m.requests} | {m.fetches} | {dup} "
            f"| {m.redirects} | {m.lost}/{m.reachable} | {m.unkept} | {m.kept_items} "
            f"| {m.kept_twice} "
            f"| {share} | {m.feed_rows} / {m.feed_contents} | {m.feed_twice} "
            f"| {m.canonical_named}/{m.feed_clusters} | {_skipped(m.plugin_stats)} "
            f"| {m.plugin_stats.get('simhash_filter/superseded', 0)} "
            f"| {m.plugin_stats.get('simhash_filter/dropped', 0)} | {r.seconds:.0f} |"
        )


def parse_variant(text: str) -> Variant:
    """``name`` or ``name:KEY=VALUE KEY=VALUE``."""
    name, _, rest = text.partition(":")
    pairs = [tuple(p.split("=", 1)) for p in rest.split() if "=" in p]
    return Variant(name, tuple((k, v) for k, v in pairs))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", default="generated,wordpress")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a checkout to run (repeatable; default: head=this checkout)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME[:K=V ...]",
        help="extra -s settings of a variant (repeatable; default: default)",
    )
    parser.add_argument(
        "-s",
        dest="settings",
        action="append",
        default=[],
        metavar="K=V",
        help="a setting for every run",
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--keep-dir",
        type=Path,
        default=None,
        help="keep each crawl's feed, dedup.db and log under this folder",
    )
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument(
        "--articles",
        type=int,
        default=150,
        help="articles of the generated site (the rest of pages_en: notes)",
    )
    return parser.parse_args(argv)


def make_sites(names: list[str], data: Path, articles: int) -> list[BenchSite]:
    """The sites to crawl (the generated one is served from this process)."""
    from bench.aliasing.corpus import aliasing_corpus
    from crawler.testsite.aliasing import AliasingSite

    sites: list[BenchSite] = []
    for name in names:
        if name == "generated":
            sites.append(GeneratedSite(AliasingSite(aliasing_corpus(data, articles=articles))))
        elif name == "wordpress":
            sites.append(WordPressSite())
        else:
            raise SystemExit(f"unknown site {name!r}")
    return sites


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    trees = [Tree(n, Path(p).resolve()) for n, p in (t.split("=", 1) for t in args.tree)]
    trees = trees or [Tree("head", ROOT)]
    variants = [parse_variant(v) for v in args.variant] or [Variant("default")]
    common = dict(s.split("=", 1) for s in args.settings)
    sites = make_sites(args.sites.split(","), args.data, args.articles)
    try:
        runs = run_all(sites, trees, variants, common, args.repeats, args.keep_dir)
    finally:
        for site in sites:
            getattr(site, "close", lambda: None)()
    print(f"\n{machine()}\n")
    print_table(runs)
    for r in runs:
        if r.metrics.not_canonical_examples and r.variant != OFF.name:
            print(f"\n{r.site} / {r.tree} / {r.variant} #{r.repeat}: kept URL not the canonical")
            for line in r.metrics.not_canonical_examples:
                print(f"- {line}")
    path = write_results("bench_canonical", [asdict(r) for r in runs])
    print(f"\nraw results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
