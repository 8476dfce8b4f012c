"""``report --out report.html``: how a crawl's deduplication went, in one HTML file.

Bounded on any database: the totals and charts are aggregates the database computes in
a few scans, the domain and cluster tables are capped, and the side-by-side texts are a
sample of drops (half the nearest the threshold, half at random), the sampling said on
the page. The HTML itself is report_html.py's.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path

from simhash_filter.cli.common import existing_store
from simhash_filter.cli.output import Output
from simhash_filter.cli.report_html import DomainRow, ReportData, SampleView, render_report
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.core.textdiff import diff_texts
from simhash_filter.store import FingerprintStore, audit, hints, reports, texts


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
        duplicates=numbers.duplicates,
        domain_count=len(counts),
        pages_with_text=pages_with_text,
        drops_with_text=drops_with_text,
        scheme=numbers.extra["scheme"],
        rule="none (distance alone)"
        if rule is None
        else " ".join(f"{k}={v}" for k, v in dataclasses.asdict(rule).items()),
        threshold=None if rule is None else rule.min_similarity,
        max_distance=numbers.max_distance,
        domains=[
            DomainRow(c.domain, c.pages, c.duplicates, c.pages - with_text.get(c.domain, 0))
            for c in (counts if domains == 0 else counts[:domains])
        ],
        timeline=audit.timeline(store),
        histogram=audit.similarity_histogram(store),
        distances=audit.distance_counts(store),
        clusters=audit.largest_drop_groups(store),
        samples=views,
        superseded=hints.superseded_count(store),
        sample_note=note,
    )
    data.seconds = time.monotonic() - started
    return data


def write_report(
    store: FingerprintStore, path: Path, *, samples: int = 20, domains: int = 50
) -> ReportData:
    """Write the HTML report of ``store`` to ``path``; return what it shows."""
    data = build_report(store, samples=samples, domains=domains)
    path.write_text(render_report(data), encoding="utf-8")
    return data


def report(args: argparse.Namespace, out: Output) -> int:
    """``report --out FILE``: write the HTML report, print its path."""
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
