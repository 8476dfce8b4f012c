"""Commands that fingerprint something and compare it: ``near`` and ``fingerprint``.

What to compare is TARGET — a stored URL, a 16-digit hex fingerprint, an HTML or text
file, ``-`` for stdin — or ``--text``. Texts are fingerprinted with the Fingerprinter
the database's spec calls for; HTML goes through the crawl's extraction first.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simhash_filter.cli import options
from simhash_filter.cli.command import Handler, command, limit, option
from simhash_filter.cli.common import (
    SIMILARITY,
    SIMILARITY_MEASURE,
    CommandError,
    UsageError,
    check_k,
    database_url,
    display_url,
    existing_store,
    fingerprinter_for,
    limited,
    shown_similarity,
    similarity_of,
)
from simhash_filter.cli.importers import HTML_SUFFIXES
from simhash_filter.cli.output import Column, Fields, Output, Section, Table, hex64
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.passage import query_groups
from simhash_filter.core.simhash import BITS, hamming_distance
from simhash_filter.core.sketch import contained_share, passage_hashes
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.index.schemes import MINHASH_LSH
from simhash_filter.store import FingerprintStore, passage_index, reports, texts
from simhash_filter.store.batch import Judge
from simhash_filter.store.records import DatabaseNotFoundError, Match

# --- fingerprints of inputs ------------------------------------------------------------


HEX_FINGERPRINT = re.compile(r"(?:0x)?([0-9a-fA-F]{16})")
URL_LIKE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
HTML_SNIFF = re.compile(rb"<(?:!doctype\s+html|html|head|body)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Query:
    """What ``near``/``fingerprint`` work on: a fingerprint, and the text when known."""

    source: str  # for messages and output: the URL, file name, <stdin>, --text, hex
    fingerprint: int | None  # None: a text too short to fingerprint (a passage search)
    text: str | None = None
    stored_url: str | None = None  # the canonical URL, when it came from the database
    sketch: bytes | None = None  # its second signature, when known: for the similarities
    logged: tuple[str, float | None] | None = None  # a drop: (the page it copies, as logged)


def _looks_like_html(path: str, body: bytes) -> bool:
    if path.lower().endswith(HTML_SUFFIXES):
        return True
    return HTML_SNIFF.search(body[:4096]) is not None


def _read_input(args: argparse.Namespace) -> tuple[str, str]:
    """(source name, text) of --text, stdin or a file; HTML goes through extraction."""
    if args.text is not None:
        return "--text", args.text
    target: str = args.target
    if target == "-":
        source, body = "<stdin>", sys.stdin.buffer.read()
    else:
        path = Path(target)
        if not path.is_file():
            raise CommandError(
                f"{target}: no such file (and not a URL or a 16-digit hex fingerprint)"
            )
        source, body = target, path.read_bytes()
    is_html = args.input_type == "html" or (
        args.input_type == "auto" and _looks_like_html(source, body)
    )
    if is_html:
        from simhash_filter.page.extract import extract_text

        text = extract_text(body)
        if text is None:
            raise CommandError(f"{source}: no main text found in the HTML")
        return source, text
    return source, body.decode("utf-8", errors="replace")


def _fingerprint_text(fingerprinter: Fingerprinter, source: str, text: str) -> int:
    fingerprint = fingerprinter.fingerprint(text)
    if fingerprint is None:
        tokens = len(fingerprinter.tokens(text))
        raise CommandError(
            f"{source}: too little text to fingerprint ({tokens} token{'s' * (tokens != 1)}; "
            f"the minimum is {fingerprinter.min_tokens})"
        )
    return fingerprint


def _stored_fingerprint(store: FingerprintStore, url: str) -> Query:
    page = store.lookup(url)
    if page is not None and page.dropped_at is None:  # (else: it left the index, a drop now)
        sketch = reports.page_sketches(store, [page.page_id]).get(page.page_id)
        return Query(url, page.fingerprint, stored_url=page.url, sketch=sketch)
    drops = reports.drops_of_url(store, url, limit=1)
    if drops:
        return Query(url, drops[0].fingerprint, stored_url=drops[0].url)
    raise CommandError(f"{url}: not in the database (neither kept nor dropped)")


def _is_reference(args: argparse.Namespace) -> bool:
    """True when TARGET names a stored URL or a hex fingerprint, not a text."""
    if args.text is not None:
        return False
    target: str = args.target
    if URL_LIKE.match(target):
        return True
    return HEX_FINGERPRINT.fullmatch(target) is not None and not Path(target).exists()


def _check_target(args: argparse.Namespace) -> None:
    if args.text is not None and args.target is not None:
        raise UsageError("give TARGET or --text, not both")
    if args.text is None and args.target is None:
        raise UsageError("give TARGET (a URL, a fingerprint, a file or -) or --text")


def _reference_query(args: argparse.Namespace, store: FingerprintStore | None) -> Query:
    target: str = args.target
    if URL_LIKE.match(target):
        if store is None:
            raise DatabaseNotFoundError(
                f"no database at {display_url(database_url(args.db))} to look {target} up in"
            )
        return _stored_fingerprint(store, target)
    match = HEX_FINGERPRINT.fullmatch(target)
    assert match is not None
    return Query(match.group(1).lower(), int(match.group(1), 16))


def target(what: str) -> Callable[[Handler], Handler]:
    """TARGET, ``--text`` and ``--as``: what ``near`` and ``fingerprint`` work on."""

    def declare(handler: Handler) -> Handler:
        for declared in reversed(
            (
                option(
                    "target",
                    nargs="?",
                    metavar="TARGET",
                    help=f"{what}: a URL in the database, a 16-digit hex fingerprint, "
                    "an HTML or text file, or - for stdin",
                ),
                option("--text", help="use this text instead of TARGET"),
                option(
                    "--as",
                    dest="input_type",
                    choices=("auto", "html", "text"),
                    default="auto",
                    help="read a file or stdin as HTML or as plain text (default: guess)",
                ),
            )
        ):
            handler = declared(handler)
        return handler

    return declare


# --- near ------------------------------------------------------------------------------


CONTAINED_MIN = 0.5
"""``near`` on a text lists the stored pages holding at least this share of its 5-grams."""
CANDIDATES = 200
"""Pages a group of the text's terms finds in the passage index, at most."""
CHECKED = 50
"""Pages the passage index found whose stored texts are read and measured, at most (those
holding the most groups of the text's terms first)."""


def _sketched(store: FingerprintStore, query: Query) -> tuple[Query, str | None]:
    """A dropped URL's query with a sketch to find and rank its neighbours by: its stored
    text's (``STORE_TEXT``), else that of the page it was dropped as a copy of (which the
    sketches confirmed alike). Under the minhash-lsh index a bare fingerprint finds pages
    by a scan within any distance: everything, unranked."""
    drops = reports.drops_of_url(store, query.source, limit=1)
    if not drops:
        return query, None
    drop = drops[0]
    text = texts.drop_texts(store, [drop.duplicate_id]).get(drop.duplicate_id)
    if text is not None:
        sketch = fingerprinter_for(store.spec).sketch(unpack_text(text).text)
        return Query(query.source, query.fingerprint, stored_url=drop.url, sketch=sketch), None
    original = store.lookup(drop.duplicate_of_url)
    if original is None:
        return query, None
    kept = reports.page_sketches(store, [original.page_id]).get(original.page_id)
    if kept is None:
        return query, None
    note = (
        f"(no sketch is stored for a dropped page: its neighbours are those of "
        f"{original.url}, the page it was dropped as a copy of)"
    )
    logged = (original.url, shown_similarity(drop.similarity))  # not its own sketch's 1
    return Query(
        query.source, query.fingerprint, stored_url=drop.url, sketch=kept, logged=logged
    ), note


def _shares(part: npt.NDArray[np.uint64], blobs: Iterable[tuple[int, bytes]]) -> dict[int, float]:
    return {
        page_id: round(contained_share(part, passage_hashes(unpack_text(blob).text)), 3)
        for page_id, blob in blobs
    }


def _containing(
    store: FingerprintStore, text: str, also: Iterable[int] = ()
) -> tuple[dict[int, float] | None, str]:
    """How much of ``text`` (a passage: its sketch is too unlike a whole page's for the
    index to find it) the stored texts that hold it hold, and a note saying what was read;
    None, and why it cannot be answered, when no text is stored. The database's passage
    index finds the pages holding a stretch of its words (store/passage_index.py); those
    most often found are read and their real overlap measured. Without the index (being
    filled by another process) every stored text is read. ``also``: pages to measure too
    (those the fingerprint index found)."""
    part = passage_hashes(text)
    if passage_index.is_complete(store):
        found = passage_index.candidates(store, query_groups(text), CANDIDATES)
        checked = {*sorted(found, key=lambda i: (-found[i], i))[:CHECKED], *also}
        shares = _shares(part, texts.page_texts(store, checked).items())
        n = len(found)
        searched = (
            f"the passage index ({n} stored text{'s' * (n != 1)} with its words, "
            f"{len(shares)} read)"
        )
    else:
        shares = _shares(part, texts.iter_page_texts(store))
        searched = f"the {len(shares)} stored texts (the passage index is being built)"
    if not shares and not texts.has_page_texts(store):
        return None, (
            "(a passage is much less alike a whole page than the page's copies are, so the "
            "index cannot find the page it comes from; with SIMHASH_FILTER_STORE_TEXT the "
            "stored texts would be searched for it)"
        )
    return shares, (
        f"(searched {searched} for pages holding at least {CONTAINED_MIN:.0%} of the text: "
        "'contains')"
    )


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A stored page ``near`` lists: the match, the sketches' similarity, and the share of
    the query text its stored text holds (when that was searched)."""

    match: Match
    similarity: float | None
    contains: float | None = None

    def rank(self) -> tuple[float, float, int, str]:
        """Most alike first: containing the text, then similarity, distance, URL."""
        contains, alike = self.contains, self.similarity
        return (
            -(-1.0 if contains is None else contains),
            -(-1.0 if alike is None else alike),
            self.match.distance,
            self.match.url,
        )


def _neighbours(store: FingerprintStore, query: Query, k: int) -> tuple[list[Neighbour], str]:
    """The stored pages the index finds for ``query``, and, for a text no stored page is
    a copy of, those whose stored text contains it (with a note on that search)."""
    rule = store.rule
    found = {
        m.page_id: m
        for m in (
            store.near(query.fingerprint, k, sketch=query.sketch)
            if query.fingerprint is not None
            else []
        )
        if m.url != query.stored_url
    }
    contained: dict[int, float] | None = None
    note = ""
    sketches = reports.page_sketches(store, found)
    judge = Judge(k, rule)  # the store's own verdict: is a found page a copy of the text?
    copies = [
        m
        for i, m in found.items()
        if (judged := judge(m.distance, query.sketch, sketches.get(i))) is not None and judged.copy
    ]
    if query.text is not None and not copies:
        contained, note = _containing(store, query.text, found)
        holding = {i for i, share in (contained or {}).items() if share >= CONTAINED_MIN}
        for page_id, page in reports.pages_by_id(store, holding - set(found)).items():
            distance = hamming_distance(page.fingerprint, query.fingerprint or page.fingerprint)
            found[page_id] = Match(page.url, page.fingerprint, distance, page_id)
        sketches = reports.page_sketches(store, found)
    neighbours = [
        Neighbour(
            m,
            query.logged[1]
            if query.logged is not None and m.url == query.logged[0]
            else similarity_of(rule, query.sketch, sketches.get(i)),
            None if contained is None else contained.get(i, 0.0),
        )
        for i, m in found.items()
    ]
    return sorted(neighbours, key=Neighbour.rank), note


def _heading(store: FingerprintStore, query: Query, k: int) -> str:
    """What ``near`` lists, in the words of the index that found it (a fingerprinted
    query: one too short to fingerprint is a passage search alone)."""
    assert query.fingerprint is not None
    fingerprint = hex64(query.fingerprint)
    if store.scheme.kind == MINHASH_LSH and query.sketch is not None:
        bits = f"within {k} bits" if k < BITS else "at any simhash distance"
        found = f"kept pages sharing a band of the index with {query.source} ({bits})"
    elif store.scheme.kind == MINHASH_LSH:
        reach = f"within {k} bits of" if k < BITS else "at any simhash distance from"
        source = "" if query.source == fingerprint else f"{query.source}, "
        found = (
            f"kept pages {reach} {fingerprint} ({source}no sketch: every stored simhash is read)"
        )
    else:
        found = f"kept pages within {k} bits of {fingerprint} ({query.source})"
    return f"{found}, most alike first; similarity: {SIMILARITY_MEASURE}:"


@command("near")
@target("what to compare")
@option(
    "-k",
    "--k",
    type=options.distance,
    metavar="K",
    help="maximum Hamming distance (default: the database's max_distance)",
)
@limit(50)
def near(args: argparse.Namespace, out: Output) -> int:
    """stored pages near a page, text or fingerprint, most alike first"""
    _check_target(args)
    notes: list[str] = []
    with existing_store(args) as store:
        if _is_reference(args):
            query = _reference_query(args, store)
            if query.sketch is None and query.stored_url is not None:
                query, note = _sketched(store, query)
                notes += [note] if note else []
        else:
            fingerprinter = fingerprinter_for(store.spec)
            source, text = _read_input(args)
            fingerprint = fingerprinter.fingerprint(text)  # None: a passage search alone
            sketch = None if fingerprint is None else fingerprinter.sketch(text)
            query = Query(source, fingerprint, text, sketch=sketch)
        k = check_k(store, args.k)
        neighbours, searched = _neighbours(store, query, k)
    if query.fingerprint is None:
        out.note(f"stored pages holding the text ({query.source}: too short to fingerprint):")
    else:
        out.note(_heading(store, query, k))
    for note in [*notes, searched]:
        if note:
            out.note(note)
    rows = (
        {
            "url": n.match.url,
            "fingerprint": hex64(n.match.fingerprint),
            "distance": None if query.fingerprint is None else n.match.distance,
            "similarity": n.similarity,
            **({} if n.contains is None else {"contains": n.contains}),
        }
        for n in neighbours
    )
    out.rows(
        [
            Column("distance", "distance", right=True, optional=True),  # (no fingerprint: none)
            SIMILARITY,
            Column("contains", "contains", right=True, optional=True),
            Column("fingerprint", "fingerprint"),
            Column("url", "url"),
        ],
        limited(rows, args.limit, out, "pages"),
        empty="no stored page is that near",
    )
    return 0


# --- fingerprint -----------------------------------------------------------------------


@command("fingerprint")
@target("what to fingerprint")
@option(
    "--features",
    type=options.positive_count,
    nargs="?",
    const=20,
    metavar="N",
    help="also list the N heaviest weighted features (default 20)",
)
def fingerprint(args: argparse.Namespace, out: Output) -> int:
    """the fingerprint of a file, stdin, a text or a stored URL; --features explains it"""
    _check_target(args)
    try:
        store: FingerprintStore | None = FingerprintStore.open_existing(database_url(args.db))
    except DatabaseNotFoundError:
        store = None  # a file or text needs no database: use the defaults
    try:
        if _is_reference(args):
            if args.features:
                raise CommandError(
                    "features need the text: the database keeps fingerprints, not texts; "
                    "pass the page's HTML or text file (or --text)"
                )
            query = _reference_query(args, store)
            fingerprinter = None
        else:
            fingerprinter = fingerprinter_for(store.spec if store is not None else None)
            source, text = _read_input(args)
            query = Query(source, _fingerprint_text(fingerprinter, source, text), text)
    finally:
        if store is not None:
            store.close()
    assert query.fingerprint is not None  # (a stored page's, a hex one's, or refused above)
    document: dict[str, Any] = {"source": query.source, "fingerprint": hex64(query.fingerprint)}
    features: Table | None = None
    if fingerprinter is not None and query.text is not None:
        document["characters"] = len(query.text)
        document["tokens"] = len(fingerprinter.tokens(query.text))
        document["spec"] = fingerprinter.spec
        if args.features:
            weights = fingerprinter.features(query.text)
            top = list(weights.items())[: args.features]
            document["features"] = [{"feature": f, "weight": round(w, 4)} for f, w in top]
            features = Table(
                [Column("weight", "weight", right=True), Column("feature", "feature")],
                document["features"],
                title=f"top {len(top)} of {len(weights)} features",
            )
    labels = ("source", "fingerprint", "characters", "tokens", "spec")
    sections: list[Section] = [Fields([(k, document[k]) for k in labels if k in document])]
    if features is not None:
        sections.append(features)
    out.document(document, sections)
    return 0
