"""Commands that show what the filter compared: ``show``, ``diff`` and the explanation
rows of ``dupes --explain``.

They need the texts a crawl stores with ``SIMHASH_FILTER_STORE_TEXT`` (or ``import
--store-text``); without one, ``show`` and ``diff`` say so in one line and exit 1. Which
index key found a drop's candidate is computed from what is stored (the two fingerprints
and the database's index scheme), not recorded at write time.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from simhash_filter.cli import skips
from simhash_filter.cli.command import command, option
from simhash_filter.cli.common import (
    SIMILARITY_MEASURE,
    CommandError,
    duplicate_row,
    existing_store,
    fingerprinter_for,
    shown_similarity,
    similarity_of,
)
from simhash_filter.cli.output import Fields, Lines, Output, Record, hex64
from simhash_filter.core.simhash import hamming_distance
from simhash_filter.core.stored_text import StoredText, unpack_text
from simhash_filter.core.textdiff import Passage, diff_texts, text_similarity, word_diff
from simhash_filter.index.schemes import IndexScheme, MinHashLshScheme
from simhash_filter.store import FingerprintStore, reports, texts
from simhash_filter.store.records import DuplicateRecord, PageRecord, SchemeMismatchError

PASSAGES_MEASURE = "share of passages in both texts"
"""What ``equal passages`` is: the stored texts compared sentence by sentence (difflib)."""
NO_TEXT_HINT = "texts are stored by a crawl with SIMHASH_FILTER_STORE_TEXT, or import --store-text"
_CONTEXT = 2  # equal passages shown around a change


@dataclass(frozen=True, slots=True)
class AuditedPage:
    """A URL as the database knows it: kept (its page) or dropped (its newest drop),
    with its stored text if any."""

    url: str
    status: str  # "kept" or "dropped"
    fingerprint: int
    page: PageRecord | None
    drop: DuplicateRecord | None
    text: StoredText | None


def audited_page(store: FingerprintStore, url: str) -> AuditedPage:
    """The kept page of ``url``, else its newest drop; a URL without a scheme as https://
    or http://. CommandError when neither, saying so of a URL skipped before download
    (which rule, the page it maps to)."""
    tried = skips.candidates(url)
    for each in tried:
        found = _audited(store, each)
        if found is not None:
            return found
    for each in tried:
        if skip := skips.find_skip(store, each):
            raise CommandError(f"{skip.sentence()}: no text of its own was stored")
    shown = url if tried == [url] else f"{url} (as {' or '.join(tried)})"
    raise CommandError(f"{shown} is neither kept, dropped nor skipped in {store.display_url}")


def _audited(store: FingerprintStore, url: str) -> AuditedPage | None:
    page = store.lookup(url)
    if page is not None:
        blob = texts.page_texts(store, [page.page_id]).get(page.page_id)
        stored = None if blob is None else unpack_text(blob)
        return AuditedPage(page.url, "kept", page.fingerprint, page, None, stored)
    drops = reports.drops_of_url(store, url, limit=1)
    if not drops:
        return None
    drop = drops[0]
    blob = texts.drop_texts(store, [drop.duplicate_id]).get(drop.duplicate_id)
    stored = None if blob is None else unpack_text(blob)
    return AuditedPage(drop.url, "dropped", drop.fingerprint, None, drop, stored)


def _require_text(page: AuditedPage) -> StoredText:
    if page.text is None:
        raise CommandError(f"no stored text for {page.url} ({page.status}): {NO_TEXT_HINT}")
    return page.text


# --- show ------------------------------------------------------------------------------


@command("show")
@option("url", metavar="URL")
def show(args: argparse.Namespace, out: Output) -> int:
    """the stored text of a kept or dropped page

    The text alone on stdout; --json adds its status, fingerprint and whether it was cut
    at 64 KiB."""
    with existing_store(args) as store:
        page = audited_page(store, args.url)
    stored = _require_text(page)
    document: dict[str, Any] = {
        "url": page.url,
        "status": page.status,
        "fingerprint": hex64(page.fingerprint),
        "truncated": stored.truncated,
        "text": stored.text,
    }
    if page.drop is not None:
        document["duplicate_of"] = page.drop.duplicate_of_url
    if stored.truncated:
        out.note(f"(the stored text of {page.url} was cut at 64 KiB)")
    out.document(document, [Lines(stored.text.splitlines())])
    return 0


# --- diff ------------------------------------------------------------------------------


def _pair_similarity(store: FingerprintStore, a: AuditedPage, b: AuditedPage) -> float | None:
    """The sketches' similarity of two pages: as logged for a drop and the page it was
    dropped against, computed for two kept pages, else unknown (a drop's sketch is not
    kept)."""
    for x, y in ((a, b), (b, a)):
        if x.drop is not None and y.page is not None and x.drop.duplicate_of_url == y.url:
            return shown_similarity(x.drop.similarity)
    if a.page is not None and b.page is not None:
        sketches = reports.page_sketches(store, [a.page.page_id, b.page.page_id])
        return similarity_of(store.rule, sketches.get(a.page.page_id), sketches.get(b.page.page_id))
    return None


def diff_lines(steps: Iterable[Passage]) -> list[str]:
    """A diff as text: ``  `` equal passages (runs cut to their ends), ``- `` only in
    A, ``+ `` only in B, ``~ `` changed, the words marked ``[-gone-]{+new+}``."""
    lines: list[str] = []
    steps = list(steps)
    for n, step in enumerate(steps):
        if step.op == "equal":
            keep_head = _CONTEXT if n + 1 < len(steps) else 0
            keep_tail = _CONTEXT if n > 0 else 0
            shown = list(step.a)
            if len(shown) > keep_head + keep_tail + 1:
                hidden = len(shown) - keep_head - keep_tail
                head, tail = shown[:keep_tail], shown[len(shown) - keep_head :]
                lines += [f"  {p}" for p in head]
                lines.append(f"  ... {hidden} equal passages ...")
                lines += [f"  {p}" for p in tail]
            else:
                lines += [f"  {p}" for p in shown]
        elif step.op == "delete":
            lines += [f"- {p}" for p in step.a]
        elif step.op == "insert":
            lines += [f"+ {p}" for p in step.b]
        else:
            for old, new in zip(step.a, step.b, strict=False):
                marked = "".join(
                    piece.text
                    if piece.op == "equal"
                    else f"[-{piece.text}-]"
                    if piece.op == "delete"
                    else f"{{+{piece.text}+}}"
                    for piece in word_diff(old, new)
                )
                lines.append(f"~ {marked}")
            lines += [f"- {p}" for p in step.a[len(step.b) :]]
            lines += [f"+ {p}" for p in step.b[len(step.a) :]]
    return lines


@command("diff")
@option("a", metavar="A", help="URL of a kept or dropped page")
@option("b", metavar="B", help="URL of another kept or dropped page")
def diff(args: argparse.Namespace, out: Output) -> int:
    """two pages' stored texts side by side: changed passages marked, distance, similarity"""
    with existing_store(args) as store:
        a, b = audited_page(store, args.a), audited_page(store, args.b)
        similarity = _pair_similarity(store, a, b)
    text_a, text_b = _require_text(a), _require_text(b)
    steps = diff_texts(text_a.text, text_b.text)
    distance = hamming_distance(a.fingerprint, b.fingerprint)
    changed = sum(max(len(s.a), len(s.b)) for s in steps if s.op != "equal")
    document: dict[str, Any] = {
        "a": {"url": a.url, "status": a.status, "fingerprint": hex64(a.fingerprint)},
        "b": {"url": b.url, "status": b.status, "fingerprint": hex64(b.fingerprint)},
        "distance": distance,
        "similarity": similarity,
        "equal_passages": round(text_similarity(steps), 3),
        "text_similarity": round(text_similarity(steps), 3),  # (equal_passages' old name)
        "changed_passages": changed,
        "passages": [{"op": s.op, "a": list(s.a), "b": list(s.b)} for s in steps],
    }
    fields = Fields(
        [
            ("a", f"{a.url} ({a.status})"),
            ("b", f"{b.url} ({b.status})"),
            ("distance", f"{distance} bits"),
            (
                "similarity",
                "unknown (no sketch of both)"
                if similarity is None
                else f"{similarity:.4g} ({SIMILARITY_MEASURE})",
            ),
            ("equal passages", f"{document['equal_passages']:.4g} ({PASSAGES_MEASURE})"),
            ("changed passages", changed),
        ]
    )
    out.document(document, [fields, Lines(diff_lines(steps), title="- only in a, + only in b")])
    return 0


# --- dupes --explain -------------------------------------------------------------------


def finding_keys(
    scheme: IndexScheme,
    dropped: int,
    dropped_sketch: bytes | None,
    kept: int,
    kept_sketch: bytes | None,
) -> list[tuple[int, int]]:
    """The (table, key) pairs under which the dropped page's probe found the kept page:
    its probe keys that are among the kept page's index keys (from the fingerprints, and
    under a sketch-keyed index the sketches)."""
    stored = set(scheme.index_items(kept, kept_sketch))
    return sorted(key for key in set(scheme.probe_keys(dropped, dropped_sketch)) if key in stored)


def found_in(scheme: IndexScheme, keys: list[tuple[int, int]]) -> str | None:
    """How many of the index's tables found a candidate, in words: ``3 of 18 bands``
    (MinHash LSH), ``1 of 4 tables`` (simhash tables; under LSH, those of the pages without a
    sketch)."""
    if not keys:
        return None
    tables = {table for table, _ in keys}
    if isinstance(scheme, MinHashLshScheme):
        bands = sum(1 for table in tables if table < scheme.n_blocks)
        if bands:
            return f"{bands} of {scheme.n_blocks} bands"
        fallback = scheme.n_tables - scheme.n_blocks
        return f"{len(tables)} of {fallback} simhash tables (pages without a sketch)"
    return f"{len(tables)} of {scheme.n_tables} tables"


def _text_sketch(store: FingerprintStore, text: str | None) -> bytes | None:
    """A dropped page's sketch (not stored) made again from its stored text, where the
    index needs one and the database's spec is this simhash-filter's; else None."""
    if text is None or not store.scheme.sketch_keyed:
        return None
    try:
        return fingerprinter_for(store.spec).sketch(text)
    except SchemeMismatchError:
        return None


def explained_rows(store: FingerprintStore, records: list[DuplicateRecord]) -> list[Record]:
    """``dupes`` rows with why each drop happened: what judged it (the sketches, or the
    distance alone), the threshold, the index table and key that found the candidate,
    the boilerplate flag, and the two stored texts' similarity when both are stored."""
    kept_ids = {
        url: page.page_id
        for url in {r.duplicate_of_url for r in records}
        if (page := store.lookup(url)) is not None
    }
    drop_blobs = texts.drop_texts(store, [r.duplicate_id for r in records])
    page_blobs = texts.page_texts(store, kept_ids.values())
    sketches = reports.page_sketches(store, kept_ids.values())
    rule, scheme = store.rule, store.scheme
    rows: list[Record] = []
    for record in records:
        kept_id = kept_ids.get(record.duplicate_of_url, -1)
        drop_blob, page_blob = drop_blobs.get(record.duplicate_id), page_blobs.get(kept_id)
        drop_text = None if drop_blob is None else unpack_text(drop_blob).text
        keys = finding_keys(
            scheme,
            record.fingerprint,
            _text_sketch(store, drop_text),
            record.duplicate_of_fingerprint,
            sketches.get(kept_id),
        )
        text_share = None
        if drop_text is not None and page_blob is not None:
            steps = diff_texts(drop_text, unpack_text(page_blob).text)
            text_share = round(text_similarity(steps), 3)
        if record.similarity is not None and rule is not None:
            judged = f"sketch similarity >= {rule.min_similarity}"
        else:
            limit = store.scheme.max_distance if rule is None else rule.fallback_distance
            judged = f"distance <= {limit}"
        rows.append(
            {
                **duplicate_row(record),
                "judged_by": judged,
                "found_in": found_in(scheme, keys),
                "found_by": " ".join(f"t{t}:{key:x}" for t, key in keys) or None,
                # a match flagged as boilerplate is admitted, so a logged drop never is one
                "boilerplate": False,
                "equal_passages": text_share,
                "text_similarity": text_share,  # (its name before 0.x: equal_passages)
                "texts_stored": [drop_blob is not None, page_blob is not None],
            }
        )
    return rows
