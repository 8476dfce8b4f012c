"""``report --out report.html``: how a crawl's deduplication went, in one HTML file.

Bounded on any database: the totals and charts are aggregates the database computes in
a few scans, the domain and cluster tables are capped, and the side-by-side texts are a
sample of drops (half the nearest the threshold, half at random), the sampling said on
the page. The HTML itself is report_html.py's.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

from simhash_filter.cli import options
from simhash_filter.cli.command import command, domains, option
from simhash_filter.cli.common import existing_store
from simhash_filter.cli.output import Output
from simhash_filter.cli.report_html import DomainRow, ReportData, SampleView, render_report
from simhash_filter.cli.report_requests import render_request_side, request_side
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.core.textdiff import diff_texts
from simhash_filter.store import FingerprintStore, audit, declared_canonicals, reports, texts


def _samples(store: FingerprintStore, size: int) -> tuple[list[SampleView], str]:
    sampled, total = audit.sample_drops(store, size)
    drop_blobs = texts.drop_texts(store, [s.drop.duplicate_id for s in sampled])
    page_blobs = texts.page_texts(store, [s.page_id for s in sampled])
    views = []
    for s in sampled:
        drop_blob = drop_blobs.get(s.drop.duplicate_id)
        page_blob = page_blobs.get(s.page_id)
        steps, missing, truncated = None, "", False
        if drop_blob is None or page_blob is None:
            which = [n for n, b in (("dropped", drop_blob), ("kept", page_blob)) if b is None]
            missing = f"no stored text of the {' and the '.join(which)} page"
        else:
            kept, dropped = unpack_text(page_blob), unpack_text(drop_blob)
            steps = diff_texts(kept.text, dropped.text)
            truncated = kept.truncated or dropped.truncated
        views.append(
            SampleView(
                url=s.drop.url,
                duplicate_of=s.drop.duplicate_of_url,
                distance=s.drop.distance,
                similarity=s.drop.similarity,
                seen_at=s.drop.seen_at,
                reason=s.reason,
                steps=steps,
                missing=missing,
                truncated=truncated,
                superseded=s.drop.superseded,
            )
        )
    nearest = sum(1 for v in views if v.reason != "random")
    if total == 0:
        note = "No page was dropped."
    elif len(views) == total:
        note = f"All {total:,} drops."
    else:
        note = (
            f"{len(views):,} of {total:,} drops: the {nearest:,} nearest the threshold "
            f"(lowest similarity, or largest distance without sketches) and "
            f"{len(views) - nearest:,} drawn at random (fixed seed, so the same database gives "
            "the same sample)."
        )
    return views, note


def rule_in_words(rule: MatchRule | None, max_distance: int) -> str:
    """The match rule as a sentence, e.g. ``Copies: sketch similarity at least 0.7 (pages
    without a sketch: within 3 bits)``."""
    if rule is None:
        return f"Copies: simhashes within {max_distance} bits"
    within = "" if rule.candidate_distance >= 64 else "simhashes within "
    within = within and f"{within}{rule.candidate_distance} bits and "
    return (
        f"Copies: {within}sketch similarity at least {rule.min_similarity:g} (pages without "
        f"a sketch: within {rule.fallback_distance} bits)"
    )


def build_report(store: FingerprintStore, *, samples: int, domains: int) -> ReportData:
    """Everything the report shows, read from ``store``."""
    started = time.monotonic()
    numbers = store.stats()
    counts = reports.domain_counts(store)
    with_text = texts.domain_text_counts(store)
    pages_with_text, drops_with_text = texts.text_counts(store)
    rule = store.rule
    views, note = _samples(store, samples)
    data = ReportData(
        database=store.display_url,
        generated_at=datetime.now(UTC),
        pages=numbers.pages,
        duplicates=numbers.dropped_pages,  # pages: each dropped URL once (not each drop)
        domain_count=len(counts),
        pages_with_text=pages_with_text,
        drops_with_text=drops_with_text,
        scheme=store.scheme.in_words(),
        rule=rule_in_words(rule, store.scheme.max_distance),
        threshold=None if rule is None else rule.min_similarity,
        max_distance=numbers.max_distance,
        distance_bounds=store.scheme.max_distance < store.scheme.bits,
        domains=[
            DomainRow(c.domain, c.pages, c.duplicates, c.pages - with_text.get(c.domain, 0))
            for c in (counts if domains == 0 else counts[:domains])
        ],
        timeline=audit.timeline(store),
        histogram=audit.similarity_histogram(store),
        distances=audit.distance_counts(store),
        clusters=audit.largest_drop_groups(store),
        samples=views,
        superseded=declared_canonicals.superseded_count(store),
        sample_note=note,
    )
    data.request_side = render_request_side(request_side(store))
    data.seconds = time.monotonic() - started
    return data


def write_report(
    store: FingerprintStore, path: Path, *, samples: int = 20, domains: int = 50
) -> ReportData:
    """Write the HTML report of ``store`` to ``path``; return what it shows."""
    data = build_report(store, samples=samples, domains=domains)
    path.write_text(render_report(data), encoding="utf-8")
    return data


@command("report")
@option("--out", "-o", default="report.html", metavar="FILE", help="where to write it")
@option(
    "--samples",
    type=options.count,
    default=20,
    metavar="N",
    help="drops shown side by side (default 20): half the nearest the threshold, half at random",
)
@domains(50)
def report(args: argparse.Namespace, out: Output) -> int:
    """one self-contained HTML file: totals, what was skipped before download (fetches
    saved, the URL rules), domains, drops over time, similarity, clusters, a sample of
    drops side by side

    Prints the file's path."""
    path = Path(args.out)
    with existing_store(args) as store:
        data = write_report(store, path, samples=args.samples, domains=args.domains)
    out.document(
        {"report": str(path), "bytes": path.stat().st_size, "seconds": round(data.seconds or 0, 3)},
        [],
    )
    if out.mode.value == "table":
        out.stdout.write(f"{path}\n")
    return 0
