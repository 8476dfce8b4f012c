"""Which query parameters real pages link with, and which of them the universal rules take.

    .venv/bin/python -m bench.bench_url_params [--data DIR] [--top 40]

Reads every link (``<a href>``) of the public pages (``pages_en/html/*.html.gz`` with their
URLs from ``ground-truth.json``, ``pages_zh/original/*.html``), resolves it against the page's
URL, and counts, per query parameter: the links and hosts that carry it, its distinct values,
and how many (path, parameter) pairs show it with more than one value on one path while the
rest of the query is the same: the signature of a parameter that selects content (``?p=1``,
``?p=2`` on one path) rather than one that tags a visit. Each parameter is marked with what
the universal rules (simhash_filter.urls.universal) and courlan's tracker pattern say of it.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path
from urllib.parse import parse_qsl, urljoin, urlsplit

from courlan.clean import TRACKERS_RE
from lxml import html as lxml_html

from bench._common import DATA_DIR, machine, write_results
from simhash_filter.urls.universal import classify_parameter


def pages(data: Path) -> list[tuple[str, bytes]]:
    """(URL, HTML bytes) of every public page; the Chinese pages have no URL (their
    relative links resolve against a placeholder host of their own)."""
    found = []
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text())
    for path in sorted((data / "pages_en" / "html").glob("*.html.gz")):
        key = path.name.removesuffix(".html.gz")
        url = truth.get(key, {}).get("url") or f"https://en-{key[:8]}.invalid/"
        found.append((url, gzip.decompress(path.read_bytes())))
    for path in sorted((data / "pages_zh" / "original").glob("*.html")):
        found.append((f"https://zh-{path.stem[:8]}.invalid/", path.read_bytes()))
    return found


def links(url: str, body: bytes) -> list[str]:
    try:
        tree = lxml_html.fromstring(body)
    except (ValueError, lxml_html.etree.ParserError):
        return []
    out = []
    for href in tree.xpath("//a/@href"):
        target = urljoin(url, str(href).strip())
        if urlsplit(target).scheme in ("http", "https"):
            out.append(target)
    return out


def print_table(title: str, rows: list[dict[str, object]]) -> None:
    print(f"\n{title}:\n")
    print(
        "| parameter | links | share of links | hosts | values | paths with >1 value "
        "| universal rule | courlan |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        print(
            f"| `{row['parameter']}` | {row['links']} | {100 * float(row['share']):.2f}% | "  # type: ignore[arg-type]
            f"{row['hosts']} | {row['values']} | {row['paths_with_several_values']} | "
            f"{row['universal'] or '—'} | {'tracker' if row['courlan'] else '—'} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    all_links = [link for url, body in pages(args.data) for link in links(url, body)]
    with_query = [link for link in all_links if urlsplit(link).query]
    count: dict[str, int] = defaultdict(int)
    hosts: dict[str, set[str]] = defaultdict(set)
    values: dict[str, set[str]] = defaultdict(set)
    by_rest: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    universal: dict[str, str] = {}
    for link in with_query:
        parts = urlsplit(link)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        for name, value in pairs:
            key = name.lower()
            count[key] += 1
            hosts[key].add(parts.hostname or "")
            values[key].add(value)
            rest = "&".join(sorted(f"{n}={v}" for n, v in pairs if n != name))
            by_rest[(key, f"{parts.hostname}{parts.path}", rest)].add(value)
            rule = classify_parameter(name, value)
            if rule is not None:
                universal[key] = rule.kind
    selects: dict[str, int] = defaultdict(int)
    for (key, _, _), seen in by_rest.items():
        if len(seen) > 1:
            selects[key] += 1
    print(f"{machine()}\n")
    print(
        f"{len(all_links)} links, {len(with_query)} with a query ({len(pages(args.data))} pages)\n"
    )

    def row_of(key: str) -> dict[str, object]:
        return {
            "parameter": key,
            "links": count[key],
            "share": count[key] / len(all_links),
            "hosts": len(hosts[key]),
            "values": len(values[key]),
            "paths_with_several_values": selects[key],
            "universal": universal.get(key, ""),
            "courlan": bool(TRACKERS_RE.search(key)),
        }

    top = [row_of(key) for key in sorted(count, key=lambda k: (-count[k], k))[: args.top]]
    listed = [row_of(k) for k in sorted(count) if universal.get(k) or TRACKERS_RE.search(k)]
    print_table(f"The {args.top} most frequent parameters", top)
    print_table("Every parameter a list takes (the universal rules, or courlan's pattern)", listed)
    rows = {"top": top, "listed": listed}
    print(f"\nraw results: {write_results('url_params', rows)}")


if __name__ == "__main__":
    main()
