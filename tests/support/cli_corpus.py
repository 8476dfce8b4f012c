"""Texts and a small database for the command-line and importer tests.

Three unrelated articles and near-copies of two of them, fingerprinted with the real
default Fingerprinter. The copies are chosen to stay near under any sensible weighting:
one word changed (a few bits, D_A1 and D_B1; tests use the computed values), or only
case and line breaks changed (0 bits). Times are pinned afterwards so outputs are exact.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

import pytest
from sqlalchemy import update
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_filter import Fingerprinter, hamming_distance
from simhash_filter.cli import main
from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.schema import duplicates_table, meta_table, pages_table

ARTICLE_A = (
    "The city council approved a new plan for the river district on Tuesday evening. "
    "The plan turns the old warehouses near the harbor into housing, a public library "
    "and a covered market for local farmers. Construction will begin next spring and "
    "should last about three years. Residents who spoke at the meeting welcomed the "
    "library but worried about traffic on the narrow streets along the water. The "
    "mayor promised two new bus lines and a bicycle bridge across the canal before "
    "the first apartments open. Critics said the budget leaves too little money for "
    "flood protection, since the district lies below the level of the spring tides."
)
ARTICLE_B = (
    "Astronomers have measured the rotation of a distant galaxy with unusual precision "
    "using a network of radio telescopes spread across four continents. The galaxy "
    "spins faster at its edge than its visible stars and gas can explain, which adds "
    "to the evidence for dark matter. The team combined eight nights of observations "
    "and corrected for the motion of the Earth with atomic clocks at every station. "
    "Their next target is a pair of colliding galaxies whose merger should reveal how "
    "dark matter behaves when two halos pass through each other at enormous speed."
)
ARTICLE_C = (
    "Bakers in the northern valleys still make rye bread with a sourdough starter kept "
    "alive for generations. The dough rests overnight in wooden troughs, then bakes in "
    "stone ovens heated with beech wood until the crust turns almost black. Villagers "
    "buy large loaves once a week, because the bread stays fresh for many days and "
    "tastes better as it ages. A cooperative now ships the loaves to shops in the "
    "capital, and young apprentices come from abroad to learn the slow craft."
)
ARTICLE_A1 = ARTICLE_A.replace("bus lines", "tram lines")  # one word: a few bits
ARTICLE_A2 = ARTICLE_A.upper().replace(". ", ".\n\n")  # case and line breaks: 0 bits
ARTICLE_B1 = ARTICLE_B.replace("atomic clocks", "atomic clock")  # one word: a few bits
SHORT = "Page not found."

URL_A = "https://news.example.com/river"
URL_B = "https://space.example.org/galaxy"
URL_C = "https://bread.example.net/rye"
URL_A1 = "https://mirror.example.org/river-copy"
URL_A2 = "https://news.example.com/river?print=1"
URL_B1 = "https://mirror.example.org/galaxy-copy"

# In insertion order: three kept pages, then three near-copies that are dropped.
PAGES = [
    (URL_A, ARTICLE_A),
    (URL_B, ARTICLE_B),
    (URL_C, ARTICLE_C),
    (URL_A1, ARTICLE_A1),
    (URL_A2, ARTICLE_A2),
    (URL_B1, ARTICLE_B1),
]

FINGERPRINTER = Fingerprinter()
CREATED_AT = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
FIRST_SEEN = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
DROPPED_AT = datetime(2024, 5, 2, 10, 0, tzinfo=UTC)


def fp(text: str) -> int:
    fingerprint = FINGERPRINTER.fingerprint(text)
    assert fingerprint is not None
    return fingerprint


def hx(text: str) -> str:
    return f"{fp(text):016x}"


def dist(a: str, b: str) -> int:
    return hamming_distance(fp(a), fp(b))


def html_page(title: str, text: str) -> str:
    """A page with navigation and a footer around ``text``: extraction gives ``text``."""
    return (
        f"<!DOCTYPE html><html><head><title>{escape(title)}</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
        f"<article><p>{escape(text)}</p></article>"
        "<footer>Copyright 2024 Example Media</footer></body></html>"
    )


D_A1 = dist(ARTICLE_A, ARTICLE_A1)
D_B1 = dist(ARTICLE_B, ARTICLE_B1)


def pin_times(store: FingerprintStore) -> None:
    """The database made at CREATED_AT, kept pages first seen a minute apart from
    FIRST_SEEN, drops a day apart from DROPPED_AT, in insertion order (the last one is
    the newest)."""
    with store.engine.begin() as conn:
        conn.execute(
            update(meta_table)
            .where(meta_table.c.key == "created_at")
            .values(value=CREATED_AT.isoformat())
        )
        ids = [row[0] for row in conn.execute(pages_table.select().order_by(pages_table.c.id))]
        for n, page_id in enumerate(ids):
            moment = FIRST_SEEN + timedelta(minutes=n)
            conn.execute(
                update(pages_table)
                .where(pages_table.c.id == page_id)
                .values(first_seen=moment, last_seen=moment)
            )
        drops = [
            row[0]
            for row in conn.execute(duplicates_table.select().order_by(duplicates_table.c.id))
        ]
        for n, drop_id in enumerate(drops):
            conn.execute(
                update(duplicates_table)
                .where(duplicates_table.c.id == drop_id)
                .values(seen_at=DROPPED_AT + timedelta(days=n))
            )


def fill(url: str, pages: list[tuple[str, str]] = PAGES, **options: int) -> None:
    """A database at ``url`` with ``pages`` checked and added in order, times pinned."""
    with FingerprintStore.open(url, StoreOptions(spec=FINGERPRINTER.spec, **options)) as store:
        for page_url, text in pages:
            store.check_and_add(page_url, fp(text), text_length=len(text))
        pin_times(store)


def fill_with_sketches(url: str) -> MatchRule:
    """The corpus checked and added as a crawl does under the default match rule: with
    each page's sketch (candidates within the rule's reach, confirmed by the sketches)."""
    rule = MatchRule()
    with FingerprintStore.open(url, StoreOptions(spec=FINGERPRINTER.spec, rule=rule)) as store:
        for page_url, text in PAGES:
            store.check_and_add(
                page_url, fp(text), text_length=len(text), sketch=FINGERPRINTER.sketch(text)
            )
        pin_times(store)
    return rule


HTML_A = html_page("River district plan", ARTICLE_A)
HTML_B = html_page("Galaxy rotation", ARTICLE_B)


def write_warc(path: Path, *, gzip_records: bool = True) -> Path:
    """A crawl's archive: warcinfo, a request, two HTML answers, a 404, an image, a
    redirect, an HTML resource and a WET-style text conversion."""
    with path.open("wb") as raw:
        writer = WARCWriter(raw, gzip=gzip_records)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "tests"}))

        def response(url: str, body: bytes, content_type: str, status: str = "200 OK") -> None:
            headers = StatusAndHeaders(
                status, [("Content-Type", content_type)], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers
            )
            writer.write_record(record)

        request = StatusAndHeaders(
            "GET /river HTTP/1.1", [("Host", "news.example.com")], is_http_request=True
        )
        writer.write_record(
            writer.create_warc_record(
                "https://news.example.com/river",
                "request",
                payload=io.BytesIO(b""),
                http_headers=request,
            )
        )
        response("https://news.example.com/river", HTML_A.encode(), "text/html; charset=utf-8")
        response(
            "https://space.example.org/galaxy", HTML_B.encode("utf-8"), "application/xhtml+xml"
        )
        response(
            "https://news.example.com/gone", b"<html>Not found</html>", "text/html", "404 Not Found"
        )
        response("https://news.example.com/logo.png", b"\x89PNG\r\n", "image/png")
        response("https://news.example.com/old", b"", "text/html", "301 Moved Permanently")
        writer.write_record(
            writer.create_warc_record(
                "https://bread.example.net/rye",
                "resource",
                payload=io.BytesIO(html_page("Rye", ARTICLE_C).encode()),
                warc_content_type="text/html",
            )
        )
        writer.write_record(
            writer.create_warc_record(
                "https://bread.example.net/rye.txt",
                "conversion",
                payload=io.BytesIO(ARTICLE_C.encode()),
                warc_content_type="text/plain",
            )
        )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lines(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)
