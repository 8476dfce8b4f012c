"""Readers for an existing corpus: JSON Lines, a folder of HTML files, WARC archives.

Each reader yields :class:`Record` s — a URL and either plain text or raw HTML — and
:func:`record_text` turns a record into the text to fingerprint (HTML through
:func:`simhash_filter.extract.extract_text`, the crawl's own extraction). Reading is
kept apart from extraction so the (CPU-bound) extraction can run in worker processes.
:func:`documents` chains both and yields ``(url, text)`` pairs.

Records that cannot be read (a line that is not JSON, a line without a URL) are
reported through ``on_skip`` and reading carries on; nothing here touches the database.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NamedTuple, cast
from urllib.parse import quote, urljoin

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "html", "warc")
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jl", ".json")
WARC_SUFFIXES = (".warc", ".arc")
HTML_TYPES = ("text/html", "application/xhtml+xml")

SkipHandler = Callable[[str], None]


class Record(NamedTuple):
    """One page of the corpus before extraction."""

    url: str
    body: str | bytes  # plain text (``is_html`` False) or the page's HTML
    is_html: bool
    origin: str  # where it came from, for messages: ``file:line`` or ``file@offset``


class Document(NamedTuple):
    """A page ready to fingerprint; ``text`` is None when extraction found no main text."""

    url: str
    text: str | None


@dataclass(frozen=True, slots=True)
class ReaderOptions:
    """How to read the sources (the JSON field names match the crawl's settings)."""

    format: str | None = None  # one of FORMATS; None: guess from each source's name
    url_field: str = "url"
    text_field: str = "text"
    html_field: str = "html"
    base_url: str | None = None  # URL of an HTML folder's root; default: file:// URIs


def _log_skip(message: str) -> None:
    logger.warning("skipped %s", message)


def _strip_gz(name: str) -> str:
    lowered = name.lower()
    return lowered[:-3] if lowered.endswith(".gz") else lowered


def detect_format(source: str) -> str:
    """Guess a source's format: ``-`` and ``*.jsonl`` are JSON Lines, a folder or
    ``*.html`` is HTML, ``*.warc(.gz)`` is WARC. Raises ValueError when it cannot tell."""
    if source == "-":
        return "jsonl"
    path = Path(source)
    if path.is_dir():
        return "html"
    name = _strip_gz(path.name)
    if name.endswith(WARC_SUFFIXES):
        return "warc"
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(HTML_SUFFIXES):
        return "html"
    raise ValueError(
        f"cannot tell the format of {source!r} from its name: pass --format ({', '.join(FORMATS)})"
    )


def read_jsonl(
    lines: Iterable[str],
    origin: str,
    *,
    url_field: str = "url",
    text_field: str = "text",
    html_field: str = "html",
    on_skip: SkipHandler = _log_skip,
) -> Iterator[Record]:
    """Objects with a URL and either a text or an HTML field, one per line.

    The text field wins when both are present; blank lines are ignored.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{origin}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            on_skip(f"{where}: not JSON ({exc.msg})")
            continue
        if not isinstance(item, dict):
            on_skip(f"{where}: not a JSON object")
            continue
        url = item.get(url_field)
        if not isinstance(url, str) or not url:
            on_skip(f"{where}: no {url_field!r} field")
            continue
        text = item.get(text_field)
        html = item.get(html_field)
        if isinstance(text, str):
            yield Record(url, text, False, where)
        elif isinstance(html, str):
            yield Record(url, html, True, where)
        else:
            on_skip(f"{where}: no {text_field!r} or {html_field!r} field")


def _file_url(path: Path, root: Path, base_url: str | None) -> str:
    if base_url is None:
        return path.resolve().as_uri()
    relative = path.relative_to(root).as_posix() if path != root else path.name
    base = base_url if base_url.endswith("/") else base_url + "/"
    return urljoin(base, quote(relative))


def read_html_files(path: Path, *, base_url: str | None = None) -> Iterator[Record]:
    """An HTML file, or every HTML file under a folder (recursively, in name order).

    A page's URL is ``base_url`` joined with its path under the folder, or its
    ``file://`` URI when no base URL is given.
    """
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(HTML_SUFFIXES)
        )
        root = path
    else:
        files = [path]
        root = path.parent
    for file in files:
        yield Record(_file_url(file, root, base_url), file.read_bytes(), True, str(file))


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def read_warc(
    stream: IO[bytes], origin: str, *, on_skip: SkipHandler = _log_skip
) -> Iterator[Record]:
    """Pages in a WARC (or ARC) archive, gzipped or not.

    ``response`` records with a 2xx HTML answer and ``resource`` records of HTML are
    read as HTML; ``conversion`` and ``resource`` records of ``text/plain`` (WET files)
    as text. Requests, metadata, revisits and non-HTML answers are passed over quietly.
    """
    from warcio.archiveiterator import ArchiveIterator

    records = ArchiveIterator(stream, arc2warc=True)
    for record in records:
        kind = record.rec_type
        if kind not in {"response", "resource", "conversion"}:
            continue
        url = record.rec_headers.get_header("WARC-Target-URI")
        if kind == "response":
            http = record.http_headers
            status = (http.get_statuscode() or "") if http is not None else ""
            if not status.startswith("2"):
                continue
            media = _media_type(http.get_header("Content-Type"))
        else:
            media = _media_type(record.rec_headers.get_header("Content-Type"))
        is_html = media in HTML_TYPES
        if not is_html and not (media == "text/plain" and kind != "response"):
            continue
        body = record.content_stream().read()
        # (the offset is known once the record is read: asking earlier reads it away)
        where = f"{origin}@{records.get_record_offset()}"
        if not url:
            on_skip(f"{where}: {kind} record without WARC-Target-URI")
        elif is_html:
            yield Record(url, body, True, where)
        else:
            yield Record(url, body.decode("utf-8", errors="replace"), False, where)


def _open_bytes(path: str) -> IO[bytes]:
    """A file's bytes, gunzipped when its name ends in .gz."""
    if path.lower().endswith(".gz"):
        return cast(IO[bytes], gzip.open(path))
    return open(path, "rb")


def read_source(
    source: str, options: ReaderOptions = ReaderOptions(), *, on_skip: SkipHandler = _log_skip
) -> Iterator[Record]:
    """The records of one source: a path, or ``-`` for JSON Lines on stdin."""
    fmt = options.format or detect_format(source)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "html":
        if source == "-":
            raise ValueError("HTML is read from files or folders, not from stdin")
        yield from read_html_files(Path(source), base_url=options.base_url)
        return
    if fmt == "warc":
        if source == "-":
            yield from read_warc(sys.stdin.buffer, "<stdin>", on_skip=on_skip)
            return
        with open(source, "rb") as raw:
            yield from read_warc(raw, source, on_skip=on_skip)
        return
    fields = {
        "url_field": options.url_field,
        "text_field": options.text_field,
        "html_field": options.html_field,
    }
    if source == "-":
        yield from read_jsonl(sys.stdin, "<stdin>", on_skip=on_skip, **fields)
        return
    with _open_bytes(source) as compressed, io.TextIOWrapper(compressed, encoding="utf-8") as lines:
        yield from read_jsonl(lines, source, on_skip=on_skip, **fields)


def read_sources(
    sources: Iterable[str],
    options: ReaderOptions = ReaderOptions(),
    *,
    on_skip: SkipHandler = _log_skip,
) -> Iterator[Record]:
    """The records of several sources, one after the other."""
    for source in sources:
        yield from read_source(source, options, on_skip=on_skip)


def record_text(record: Record) -> str | None:
    """The text to fingerprint: plain text as is, HTML through the crawl's extraction."""
    if not record.is_html:
        body = record.body
        return body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    from simhash_filter.extract import extract_text

    return extract_text(record.body, url=record.url)


def documents(
    sources: Iterable[str],
    options: ReaderOptions = ReaderOptions(),
    *,
    on_skip: SkipHandler = _log_skip,
) -> Iterator[Document]:
    """``(url, text)`` for every page of the sources, HTML already extracted."""
    for record in read_sources(sources, options, on_skip=on_skip):
        yield Document(record.url, record_text(record))
