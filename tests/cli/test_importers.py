"""Corpus readers: JSON Lines, folders of HTML files, WARC archives (written here with
warcio's own writer)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from support.cli_corpus import ARTICLE_A, ARTICLE_C, HTML_A, HTML_B, write_warc

from simhash_filter.cli.importers import (
    ReaderOptions,
    Record,
    detect_format,
    read_html_files,
    read_jsonl,
    read_source,
    read_warc,
)
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.stored_text import unpack_text
from simhash_filter.page.extract import DEFAULT_MAX_BYTES
from simhash_filter.page.pool import PageJob
from simhash_filter.page.work import work_job


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("-", "jsonl"),
        ("items.jsonl", "jsonl"),
        ("items.JSONL.gz", "jsonl"),
        ("items.ndjson", "jsonl"),
        ("items.jl", "jsonl"),
        ("crawl.warc.gz", "warc"),
        ("crawl.warc", "warc"),
        ("old.arc.gz", "warc"),
        ("page.html", "html"),
        ("page.HTM", "html"),
    ],
)
def test_detect_format_by_name(name: str, expected: str) -> None:
    assert detect_format(name) == expected


def test_detect_format_folder_and_unknown(tmp_path: Path) -> None:
    assert detect_format(str(tmp_path)) == "html"
    with pytest.raises(ValueError, match=r"cannot tell the format of 'data\.bin'.*--format"):
        detect_format("data.bin")


def test_read_jsonl_text_html_and_problems() -> None:
    skipped: list[str] = []
    lines = [
        json.dumps({"url": "https://a.example/1", "text": "plain text"}),
        "",
        json.dumps({"url": "https://a.example/2", "html": "<p>hi</p>"}),
        json.dumps({"url": "https://a.example/3", "text": "text wins", "html": "<p>x</p>"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"text": "no url"}),
        json.dumps({"url": "https://a.example/4", "body": "neither"}),
        json.dumps({"url": "https://a.example/5", "text": None, "html": "<p>null text</p>"}),
    ]
    records = list(read_jsonl(lines, "items.jsonl", on_skip=skipped.append))
    assert records == [
        Record("https://a.example/1", "plain text", False, "items.jsonl:1"),
        Record("https://a.example/2", "<p>hi</p>", True, "items.jsonl:3"),
        Record("https://a.example/3", "text wins", False, "items.jsonl:4"),
        Record("https://a.example/5", "<p>null text</p>", True, "items.jsonl:9"),
    ]
    assert skipped == [
        "items.jsonl:5: not JSON (Expecting property name enclosed in double quotes at column 2)",
        "items.jsonl:6: not a JSON object",
        "items.jsonl:7: no 'url' field",
        "items.jsonl:8: no 'text' or 'html' field",
    ]


def test_read_jsonl_other_field_names() -> None:
    line = json.dumps({"link": "https://a.example/", "content": "words", "text": "ignored"})
    records = list(read_jsonl([line], "x", url_field="link", text_field="content"))
    assert records == [Record("https://a.example/", "words", False, "x:1")]


def test_read_source_gzipped_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(json.dumps({"url": "https://a.example/ü", "text": "Grüße"}) + "\n")
    assert list(read_source(str(path))) == [
        Record("https://a.example/ü", "Grüße", False, f"{path}:1")
    ]


def test_read_html_files_in_a_folder(tmp_path: Path) -> None:
    (tmp_path / "site" / "news").mkdir(parents=True)
    (tmp_path / "site" / "news" / "river plan.html").write_text(HTML_A, encoding="utf-8")
    (tmp_path / "site" / "galaxy.htm").write_text(HTML_B, encoding="utf-8")
    (tmp_path / "site" / "notes.txt").write_text("not a page", encoding="utf-8")
    root = tmp_path / "site"
    records = list(read_html_files(root, base_url="https://example.com/archive"))
    assert [(r.url, r.is_html, r.origin) for r in records] == [
        ("https://example.com/archive/galaxy.htm", True, str(root / "galaxy.htm")),
        (
            "https://example.com/archive/news/river%20plan.html",
            True,
            str(root / "news" / "river plan.html"),
        ),
    ]
    assert records[0].body == HTML_B.encode()
    single = list(read_html_files(root / "galaxy.htm"))
    assert [r.url for r in single] == [(root / "galaxy.htm").resolve().as_uri()]


@pytest.mark.parametrize("gzip_records", [True, False])
def test_read_warc(tmp_path: Path, gzip_records: bool) -> None:
    path = write_warc(tmp_path / "crawl.warc.gz", gzip_records=gzip_records)
    skipped: list[str] = []
    with path.open("rb") as raw:
        records = list(read_warc(raw, str(path), on_skip=skipped.append))
    assert [(r.url, r.is_html) for r in records] == [
        ("https://news.example.com/river", True),
        ("https://space.example.org/galaxy", True),
        ("https://bread.example.net/rye", True),
        ("https://bread.example.net/rye.txt", False),
    ]
    assert records[0].body == HTML_A.encode()
    assert records[3].body == ARTICLE_C
    assert records[0].origin.startswith(f"{path}@")
    assert skipped == []


def test_a_record_asks_for_the_crawls_page_work(tmp_path: Path) -> None:
    """Plain text is signed as it is, HTML through the crawl's extraction: the text import
    fingerprints (and keeps, with --store-text) is the article."""
    assert Record("u", "plain", False, "o").page_job() == PageJob("u", "plain", None)
    assert Record("u", "bytes é".encode(), False, "o").page_job() == PageJob("u", "bytes é", None)
    html = HTML_A.encode()
    assert Record("u", html, True, "o").page_job(True) == PageJob("u", None, html, True)
    fingerprinter = Fingerprinter()

    def main_text(record: Record) -> str | None:
        job = record.page_job(keep_text=True)
        signature = work_job(fingerprinter, job, max_bytes=DEFAULT_MAX_BYTES).signature
        if signature is None:
            return None
        assert signature.stored_text is not None
        return unpack_text(signature.stored_text).text

    assert main_text(Record("u", "<html></html>", True, "o")) is None
    records = list(read_source(str(write_warc(tmp_path / "crawl.warc.gz")), ReaderOptions()))
    assert records[0].url == "https://news.example.com/river"
    assert main_text(records[0]) == ARTICLE_A
    assert records[3].url == "https://bread.example.net/rye.txt"
    assert main_text(records[3]) == ARTICLE_C


def test_read_source_rejects_html_on_stdin_and_unknown_formats() -> None:
    with pytest.raises(ValueError, match="not from stdin"):
        list(read_source("-", ReaderOptions(format="html")))
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        list(read_source("x.pdf", ReaderOptions(format="pdf")))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"url": "https://a.example/", "text": "a\tb"}',
            "Invalid control character U+0009 at column 41",
        ),
        (
            '{"url": "https://a.example/", "text": "a\nb"}',
            "Invalid control character U+000A at column 41",
        ),
        ('{"url": "https://a.example/" "text": "x"}', "Expecting ',' delimiter at column 30"),
        ('{"url": "https://a.example/", "text": "x"', "Expecting ',' delimiter at column 42"),
        ('{"url": "https://a.example/", "text": "x"} trailing', "Extra data at column 44"),
        ('{"url": "\\x"}', "Invalid \\escape at column 10"),
    ],
)
def test_a_line_that_is_not_json_is_named_with_the_whole_reason(line: str, reason: str) -> None:
    """Issue 31 item 12: "not JSON (Invalid control character at)" said neither what nor where."""
    skipped: list[str] = []
    assert list(read_jsonl([line], "broken.jsonl", on_skip=skipped.append)) == []
    assert skipped == [f"broken.jsonl:1: not JSON ({reason})"]
