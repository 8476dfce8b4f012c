"""Commands that move pages out and rebuild the index: ``export`` and ``reindex``
(``import`` has its own module, importing.py); nothing here writes SQL."""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING

from simhash_filter.cli.common import (
    UsageError,
    duplicate_row,
    existing_store,
    page_fields,
)
from simhash_filter.cli.output import Fields, Output, Record, json_line
from simhash_filter.core.signature import MatchRule
from simhash_filter.index.schemes import LSH_CANDIDATE_DISTANCE, MINHASH_LSH, make_scheme
from simhash_filter.store import FingerprintStore, reports

if TYPE_CHECKING:
    pass

# --- export ----------------------------------------------------------------------------

PAGE_FIELDS = ("url", "fingerprint", "text_length", "first_seen", "last_seen")
DUPLICATE_FIELDS = ("url", "fingerprint", "duplicate_of", "distance", "similarity", "seen_at")


def _export_rows(store: FingerprintStore, pages: bool, duplicates: bool) -> Iterator[Record]:
    if pages:
        for page in reports.iter_pages(store):
            yield {"kind": "page", **page_fields(page)}
    if duplicates:
        for record in store.duplicates():
            # the similarity as stored, not rounded for reading as the other commands show it
            row = {**duplicate_row(record), "similarity": record.similarity}
            yield {"kind": "duplicate", **{key: row[key] for key in DUPLICATE_FIELDS}}


def export(args: argparse.Namespace, out: Output) -> int:
    """``export``: kept pages and/or dropped pages as JSON Lines or CSV."""

    pages = args.pages or not args.duplicates
    duplicates = args.duplicates or not args.pages
    fmt = args.format or (
        "csv" if args.output and args.output.lower().endswith(".csv") else "jsonl"
    )
    columns = ["kind"] if pages and duplicates else []
    columns += dict.fromkeys(
        [*(PAGE_FIELDS if pages else ()), *(DUPLICATE_FIELDS if duplicates else ())]
    )
    counts: Counter[str] = Counter()
    with existing_store(args) as store, ExitStack() as stack:
        if args.output:
            target: IO[str] = stack.enter_context(
                open(args.output, "w", encoding="utf-8", newline="")
            )
        else:
            target = out.writable_stdout()
        rows = _export_rows(store, pages, duplicates)
        if fmt == "csv":
            writer = csv.DictWriter(target, columns, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
                counts[row["kind"]] += 1
        else:
            for row in rows:
                target.write(json_line(row) + "\n")
                counts[row["kind"]] += 1
    where = args.output or "stdout"
    out.note(f"exported {counts['page']} pages and {counts['duplicate']} duplicates to {where}")
    return 0


# --- reindex ---------------------------------------------------------------------------


def reindex(args: argparse.Namespace, out: Output) -> int:
    """``reindex``: rebuild the key rows for another scheme (blocks b, distance k)."""
    with existing_store(args, convert=True) as store:
        before = store.scheme
        rule, max_distance = store.rule, args.max_distance
        if args.index == MINHASH_LSH and before.kind != MINHASH_LSH and max_distance is None:
            # to the bands: the minhash-lsh rule (no simhash condition), same threshold
            max_distance = LSH_CANDIDATE_DISTANCE
            if rule is not None:
                rule = MatchRule.for_distance(max_distance, rule.min_similarity)
        k = before.max_distance if max_distance is None else max_distance
        try:  # --index, --blocks and --max-distance must fit together (and the rule's reach)
            make_scheme(
                args.index or before.kind, bits=before.bits, max_distance=k, blocks=args.blocks
            )
            started = time.monotonic()
            store.reindex(
                blocks=args.blocks, max_distance=max_distance, index=args.index, rule=rule
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        seconds = time.monotonic() - started
        after = store.scheme
        pages = store.stats().pages
    document = {
        "before": {
            "index": before.kind,
            "max_distance": before.max_distance,
            "blocks": before.n_blocks,
            "tables": before.n_tables,
        },
        "after": {
            "index": after.kind,
            "max_distance": after.max_distance,
            "blocks": after.n_blocks,
            "tables": after.n_tables,
        },
        "pages": pages,
        "seconds": round(seconds, 3),
    }
    out.document(
        document,
        [
            Fields(
                [
                    (
                        "before",
                        f"k={before.max_distance} blocks={before.n_blocks} "
                        f"tables={before.n_tables}",
                    ),
                    (
                        "after",
                        f"k={after.max_distance} blocks={after.n_blocks} tables={after.n_tables}",
                    ),
                    ("pages", pages),
                ]
            )
        ],
    )
    return 0
