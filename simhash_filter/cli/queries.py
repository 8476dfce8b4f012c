"""Commands that inspect the database: ``stats``, ``dupes``, ``lookup``, ``clusters``."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from simhash_filter.cli import audit
from simhash_filter.cli.common import (
    SIMILARITY,
    CommandError,
    check_k,
    duplicate_row,
    existing_store,
    limited,
    page_fields,
    shown_similarity,
    similarity_of,
)
from simhash_filter.cli.output import (
    Column,
    Fields,
    Output,
    Record,
    Section,
    Table,
    hex64,
    iso_time,
)
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.simhash import hamming_distance
from simhash_filter.store import reports, texts
from simhash_filter.store.records import DuplicateRecord, PageRecord
from simhash_filter.store.server_settings import Advice, ServerSettings, advice, server_settings

# --- stats -----------------------------------------------------------------------------


def _size(size: int | None) -> str | None:
    if size is None:
        return None
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    value, unit = float(size), 0
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    return f"{size} bytes" if unit == 0 else f"{value:.1f} {units[unit]} ({size} bytes)"


def _server_document(server: ServerSettings, found: list[Advice]) -> dict[str, Any]:
    """``stats --json``'s PostgreSQL settings, with the advice on them."""
    return {**server._asdict(), "advice": [a._asdict() for a in found]}


def _server_fields(server: ServerSettings, found: list[Advice]) -> list[tuple[str, object]]:
    """``stats``' lines on PostgreSQL's settings: the indexes' size, the settings that
    decide a check's cost on a large index, and what to change (docs/distributed.md)."""
    fields: list[tuple[str, object]] = [
        ("indexes", _size(server.index_bytes)),
        ("shared_buffers", _size(server.shared_buffers)),
        ("max_wal_size", _size(server.max_wal_size)),
        ("checkpoint_timeout", f"{server.checkpoint_timeout_s} s"),
        ("wal_compression", server.wal_compression),
    ]
    for a in found:
        wanted = f"raise {a.setting} to at least {_size(a.wanted)}"
        fields.append(("advice", f"{wanted}: {a.why} (docs/distributed.md)"))
    return fields


def _share(dropped: int, kept: int) -> float:
    """The dropped fraction of everything seen, rounded for output."""
    return round(dropped / (dropped + kept), 4) if dropped + kept else 0.0


def _rule_text(rule: MatchRule | None, max_distance: int) -> str:
    """The stored match rule as ``stats`` prints it: each threshold by its name."""
    if rule is None:
        return f"none (the simhash distance alone: within k={max_distance})"
    return " ".join(f"{name}={value}" for name, value in dataclasses.asdict(rule).items())


def stats(args: argparse.Namespace, out: Output) -> int:
    """``stats``: pages kept, duplicates dropped, domains, scheme, spec, size."""
    with existing_store(args) as store:
        numbers = store.stats()
        domains = reports.domain_counts(store)
        size = reports.database_size(store)
        server = server_settings(store)
        rule = store.rule
    shown = domains if args.domains == 0 else domains[: args.domains]
    rows: list[Record] = [
        {
            "domain": d.domain,
            "pages": d.pages,
            "duplicates": d.duplicates,
            "dropped_share": _share(d.duplicates, d.pages),
        }
        for d in shown
    ]
    document: dict[str, Any] = {
        "database": store.display_url,
        "pages": numbers.pages,
        "duplicates": numbers.duplicates,
        "dropped_share": _share(numbers.duplicates, numbers.pages),
        "domain_count": len(domains),
        "scheme": {
            "index": numbers.extra["index"],
            "bits": numbers.bits,
            "max_distance": numbers.max_distance,
            "blocks": numbers.blocks,
            "tables": numbers.tables,
        },
        "rule": None if rule is None else dataclasses.asdict(rule),
        "spec": numbers.spec,
        "schema_version": numbers.schema_version,
        "size_bytes": size,
        "domains": rows,
    }
    if numbers.extra.get("created_at"):
        document["created_at"] = iso_time(datetime.fromisoformat(numbers.extra["created_at"]))
    fields: list[tuple[str, object]] = [
        ("database", document["database"]),
        ("pages kept", numbers.pages),
        ("duplicates dropped", numbers.duplicates),
        ("dropped share", f"{document['dropped_share']:.1%}"),
        ("domains", len(domains)),
        (
            "scheme",
            f"f={numbers.bits} k={numbers.max_distance} blocks={numbers.blocks} "
            f"tables={numbers.tables}",
        ),
        ("index", numbers.extra["index"]),
        ("match rule", _rule_text(rule, numbers.max_distance)),
        ("spec", numbers.spec),
        ("schema version", numbers.schema_version),
        ("size", _size(size)),
    ]
    if "created_at" in document:
        fields.append(("created", document["created_at"]))
    if server is not None:
        found = advice(server)
        document["postgresql"] = _server_document(server, found)
        fields.extend(_server_fields(server, found))
    table_rows = [{**row, "dropped_share": f"{row['dropped_share']:.1%}"} for row in rows]
    title = "domains (most dropped first)"
    if len(shown) < len(domains):
        title = f"top {len(shown)} of {len(domains)} domains (most dropped first; --domains 0: all)"
    out.document(
        document,
        [
            Fields(fields),
            Table(
                [
                    Column("domain", "domain"),
                    Column("pages", "kept", right=True),
                    Column("duplicates", "dropped", right=True),
                    Column("dropped_share", "dropped %", right=True),
                ],
                table_rows,
                title=title,
            ),
        ],
    )
    return 0


# --- dupes -----------------------------------------------------------------------------


DUPLICATE_COLUMNS = [
    Column("seen_at", "dropped at"),
    Column("distance", "distance", right=True),
    SIMILARITY,
    Column("url", "url"),
    Column("duplicate_of", "duplicate of"),
    # kept, then replaced by the copy its cluster's hints name (docs/keep.md)
    Column("superseded", "status", optional=True),
]


EXPLAIN_COLUMNS = [
    *DUPLICATE_COLUMNS[:3],  # dropped at, distance, similarity
    Column("judged_by", "judged by"),
    Column("found_by", "found by (table:key)"),
    Column("boilerplate", "boilerplate"),
    Column("text_similarity", "text sim.", right=True, optional=True),
    *DUPLICATE_COLUMNS[3:],  # url, duplicate of
]


def dupes(args: argparse.Namespace, out: Output) -> int:
    """``dupes``: dropped pages, newest first, each with the page it duplicates;
    ``--explain`` says why each was dropped (audit.explained_rows)."""
    with existing_store(args) as store:
        if args.explain and texts.text_counts(store) == (0, 0):
            raise CommandError(f"no stored texts in {store.display_url}: {audit.NO_TEXT_HINT}")
        records = store.duplicates(
            domain=args.domain.lower() if args.domain else None,
            since=args.since,
            limit=args.limit + 1 if args.limit else None,
        )
        rows: Iterable[Record] = (duplicate_row(record) for record in records)
        columns = DUPLICATE_COLUMNS
        if args.explain:  # (at most limit + 1 records: the query's own limit)
            rows, columns = audit.explained_rows(store, list(records)), EXPLAIN_COLUMNS
        out.rows(
            columns,
            limited(rows, args.limit, out, "dropped pages"),
            empty="no dropped pages" + (" match" if args.domain or args.since else ""),
        )
    return 0


# --- lookup ----------------------------------------------------------------------------


def lookup(args: argparse.Namespace, out: Output) -> int:
    """``lookup URL``: kept, dropped (as a duplicate of what), or unknown."""
    with existing_store(args) as store:
        page = store.lookup(args.url)
        similarities: dict[int, float | None] = {}
        if page is not None:
            drops = reports.drops_of_page(store, page.page_id)
            own = reports.page_sketches(store, [page.page_id]).get(page.page_id)
            neighbours = [
                m for m in store.near(page.fingerprint, sketch=own) if m.page_id != page.page_id
            ]
            sketches = reports.page_sketches(store, [m.page_id for m in neighbours])
            similarities = {
                m.page_id: similarity_of(store.rule, own, sketches.get(m.page_id))
                for m in neighbours
            }
        else:
            drops = reports.drops_of_url(store, args.url)
            neighbours = []
    if page is not None:
        document: dict[str, Any] = {
            "query": args.url,
            "status": "kept",
            **page_fields(page),
            "duplicates": [duplicate_row(d) for d in drops],
            "near": [
                {
                    "url": m.url,
                    "fingerprint": hex64(m.fingerprint),
                    "distance": m.distance,
                    "similarity": similarities.get(m.page_id),
                }
                for m in neighbours
            ],
        }
        sections: list[Section] = [
            Fields(
                [
                    ("status", "kept"),
                    ("url", page.url),
                    ("fingerprint", hex64(page.fingerprint)),
                    ("text length", page.text_length),
                    ("first seen", iso_time(page.first_seen)),
                    ("last seen", iso_time(page.last_seen)),
                    ("duplicates dropped", len(drops)),
                ]
            ),
            Table(
                [
                    Column("seen_at", "dropped at"),
                    Column("distance", "distance", right=True),
                    SIMILARITY,
                    Column("url", "dropped url"),
                ],
                document["duplicates"],
                title="its dropped duplicates",
            ),
            Table(
                [Column("distance", "distance", right=True), SIMILARITY, Column("url", "url")],
                document["near"],
                title="other kept pages within k",
            ),
        ]
    elif drops:
        status = "superseded" if drops[0].superseded else "dropped"  # the newest record's
        document = {
            "query": args.url,
            "status": status,
            "url": drops[0].url,
            "fingerprint": hex64(drops[0].fingerprint),
            "drops": [duplicate_row(d) for d in drops],
        }
        sections = [
            Fields(
                [
                    ("status", status),
                    ("url", drops[0].url),
                    ("fingerprint", hex64(drops[0].fingerprint)),
                    ("times dropped", len(drops)),
                ]
            ),
            Table(
                [
                    Column("seen_at", "dropped at"),
                    Column("distance", "distance", right=True),
                    SIMILARITY,
                    Column("duplicate_of", "duplicate of"),
                    Column("superseded", "status", optional=True),
                ],
                document["drops"],
                title="dropped as a near-duplicate of",
            ),
        ]
    else:
        document = {"query": args.url, "status": "unknown"}
        sections = [Fields([("status", "unknown (neither kept nor dropped)"), ("url", args.url)])]
    out.document(document, sections)
    return 0


# --- clusters --------------------------------------------------------------------------


def clusters(args: argparse.Namespace, out: Output) -> int:
    """``clusters``: kept pages with their dropped duplicates, joined with the kept
    pages within k of them (possible after k was raised), largest first."""
    with existing_store(args) as store:
        k = check_k(store, args.k)
        found = reports.clusters(store, k, min_size=args.min_size)
        total = len(found)
        if args.limit:
            found = found[: args.limit]
        wanted = [i for c in found for i in c.page_ids]
        pages = reports.pages_by_id(store, wanted)
        drops = reports.drops_of_pages(store, wanted)
        sketches = reports.page_sketches(store, wanted)
        rule = store.rule
    if args.limit and total > args.limit:
        out.note(f"(showing the {args.limit} largest of {total} clusters; --limit 0 shows all)")
    documents = [
        _cluster_document(n, c, pages, drops, sketches, rule) for n, c in enumerate(found, start=1)
    ]
    columns = [
        Column("role", "role"),
        Column("distance", "distance", right=True),
        SIMILARITY,
        Column("fingerprint", "fingerprint"),
        Column("url", "url"),
        Column("duplicate_of", "duplicate of"),
    ]

    def sections(items: list[Record]) -> list[Section]:
        return [
            Table(
                columns,
                item["pages"],
                title=f"cluster {item['cluster']}: {item['size']} pages "
                f"({item['kept']} kept, {item['dropped']} dropped)",
            )
            for item in items
        ]

    out.rows(columns, documents, empty="no clusters", sections=sections)
    return 0


def _cluster_document(
    number: int,
    cluster: reports.Cluster,
    pages: dict[int, PageRecord],
    drops: dict[int, list[DuplicateRecord]],
    sketches: dict[int, bytes],
    rule: MatchRule | None,
) -> Record:
    kept = [pages[i] for i in cluster.page_ids if i in pages]
    # The representative: the kept page most dropped against, then the oldest.
    kept.sort(key=lambda p: (-len(drops.get(p.page_id, [])), p.first_seen, p.url))
    head = kept[0]
    entries: list[dict[str, Any]] = [
        {
            "role": "kept",
            "url": p.url,
            "fingerprint": hex64(p.fingerprint),
            "distance": hamming_distance(p.fingerprint, head.fingerprint),
            "similarity": similarity_of(rule, sketches.get(p.page_id), sketches.get(head.page_id)),
        }
        for p in kept
    ]
    entries[1:] = sorted(entries[1:], key=lambda e: (e["distance"], e["url"]))
    dropped_entries: dict[str, dict[str, Any]] = {}
    for page in kept:
        for record in drops.get(page.page_id, []):
            dropped_entries.setdefault(  # newest drop of each URL (records are newest first)
                record.url,
                {
                    "role": "dropped",
                    "url": record.url,
                    "fingerprint": hex64(record.fingerprint),
                    "distance": hamming_distance(record.fingerprint, head.fingerprint),
                    # (as logged when it was dropped: with the page it duplicates)
                    "similarity": shown_similarity(record.similarity),
                    "duplicate_of": record.duplicate_of_url,
                },
            )
    entries += sorted(dropped_entries.values(), key=lambda e: (e["distance"], e["url"]))
    return {
        "cluster": number,
        "size": len(entries),
        "kept": len(kept),
        "dropped": len(dropped_entries),
        "pages": entries,
    }
