"""``templates``: the hosts' templates a crawl learned (store/templates.py), and what
``lookup`` says of a page's template share.

    simhash-filter templates                  every host: pages learned from, template blocks
    simhash-filter templates --host HOST      one host's template blocks, with their text

The store keeps a block's hash, not its text: the text shown is found in the stored texts
(``STORE_TEXT``) of the host's first kept pages, whose extraction still held the template's
lines (a page signed before its host's template was known keeps them).
"""

from __future__ import annotations

import argparse
from typing import Any

from simhash_filter.cli import options
from simhash_filter.cli.command import command, limit, option
from simhash_filter.cli.common import CommandError, existing_store
from simhash_filter.cli.output import Column, Fields, Output, Record, Table
from simhash_filter.core.signature import marks_unsure
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.core.template import (
    DEFAULT_MIN_PAGES,
    block_hash,
    block_text,
    main_blocks,
    strip_template,
)
from simhash_filter.store import FingerprintStore, texts
from simhash_filter.store.templates import HostBlock, TemplateStore

__all__ = ["block_texts", "template_share", "templates"]

SAMPLE_PAGES = 50
"""Stored texts of a host's first kept pages read for its blocks' text."""
HOST_COLUMNS = (
    Column("host", "host"),
    Column("pages", "pages", right=True),
    Column("template_blocks", "template blocks", right=True),
)
BLOCK_COLUMNS = (
    Column("block", "block"),
    Column("pages", "pages", right=True),
    Column("text", "text", optional=True),
)


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def template_share(
    store: FingerprintStore, url: str, sketch: bytes | None = None, page_id: int | None = None
) -> tuple[dict[str, Any], list[tuple[str, object]]]:
    """What ``lookup`` says of the template share of the page of canonical ``url``: its JSON
    (``{}``: nothing known) and its lines. The share recorded when it was checked; for a
    kept page signed before its host's template was known (its ``sketch``'s unsure mark),
    the share its stored text (page ``page_id``'s) has in the host's template now."""
    templates = TemplateStore(store)
    recorded = templates.page_share(url)
    if recorded is not None:
        value = "all: nothing else was extracted (signed by its bytes)"
        if not recorded.template_only:
            value = f"{_percent(recorded.share)} of its extracted text"
            value += " (left out of its signature)" if recorded.share else ""
        found = {"share": round(recorded.share, 4), "template_only": recorded.template_only}
        return {"template": found}, [("template share", value)]
    if sketch is None or not marks_unsure(sketch):
        return {}, []
    found = {"unsure": True}
    value = "signed before its host's template was known"
    text = None if page_id is None else texts.page_texts(store, [page_id]).get(page_id)
    if text is not None:
        template = templates.page_template(url, DEFAULT_MIN_PAGES)
        if template.blocks:
            now = strip_template(unpack_text(text).text, template.blocks).share
            found["share_now"] = round(now, 4)
            value += f"; {_percent(now)} of its stored text is the template now"
    return {"template": found}, [("template share", value)]


def block_texts(stored: list[bytes], wanted: set[int]) -> dict[int, str]:
    """The text of each block of ``wanted`` found in the ``stored`` texts (the first seen)."""
    found: dict[int, str] = {}
    for blob in stored:
        for block in main_blocks(unpack_text(blob).text):
            key = block_hash(block)
            if key is not None and key in wanted and key not in found:
                found[key] = block_text(block)
    return found


def _host(templates: TemplateStore, host: str, min_pages: int, most: int, out: Output) -> int:
    """``templates --host HOST``: the host's counts, then its template blocks."""
    listed = {h: (pages, n) for h, pages, n in templates.hosts(min_pages)}
    if host not in listed:
        raise CommandError(f"no template learned for {host} (hosts: `templates`)")
    pages, count = listed[host]
    blocks: list[HostBlock] = templates.blocks(host, min_pages, most or None)
    texts = block_texts(templates.host_texts(host, SAMPLE_PAGES), {b.block for b in blocks})
    rows: list[Record] = [
        {"block": f"{b.block:08x}", "pages": b.pages, "text": texts.get(b.block)} for b in blocks
    ]
    document = {"host": host, "pages": pages, "template_blocks": count, "blocks": rows}
    title = f"its template blocks (on {min_pages} or more of its pages; most seen first)"
    if most and count > most:
        title += f"; the first {most} of {count}"
    out.document(
        document,
        [
            Fields([("host", host), ("pages learned from", pages), ("template blocks", count)]),
            Table(BLOCK_COLUMNS, rows, title=title),
        ],
    )
    return 0


@command("templates")
@option("--host", help="one host's template blocks, with the text of those found stored")
@option(
    "--min-pages",
    type=options.count,
    default=DEFAULT_MIN_PAGES,
    metavar="N",
    help="a block is template on N pages of its host or more (default "
    f"{DEFAULT_MIN_PAGES}, as the crawl's SIMHASH_FILTER_TEMPLATE_MIN_PAGES)",
)
@limit(50)
def templates(args: argparse.Namespace, out: Output) -> int:
    """the hosts' templates the crawls learned: pages learned from and template blocks a
    host; one host's blocks with their text

    templates                 every host: its pages learned from, its template blocks
    templates --host HOST     the host's template blocks, most seen first (--limit N),
                              with their text where a stored page text holds it"""
    with existing_store(args) as store:
        learned = TemplateStore(store)
        min_pages = max(1, args.min_pages)
        if args.host:
            return _host(learned, args.host.lower(), min_pages, args.limit, out)
        rows = (
            {"host": host, "pages": pages, "template_blocks": n}
            for host, pages, n in learned.hosts(min_pages)
        )
        out.rows(HOST_COLUMNS, rows, empty="no templates learned")
    return 0
