"""Commands that inspect the database: ``stats``, ``dupes``, ``lookup``, ``clusters``."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from simhash_filter.cli import audit, options, skips
from simhash_filter.cli.command import command, domains, limit, option
from simhash_filter.cli.common import (
    SIMILARITY,
    CommandError,
    UsageError,
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
from simhash_filter.cli.templates import template_share
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.simhash import hamming_distance
from simhash_filter.store import FingerprintStore, reports, texts
from simhash_filter.store.records import DuplicateRecord, PageRecord, StoreStats
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


def _stats_document(
    store_url: str,
    numbers: StoreStats,
    rule: MatchRule | None,
    domains: list[reports.DomainCount],
    rows: list[Record],
    size: int | None,
) -> dict[str, Any]:
    """``stats --json``."""
    document: dict[str, Any] = {
        "database": store_url,
        "pages": numbers.pages,
        "duplicates": numbers.dropped_pages,  # distinct URLs: a re-crawl adds no page
        "drop_events": numbers.duplicates,
        "dropped_share": _share(numbers.dropped_pages, numbers.pages),
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
    return document


def _stats_fields(
    document: dict[str, Any], numbers: StoreStats, rule: MatchRule | None, size: int | None
) -> list[tuple[str, object]]:
    """``stats``' lines above the domains."""
    fields: list[tuple[str, object]] = [
        ("database", document["database"]),
        ("pages kept", numbers.pages),
        ("duplicates dropped", numbers.dropped_pages),  # pages: distinct URLs not kept now
        *(
            [("drops logged", f"{numbers.duplicates} (each re-crawl of a dropped page: one more)")]
            if numbers.duplicates != numbers.dropped_pages
            else []
        ),
        ("dropped share", f"{document['dropped_share']:.1%}"),
        ("domains", document["domain_count"]),
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
    return fields


@command("stats")
@domains(10)
def stats(args: argparse.Namespace, out: Output) -> int:
    """pages kept, duplicates dropped, domains, scheme, size"""
    with existing_store(args) as store:
        numbers = store.stats()
        found = reports.domain_counts(store)
        size = reports.database_size(store)
        server = server_settings(store)
        rule = store.rule
    shown = found if args.domains == 0 else found[: args.domains]
    rows: list[Record] = [
        {
            "domain": d.domain,
            "pages": d.pages,
            "duplicates": d.duplicates,
            "dropped_share": _share(d.duplicates, d.pages),
        }
        for d in shown
    ]
    document = _stats_document(store.display_url, numbers, rule, found, rows, size)
    fields = _stats_fields(document, numbers, rule, size)
    if server is not None:
        advised = advice(server)
        document["postgresql"] = _server_document(server, advised)
        fields.extend(_server_fields(server, advised))
    table_rows = [{**row, "dropped_share": f"{row['dropped_share']:.1%}"} for row in rows]
    title = "domains (most dropped first)"
    if len(shown) < len(found):
        title = f"top {len(shown)} of {len(found)} domains (most dropped first; --domains 0: all)"
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
    # superseded: kept, then replaced; canonical: the cluster's canonical, dropped because a
    # copy of it was emitted first (docs/keep.md)
    Column("superseded", "status", optional=True),
]


def explain_columns(keys: bool) -> list[Column]:
    """``dupes --explain``'s columns: how many tables found the candidate, or (``--keys``)
    which keys."""
    found = Column("found_by", "found by (table:key)") if keys else Column("found_in", "found by")
    return [
        *DUPLICATE_COLUMNS[:3],  # dropped at, distance, similarity
        Column("judged_by", "judged by"),
        found,
        Column("boilerplate", "boilerplate"),
        Column("equal_passages", "equal passages", right=True, optional=True),
        *DUPLICATE_COLUMNS[3:],  # url, duplicate of
    ]


@command("dupes")
@option("--domain", help="only pages of this host (example.com, www.example.com)")
@option(
    "--since",
    type=options.since,
    metavar="WHEN",
    help="only pages dropped since WHEN: an ISO date/time (local time unless it has "
    "an offset) or an age such as 30m, 12h, 7d",
)
@option(
    "--explain",
    action="store_true",
    help="say why each page was dropped: what judged it, how many of the index's tables "
    "found its candidate, the boilerplate flag, the stored texts' similarity (needs "
    "stored texts)",
)
@option(
    "--keys",
    action="store_true",
    help="with --explain: list the index keys (table:key) that found the candidate",
)
@option(
    "--events",
    action="store_true",
    help="every drop logged (each re-crawl of a dropped page is one more), not one row a page",
)
@limit(50)
def dupes(args: argparse.Namespace, out: Output) -> int:
    """dropped pages, newest first, with what they duplicate

    One row a page: its latest drop (--events: every drop logged). --explain says why each
    was dropped; --keys adds the index keys that found the candidate (--json always has
    them)."""
    if args.keys and not args.explain:
        raise UsageError("--keys lists the keys --explain found: give --explain too")
    with existing_store(args) as store:
        if args.explain and texts.text_counts(store) == (0, 0):
            raise CommandError(f"no stored texts in {store.display_url}: {audit.NO_TEXT_HINT}")
        records = store.duplicates(
            domain=args.domain.lower() if args.domain else None,
            since=args.since,
            limit=args.limit + 1 if args.limit else None,
            latest=not args.events,
        )
        rows: Iterable[Record] = (duplicate_row(record) for record in records)
        columns = DUPLICATE_COLUMNS
        if args.explain:  # (at most limit + 1 records: the query's own limit)
            rows = audit.explained_rows(store, list(records))
            columns = explain_columns(args.keys)
        out.rows(
            columns,
            limited(rows, args.limit, out, "drops" if args.events else "dropped pages"),
            empty="no dropped pages" + (" match" if args.domain or args.since else ""),
        )
    return 0


# --- lookup ----------------------------------------------------------------------------


def _kept_sections(
    page: PageRecord, document: dict[str, Any], template: list[tuple[str, object]]
) -> list[Section]:
    return [
        Fields(
            [
                ("status", "kept"),
                ("url", page.url),
                ("fingerprint", hex64(page.fingerprint)),
                ("text length", page.text_length),
                ("first seen", iso_time(page.first_seen)),
                ("last seen", iso_time(page.last_seen)),
                ("duplicates dropped", len(document["duplicates"])),
                *template,
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


def _kept_page(
    store: FingerprintStore, query: str, page: PageRecord
) -> tuple[dict[str, Any], list[Section]]:
    """``lookup`` of a kept page: its drops and the other kept pages the index finds."""
    drops = reports.drops_of_page(store, page.page_id)
    own = reports.page_sketches(store, [page.page_id]).get(page.page_id)
    neighbours = [m for m in store.near(page.fingerprint, sketch=own) if m.page_id != page.page_id]
    sketches = reports.page_sketches(store, [m.page_id for m in neighbours])
    template, template_lines = template_share(store, page.url, own, page.page_id)
    document: dict[str, Any] = {
        "query": query,
        "status": "kept",
        **page_fields(page),
        **template,
        "duplicates": [duplicate_row(d) for d in drops],
        "near": [
            {
                "url": m.url,
                "fingerprint": hex64(m.fingerprint),
                "distance": m.distance,
                "similarity": similarity_of(store.rule, own, sketches.get(m.page_id)),
            }
            for m in neighbours
        ],
    }
    return document, _kept_sections(page, document, template_lines)


def _dropped_page(
    query: str,
    drops: list[DuplicateRecord],
    left: PageRecord | None = None,
    template: tuple[dict[str, Any], list[tuple[str, object]]] = ({}, []),
) -> tuple[dict[str, Any], list[Section]]:
    """``lookup`` of a dropped URL: each time it was dropped, and as a copy of what;
    ``left``: its page row when it was kept before and left the index (its re-crawl was
    a copy of another page). A page whose newest record is ``superseded`` (kept, then
    replaced by its canonical copy: docs/keep.md) says so."""
    status = "superseded" if drops[0].superseded else "dropped"
    document: dict[str, Any] = {
        "query": query,
        "status": status,
        "url": drops[0].url,
        "fingerprint": hex64(drops[0].fingerprint),
        "drops": [duplicate_row(d) for d in drops],
        **template[0],
    }
    when_left: list[tuple[str, object]] = []
    if left is not None and left.dropped_at is not None:
        document["left_index_at"] = iso_time(left.dropped_at)
        document["kept_fingerprint"] = hex64(left.fingerprint)
        when_left = [
            (
                "left index",
                f"{iso_time(left.dropped_at)} (kept since {iso_time(left.first_seen)} "
                f"as {hex64(left.fingerprint)}; its re-crawl was a copy of another page)",
            )
        ]
    sections: list[Section] = [
        Fields(
            [
                ("status", status),
                ("url", drops[0].url),
                ("fingerprint", hex64(drops[0].fingerprint)),
                ("times dropped", len(drops)),
                *when_left,
                *template[1],
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
    return document, sections


def _unknown(
    store: FingerprintStore, query: str, tried: list[str]
) -> tuple[dict[str, Any], list[Section]]:
    """``lookup`` of a URL the database does not hold: what the rules would map it to,
    and the schemes tried when it had none."""
    document: dict[str, Any] = {"query": query, "status": "unknown"}
    fields: list[tuple[str, object]] = [
        ("status", "unknown (neither kept, dropped nor skipped)"),
        ("url", query),
    ]
    if tried != [query]:
        document["tried"] = tried
        fields.append(("no scheme", f"looked up as {' and '.join(tried)}"))
    form = skips.mapped_now(store, tried[0])
    if form is not None:
        kept = skips.kept_behind(store, form)
        document["maps_to"], document["kept_url"] = form, kept
        fields.append(("rules map it to", form + (f" (kept page {kept})" if kept else "")))
    return document, [Fields(fields)]


def _look_up(
    store: FingerprintStore, query: str, url: str
) -> tuple[dict[str, Any], list[Section]] | None:
    """``lookup`` of one URL: kept, dropped (or superseded), skipped, else None."""
    page = store.lookup(url)  # (a page that left the index is a drop now)
    if page is not None and page.dropped_at is None:
        return _kept_page(store, query, page)
    if drops := reports.drops_of_url(store, url):
        return _dropped_page(query, drops, page, template_share(store, drops[0].url))
    if skip := skips.find_skip(store, url):
        return skips.skip_document(query, skip)
    return None


@command("lookup")
@option("url", metavar="URL")
def lookup(args: argparse.Namespace, out: Output) -> int:
    """is a URL in the database, and what is known about it: kept, dropped, skipped before
    download (by which rule, and the kept page it maps to), or unknown (exit 1)

    A URL without a scheme is looked up as https:// and http://."""
    tried = skips.candidates(args.url)
    with existing_store(args) as store:
        for url in tried:
            found = _look_up(store, args.url, url)
            if found is not None:
                break
        else:
            document, sections = _unknown(store, args.url, tried)
            out.document(document, sections)
            return 1
    document, sections = found
    if tried != [args.url]:
        out.note(f"(no scheme given: {args.url} looked up as {url})")
    out.document(document, sections)
    return 0


# --- clusters --------------------------------------------------------------------------


@command("clusters")
@option(
    "-k",
    "--k",
    type=options.distance,
    metavar="K",
    help="link kept pages within K of each other (default and maximum: the "
    "database's max_distance)",
)
@option(
    "--min-size",
    type=options.positive_count,
    default=2,
    metavar="N",
    help="clusters of N pages or more",
)
@limit(20)
def clusters(args: argparse.Namespace, out: Output) -> int:
    """groups of near-duplicates: kept pages with their dropped duplicates and with kept
    pages within k of each other, largest first"""
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
