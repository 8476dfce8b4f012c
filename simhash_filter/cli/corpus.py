"""Commands that move pages out and rebuild the index: ``export`` and ``reindex``
(``import`` has its own module, importing.py); nothing here writes SQL."""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from itertools import islice
from typing import IO, Any

from simhash_filter.cli import options
from simhash_filter.cli.audit import NO_TEXT_HINT
from simhash_filter.cli.command import command, option
from simhash_filter.cli.common import (
    CommandError,
    UsageError,
    duplicate_row,
    existing_store,
    page_fields,
)
from simhash_filter.cli.output import Fields, Output, Record, json_line
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.index.defaults import IndexChoice, IndexSettings, changed_settings
from simhash_filter.index.schemes import INDEX_KINDS
from simhash_filter.store import FingerprintStore, reports, texts

# --- export ----------------------------------------------------------------------------

PAGE_FIELDS = ("url", "fingerprint", "text_length", "first_seen", "last_seen")
DUPLICATE_FIELDS = ("url", "fingerprint", "duplicate_of", "distance", "similarity", "seen_at")


_TEXT_CHUNK = 500  # kept pages whose stored texts one query reads


def _pages_with_texts(store: FingerprintStore, out: Output) -> Iterator[Record]:
    """``export --texts``: each kept page with its stored text (``url`` + ``text``: what
    ``import`` reads, under other fingerprint options too); pages without one are left out
    and counted in a note."""
    missing = 0
    pages = reports.iter_pages(store)
    while chunk := list(islice(pages, _TEXT_CHUNK)):
        found = texts.page_texts(store, [page.page_id for page in chunk])
        for page in chunk:
            if page.page_id not in found:
                missing += 1
                continue
            yield {
                "kind": "page",
                **page_fields(page),
                "text": unpack_text(found[page.page_id]).text,
            }
    if missing:
        out.note(
            f"({missing} kept pages have no stored text and were left out: texts are stored "
            "by a crawl with SIMHASH_FILTER_STORE_TEXT or by import --store-text)"
        )


def _export_rows(
    store: FingerprintStore, pages: bool, duplicates: bool, with_texts: bool, out: Output
) -> Iterator[Record]:
    if pages and with_texts:
        yield from _pages_with_texts(store, out)
    elif pages:
        for page in reports.iter_pages(store):
            yield {"kind": "page", **page_fields(page)}
    if duplicates:
        for record in store.duplicates():
            # the similarity as stored, not rounded for reading as the other commands show it
            row = {**duplicate_row(record), "similarity": record.similarity}
            yield {"kind": "duplicate", **{key: row[key] for key in DUPLICATE_FIELDS}}


@command("export")
@option("--pages", action="store_true", help="export the kept pages")
@option("--duplicates", action="store_true", help="export the dropped pages")
@option(
    "--format",
    choices=("jsonl", "csv"),
    help="output format (default: csv for -o *.csv, else jsonl)",
)
@option(
    "--texts",
    action="store_true",
    help="with each kept page its stored text (pages without one are left out): a file "
    "import reads, to re-fingerprint the pages under other options",
)
@option("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
def export(args: argparse.Namespace, out: Output) -> int:
    """pages and/or duplicates as JSON Lines or CSV"""

    if args.texts and args.duplicates:
        raise UsageError("--texts exports the kept pages' texts: leave out --duplicates")
    pages = args.pages or not args.duplicates
    duplicates = not args.texts and (args.duplicates or not args.pages)
    fmt = args.format or (
        "csv" if args.output and args.output.lower().endswith(".csv") else "jsonl"
    )
    columns = ["kind"] if pages and duplicates else []
    columns += dict.fromkeys(
        [
            *(PAGE_FIELDS if pages else ()),
            *(("text",) if args.texts else ()),
            *(DUPLICATE_FIELDS if duplicates else ()),
        ]
    )
    counts: Counter[str] = Counter()
    with existing_store(args) as store, ExitStack() as stack:
        if args.output:
            target: IO[str] = stack.enter_context(
                open(args.output, "w", encoding="utf-8", newline="")
            )
        else:
            target = out.writable_stdout()
        if args.texts and texts.text_counts(store)[0] == 0:
            raise CommandError(f"no stored texts in {store.display_url}: {NO_TEXT_HINT}")
        rows = _export_rows(store, pages, duplicates, args.texts, out)
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


def _scheme_document(settings: IndexSettings) -> dict[str, Any]:
    scheme, rule = settings.scheme, settings.rule
    document: dict[str, Any] = {
        "index": scheme.kind,
        "max_distance": scheme.max_distance,
        "blocks": scheme.n_blocks,
        "tables": scheme.n_tables,
    }
    if rule is not None:
        document["min_similarity"] = rule.min_similarity
    return document


def _scheme_line(settings: IndexSettings) -> str:
    scheme, rule = settings.scheme, settings.rule
    line = f"k={scheme.max_distance} blocks={scheme.n_blocks} tables={scheme.n_tables}"
    return line if rule is None else f"{line} min_similarity={rule.min_similarity:g}"


@command("reindex")
@option(
    "--index",
    choices=INDEX_KINDS,
    help="the index kind: LSH bands over the sketches (minhash-lsh), the paper's permuted "
    "tables, or multi-index hashing; default: the current one",
)
@option(
    "--blocks",
    type=options.blocks,
    metavar="B",
    help="blocks b, or bands under minhash-lsh (default: the current ones while the kind and "
    "k stay, else the kind's own)",
)
@option(
    "--max-distance",
    type=options.max_distance,
    metavar="K",
    help="k: the rule's candidate distance and the index's reach (default: the current one; "
    "with --index, that kind's own: any distance under minhash-lsh, 9 under the others)",
)
@option(
    "--min-similarity",
    type=options.similarity,
    metavar="S",
    help="the sketch similarity that confirms a candidate, recorded as the database's own "
    "(a crawl may ask for another without a reindex); rewrites no key",
)
def reindex(args: argparse.Namespace, out: Output) -> int:
    """rebuild the index for another scheme (kind, blocks, k) or record another rule

    What is not named stays. Options that do not fit together change nothing (exit 2)."""
    choice = IndexChoice(args.index, args.max_distance, args.blocks, args.min_similarity)
    with existing_store(args, convert=True) as store:
        before = IndexSettings(store.scheme, store.database_rule)
        try:  # the options must fit together (and the rule's reach)
            changed_settings(before, choice)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        started = time.monotonic()
        store.reindex(
            blocks=args.blocks,
            max_distance=args.max_distance,
            index=args.index,
            min_similarity=args.min_similarity,
        )
        seconds = time.monotonic() - started
        after = IndexSettings(store.scheme, store.database_rule)
        pages = store.stats().pages
    document = {
        "before": _scheme_document(before),
        "after": _scheme_document(after),
        "pages": pages,
        "seconds": round(seconds, 3),
    }
    lines = [("before", _scheme_line(before)), ("after", _scheme_line(after)), ("pages", pages)]
    out.document(document, [Fields(lines)])
    return 0
