"""Readers for an existing corpus: JSON Lines, a folder of HTML files, WARC archives.

Each reader yields :class:`Record` s — a URL and either plain text or raw HTML. Reading
is kept apart from extraction and fingerprinting, which are the crawl's own page work
(:meth:`Record.page_job`), so that CPU-bound part can run in the page pool while the
records are read here.

Records that cannot be read (a line that is not JSON or not UTF-8, a line without a
URL) are reported through ``on_skip`` and reading carries on. A source that cannot be
read on (a truncated or corrupt gzip stream, a WARC record cut short, a file that is not
what its name says) raises :class:`SourceError` after every complete record before the
damage was yielded: the error ends that source only. Nothing here touches the database.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple
from urllib.parse import quote, urljoin

from simhash_filter.page.work import PageJob

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "html", "warc")
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jl", ".json")
WARC_SUFFIXES = (".warc", ".arc")
HTML_TYPES = ("text/html", "application/xhtml+xml")

SkipHandler = Callable[[str], None]

_BLOCK = 1 << 16  # bytes read (and decompressed) at a time
_SNIFF = 1 << 12  # bytes looked at to tell a source's content


class SourceError(Exception):
    """A source that cannot be read on; the records yielded before it are complete.

    ``where`` names the place (``file``, ``file:line`` or ``file@offset``), ``reason``
    what is wrong there; ``str()`` is the one-line message for a person.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class _Cut(Exception):
    """A byte stream ends early or is corrupt (the reader, which knows the line or the
    record it was in, turns it into a SourceError)."""


class Record(NamedTuple):
    """One page of the corpus before extraction."""

    url: str
    body: str | bytes  # plain text (``is_html`` False) or the page's HTML
    is_html: bool
    origin: str  # where it came from, for messages: ``file:line`` or ``file@offset``

    def page_job(self, keep_text: bool = False) -> PageJob:
        """The page work this record asks for (the crawl's: the main text of its HTML, or
        its plain text), as the page pool takes it."""
        if self.is_html:
            return PageJob(self.url, None, self.body, keep_text)
        body = self.body
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        return PageJob(self.url, text, None, keep_text)


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


def json_reason(line: str, exc: json.JSONDecodeError) -> str:
    """Why a line is not JSON, whole, with where: ``Invalid control character U+0009 at
    column 9`` (the decoder's message ends in "at" and leaves the place to its ``str``)."""
    reason = exc.msg.removesuffix(" at")
    if reason.startswith("Invalid control character") and exc.pos < len(line):
        reason += f" U+{ord(line[exc.pos]):04X}"
    return f"{reason} at column {exc.colno}"


def read_jsonl(
    lines: Iterable[str | bytes],
    origin: str,
    *,
    url_field: str = "url",
    text_field: str = "text",
    html_field: str = "html",
    on_skip: SkipHandler = _log_skip,
) -> Iterator[Record]:
    """Objects with a URL and either a text or an HTML field, one per line.

    The text field wins when both are present; blank lines are ignored. Lines given as
    bytes are decoded as UTF-8: a line that is not UTF-8 is skipped, the others are read.
    """
    for number, raw in enumerate(lines, start=1):
        where = f"{origin}:{number}"
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                on_skip(
                    f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                )
                continue
        else:
            line = raw
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte order mark
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            on_skip(f"{where}: not JSON ({json_reason(line, exc)})")
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


def read_html_files(
    path: Path, *, base_url: str | None = None, on_skip: SkipHandler = _log_skip
) -> Iterator[Record]:
    """An HTML file, or every HTML file under a folder (recursively, in name order).

    A page's URL is ``base_url`` joined with its path under the folder, or its
    ``file://`` URI when no base URL is given. A file, or a folder, that cannot be read
    is skipped and named through ``on_skip``.
    """
    if path.is_dir():
        files = sorted(_html_files(path, on_skip))
        root = path
    else:
        files = [path]
        root = path.parent
    for file in files:
        try:
            body = file.read_bytes()
        except OSError as exc:
            on_skip(f"{file}: {exc.strerror or exc}")
            continue
        yield Record(_file_url(file, root, base_url), body, True, str(file))


def _html_files(folder: Path, on_skip: SkipHandler) -> Iterator[Path]:
    """The HTML files under ``folder``; a subfolder that cannot be listed (no permission)
    is named through ``on_skip`` (``Path.rglob`` passes over it without a word)."""

    def unreadable(exc: OSError) -> None:
        on_skip(f"{exc.filename}: {exc.strerror or exc}: its files were not read")

    for top, _, names in os.walk(folder, onerror=unreadable):
        for name in names:
            file = Path(top, name)
            if name.lower().endswith(HTML_SUFFIXES) and file.is_file():
                yield file


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def read_warc(
    stream: IO[bytes], origin: str, *, on_skip: SkipHandler = _log_skip
) -> Iterator[Record]:
    """Pages in a WARC (or ARC) archive, gzipped or not.

    ``response`` records with a 2xx HTML answer and ``resource`` records of HTML are
    read as HTML; ``conversion`` and ``resource`` records of ``text/plain`` (WET files)
    as text. Requests, metadata, revisits and non-HTML answers are passed over quietly.
    A record cut short (a truncated archive) is never yielded: reading stops there with a
    :class:`SourceError`, as it does at bytes that are not a record.
    """
    from warcio.archiveiterator import ArchiveIterator

    counted = _CountingReader(stream)
    records = ArchiveIterator(counted, arc2warc=True)
    end = 0  # where the last complete record ends: the place named when reading stops
    while True:
        try:
            record = next(records, None)
            if record is None:
                break
            body = _read_record(record)
        except _Cut as exc:
            raise SourceError(f"{origin}@{end}", str(exc)) from None
        except Exception as exc:  # ArchiveLoadFailed, and warcio's own slips on bad bytes
            raise SourceError(
                f"{origin}@{end}",
                f"what follows is not a complete WARC record ({_warc_reason(exc)}): the "
                "archive is cut or damaged here, and the rest was not imported",
            ) from None
        # (the offset is known once the record is read: asking earlier reads it away)
        offset = records.get_record_offset()
        end = offset + records.get_record_length()
        page = _warc_page(record)
        if page is None:
            continue
        url, is_html = page
        where = f"{origin}@{offset}"
        if not url:
            on_skip(f"{where}: {record.rec_type} record without WARC-Target-URI")
        elif is_html:
            yield Record(url, body, True, where)
        else:
            yield Record(url, body.decode("utf-8", errors="replace"), False, where)
    if not counted.ends_blank(after=end):
        raise SourceError(
            f"{origin}@{end}",
            f"the archive ends inside a record ({counted.total - end} bytes after the last "
            "complete one): that record was not imported",
        )


def _warc_page(record: Any) -> tuple[str | None, bool] | None:
    """(target URL, is HTML) of a record that holds a page; None for any other record."""
    kind = record.rec_type
    if kind not in {"response", "resource", "conversion"}:
        return None
    url = record.rec_headers.get_header("WARC-Target-URI")
    if kind == "response":
        http = record.http_headers
        status = (http.get_statuscode() or "") if http is not None else ""
        if not status.startswith("2"):
            return None
        media = _media_type(http.get_header("Content-Type"))
    else:
        media = _media_type(record.rec_headers.get_header("Content-Type"))
    is_html = media in HTML_TYPES
    if not is_html and not (media == "text/plain" and kind != "response"):
        return None
    return url, is_html


def _read_record(record: Any) -> bytes:
    """A record's payload, read to the end of the record; _Cut when the archive ends
    before the record's Content-Length does (warcio returns what there is)."""
    body: bytes = record.content_stream().read()
    raw = record.raw_stream
    while raw.read(_BLOCK):
        pass
    missing = getattr(raw, "limit", 0)
    if missing:
        length = record.rec_headers.get_header("Content-Length")
        raise _Cut(
            f"the {record.rec_type} record that follows is cut short ({missing} of its "
            f"{length} bytes missing): it was not imported; reading stopped"
        )
    return body


def _warc_reason(exc: Exception) -> str:
    if str(exc).startswith("Unknown archive format"):
        return "unknown archive format"
    return type(exc).__name__


class _CountingReader:
    """A byte stream that counts what was read from it and keeps its last bytes, so a
    reader can tell whether anything but blank lines follows the last complete record."""

    _KEEP = 4096

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.total = 0
        self._tail = b""

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.total += len(data)
        self._tail = (self._tail + data)[-self._KEEP :]
        return data

    def tell(self) -> int:
        return self.total

    def ends_blank(self, *, after: int) -> bool:
        """True when the bytes from offset ``after`` to the end are blank (or none)."""
        while self.read(_BLOCK):
            pass
        rest = self.total - after
        if rest <= 0:
            return True
        return rest <= len(self._tail) and not self._tail[-rest:].strip()


def _blocks(stream: IO[bytes]) -> Iterator[bytes]:
    """The bytes of a stream as they come (``read1``: a pipe's lines are read as soon as
    they are written, not when 64 KiB have piled up)."""
    read = getattr(stream, "read1", stream.read)
    while block := read(_BLOCK):
        yield block


def _gunzip(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The decompressed bytes of a gzip stream (members one after the other), in pieces
    of at most _BLOCK bytes; _Cut when it ends early or is corrupt, after everything
    decompressed before that point was yielded."""
    decompressor = zlib.decompressobj(wbits=31)
    in_member = False  # input fed to the current member and its end not seen yet
    produced = False
    empty = True
    for block in blocks:
        empty = False
        pending = block
        while pending:
            try:
                data = decompressor.decompress(pending, _BLOCK)
            except zlib.error as exc:
                what = "corrupt gzip data" if produced else "not gzip data"
                raise _Cut(f"{what} ({exc})") from None
            in_member = True
            if data:
                produced = True
                yield data
            pending = decompressor.unconsumed_tail
            if decompressor.eof:
                pending = decompressor.unused_data  # the next member, if any
                decompressor = zlib.decompressobj(wbits=31)
                in_member = False
    if empty:  # a gzip file holds at least its 18-byte header and trailer
        raise _Cut("an empty file, not gzip data (a gzip file is never 0 bytes)")
    while in_member:  # what the decompressor still holds back
        data = decompressor.decompress(b"", _BLOCK)
        if data:
            yield data
        if decompressor.eof:
            return
        if not data:
            raise _Cut("the gzip data ends early (a truncated file)")


def _content(name: str, stream: IO[bytes]) -> Iterator[bytes]:
    """The bytes of a source, gunzipped when its name ends in .gz."""
    if name.lower().endswith(".gz"):
        return _gunzip(_blocks(stream))
    return _blocks(stream)


def _byte_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream, each with its newline (the last may lack it). A line
    still open when ``chunks`` raises is not yielded: it was cut."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        start = 0
        while (newline := buffer.find(b"\n", start)) >= 0:
            yield bytes(buffer[start : newline + 1])
            start = newline + 1
        del buffer[:start]
    if buffer:
        yield bytes(buffer)


def _jsonl_lines(stream: IO[bytes], name: str) -> Iterator[bytes]:
    """The lines of a JSON Lines source; a SourceError naming the line where the data
    stopped when the (gzip) stream is cut or corrupt."""
    number = 0
    try:
        for line in _byte_lines(_content(name, stream)):
            number += 1
            yield line
    except _Cut as exc:
        raise SourceError(
            f"{name}:{number + 1}", f"{exc}; the {number} complete lines before it were read"
        ) from None


def _open_source(source: str) -> IO[bytes]:
    try:
        return open(source, "rb")
    except OSError as exc:
        raise SourceError(source, exc.strerror or str(exc)) from None


def check_source(source: str, options: ReaderOptions = ReaderOptions()) -> str:
    """A source's format, after a look at its first bytes: SourceError when it cannot be
    read as that at all (a .gz that is not gzip, a binary file named .jsonl, a file that
    is not a WARC archive), so that nothing is made or written for it."""
    fmt = options.format or detect_format(source)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if source == "-" or fmt == "html":
        return fmt
    head = b""
    try:
        with _open_source(source) as stream:
            for chunk in _content(source, stream):
                head += chunk
                if len(head) >= _SNIFF:
                    break
    except _Cut as exc:
        if not head:
            raise SourceError(source, str(exc)) from None
    if fmt == "jsonl" and b"\x00" in head[:_SNIFF]:
        raise SourceError(source, "binary data, not JSON Lines (it holds NUL bytes)")
    if fmt == "warc" and head.strip() and not head.lstrip().startswith((b"WARC/", b"filedesc:")):
        raise SourceError(source, "not a WARC or ARC archive (it does not begin with a record)")
    return fmt


def read_source(
    source: str, options: ReaderOptions = ReaderOptions(), *, on_skip: SkipHandler = _log_skip
) -> Iterator[Record]:
    """The records of one source: a path, or ``-`` for JSON Lines (or WARC) on stdin.

    Raises :class:`SourceError` where the source cannot be read on, after every complete
    record before that point.
    """
    fmt = options.format or detect_format(source)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "html":
        if source == "-":
            raise ValueError("HTML is read from files or folders, not from stdin")
        yield from read_html_files(Path(source), base_url=options.base_url, on_skip=on_skip)
        return
    name = "<stdin>" if source == "-" else source
    with _open_source(source) if source != "-" else nullcontext(sys.stdin.buffer) as stream:
        if fmt == "warc":
            yield from read_warc(stream, name, on_skip=on_skip)
            return
        yield from read_jsonl(
            _jsonl_lines(stream, name),
            name,
            url_field=options.url_field,
            text_field=options.text_field,
            html_field=options.html_field,
            on_skip=on_skip,
        )
