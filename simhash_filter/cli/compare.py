"""Commands that fingerprint something and compare it: ``near`` and ``fingerprint``.

What to compare is TARGET — a stored URL, a 16-digit hex fingerprint, an HTML or text
file, ``-`` for stdin — or ``--text``. Texts are fingerprinted with the Fingerprinter
the database's spec calls for; HTML goes through the crawl's extraction first.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simhash_filter.cli import options
from simhash_filter.cli.command import Handler, command, limit, option
from simhash_filter.cli.common import (
    SIMILARITY,
    CommandError,
    UsageError,
    check_k,
    database_url,
    display_url,
    existing_store,
    fingerprinter_for,
    limited,
    similarity_of,
)
from simhash_filter.cli.importers import HTML_SUFFIXES
from simhash_filter.cli.output import Column, Fields, Output, Section, Table, hex64
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.store import FingerprintStore, reports
from simhash_filter.store.records import DatabaseNotFoundError

# --- fingerprints of inputs ------------------------------------------------------------


HEX_FINGERPRINT = re.compile(r"(?:0x)?([0-9a-fA-F]{16})")
URL_LIKE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
HTML_SNIFF = re.compile(rb"<(?:!doctype\s+html|html|head|body)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Query:
    """What ``near``/``fingerprint`` work on: a fingerprint, and the text when known."""

    source: str  # for messages and output: the URL, file name, <stdin>, --text, hex
    fingerprint: int
    text: str | None = None
    stored_url: str | None = None  # the canonical URL, when it came from the database
    sketch: bytes | None = None  # its second signature, when known: for the similarities


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
    if page is not None:
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
    """stored pages within distance k of a page, text or fingerprint"""
    _check_target(args)
    with existing_store(args) as store:
        if _is_reference(args):
            query = _reference_query(args, store)
        else:
            fingerprinter = fingerprinter_for(store.spec)
            source, text = _read_input(args)
            fingerprint = _fingerprint_text(fingerprinter, source, text)
            query = Query(source, fingerprint, text, sketch=fingerprinter.sketch(text))
        k = check_k(store, args.k)
        matches = [
            m
            for m in store.near(query.fingerprint, k, sketch=query.sketch)
            if m.url != query.stored_url
        ]
        sketches = reports.page_sketches(store, [m.page_id for m in matches])
        rule = store.rule
    out.note(f"pages within {k} of {hex64(query.fingerprint)} ({query.source}):")
    rows = (
        {
            "url": m.url,
            "fingerprint": hex64(m.fingerprint),
            "distance": m.distance,
            "similarity": similarity_of(rule, query.sketch, sketches.get(m.page_id)),
        }
        for m in matches
    )
    out.rows(
        [
            Column("distance", "distance", right=True),
            SIMILARITY,
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
