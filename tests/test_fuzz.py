"""Bad input, fuzzed: the pipeline's ``process_item`` and the middleware's ``process_response``
with random bytes, malformed HTML, wrong or missing charsets, NUL bytes, huge and deeply
nested pages, endless words, punctuation, emoji and mixed scripts; URLs and texts full of
SQL metacharacters and control characters.

No exception escapes but the filter's own drops (``NearDuplicate``, ``FilterUnavailable``;
``IgnoreRequest`` from the middleware), and every page meets the caps: at most
``SIMHASH_FILTER_MAX_BYTES`` to extraction, at most ``MAX_TEXT_CHARS`` to tokenization.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request
from support import helpers
from support.helpers import run, stat

import simhash_filter.page.extract as extract_module
from crawler.articles import HARBOUR_BRIDGE, URBAN_BEES
from simhash_filter import hamming_distance
from simhash_filter.core.text import Tokenizer
from simhash_filter.crawl.pages.middleware import NearDuplicateMiddleware
from simhash_filter.crawl.pages.pipeline import (
    FilterUnavailable,
    NearDuplicate,
    NearDuplicatePipeline,
)
from simhash_filter.page.extract import MAX_TEXT_CHARS
from simhash_filter.store import FingerprintStore, StoreOptions, canonical_url
from simhash_filter.store.records import VerdictKind

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_BYTES = 64 * 1024  # a small extraction cap, so the fuzzer reaches it

ARTICLE = "\n\n".join(HARBOUR_BRIDGE.paragraphs)
SQL_META = "'\";--/**/%_\\`$[](){}|&^~!?<>=*:,.\t\n\r\x0b\x0c\x00\x01\x1b\x7f"
SQL_INJECTIONS = [
    "' OR '1'='1",
    "'; DROP TABLE pages; --",
    '" OR ""="',
    "1; DELETE FROM bands WHERE 1=1 /*",
    "%' UNION SELECT url FROM pages --",
    "\\'; SELECT pg_sleep(10); --",
    "$$; TRUNCATE duplicates; $$",
]


# -- what reaches extraction and tokenization --------------------------------------------


class Caps:
    """Records the size of every input handed to trafilatura and to the fingerprinter."""

    def __init__(self) -> None:
        self.extracted: list[int] = []
        self.tokenized: list[int] = []

    def assert_within(self, max_bytes: int) -> None:
        assert all(size <= max_bytes for size in self.extracted), max(self.extracted)
        assert all(size <= MAX_TEXT_CHARS for size in self.tokenized), max(self.tokenized)


@pytest.fixture
def caps(monkeypatch: pytest.MonkeyPatch) -> Caps:
    recorder = Caps()
    real_extract = extract_module.trafilatura.bare_extraction  # what each pass calls

    def spy_extract(body: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.extracted.append(len(body))
        return real_extract(body, *args, **kwargs)

    monkeypatch.setattr(extract_module.trafilatura, "bare_extraction", spy_extract)
    real_tokenize = Tokenizer.tokenize

    def spy_tokenize(self: Tokenizer, text: str) -> list[str]:
        recorder.tokenized.append(len(text))  # what the tokenizer really gets
        return real_tokenize(self, text)

    monkeypatch.setattr(Tokenizer, "tokenize", spy_tokenize)
    return recorder


@pytest.fixture
def db_file() -> Iterator[str]:
    """One SQLite index for all the examples of a test (it grows as the fuzzer goes)."""
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{Path(folder) / 'fuzz.db'}"


def make_pipeline(url: str) -> NearDuplicatePipeline:
    # WORKERS=0: the spies on extraction and tokenization are in this process
    return helpers.make_pipeline(
        url, MAX_BYTES=MAX_BYTES, FINGERPRINT_FIELD="fingerprint", WORKERS=0
    )


def make_middleware(url: str) -> NearDuplicateMiddleware:
    return helpers.make_middleware(url, MAX_BYTES=MAX_BYTES, WORKERS=0)


def process(pipeline: NearDuplicatePipeline, item: dict[str, Any]) -> str:
    """'passed' or 'dropped'; any other exception fails the test."""
    try:
        result = run(pipeline.process_item(item))
    except (NearDuplicate, FilterUnavailable):
        return "dropped"
    assert result is item
    return "passed"


def respond(middleware: NearDuplicateMiddleware, response: HtmlResponse) -> str:
    assert response.request is not None
    try:
        result = run(middleware.process_response(response.request, response))
    except IgnoreRequest:
        return "dropped"
    assert result is response
    return "passed"


# -- strategies ----------------------------------------------------------------------------

FRAGMENTS = [
    "<html>",
    "<head>",
    "<meta charset='{cs}'>",
    '<meta http-equiv="Content-Type" content="text/html; charset={cs}">',
    "<title>",
    "</title>",
    "<body>",
    "<article>",
    "<p>",
    "</p>",
    "<div",
    "<div class='",
    "</div>",
    "<!--",
    "-->",
    "<script>",
    "</script>",
    "<style>p{}",
    "<![CDATA[",
    "]]>",
    "<?xml version='1.0'?>",
    "<!DOCTYPE html>",
    "&amp",
    "&#0;",
    "&#xFFFFFF;",
    "&#55296;",
    "&nbsp;",
    "<table><tr><td>",
    "<svg><foreignObject>",
    "<math>",
    "</body></html>",
    "\x00",
    "\ufeff",
    ARTICLE[:400],
    "Ωμέγα κείμενο",
    "中文分词测试，这是一个句子。",
    "ひらがなとカタカナ",
    "한국어 문장",
    "مرحبا بالعالم",
    "😀🎉🚀🔥",
    "!!!???...;;;",
    "x" * 300,
]
CHARSETS = ["utf-8", "gbk", "shift_jis", "latin-1", "utf-16", "utf-7", "x-unknown", "", "ascii"]

words = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30), st.sampled_from(SQL_INJECTIONS))


@st.composite
def malformed_html(draw: st.DrawFn) -> bytes:
    charset = draw(st.sampled_from(CHARSETS))
    parts = draw(st.lists(words, max_size=40))
    text = "".join(part.replace("{cs}", charset) for part in parts)
    text = text[: draw(st.integers(0, len(text)))]  # truncated anywhere
    encoding = draw(st.sampled_from(["utf-8", "gbk", "latin-1", "utf-16", "shift_jis"]))
    return text.encode(encoding, "replace")


pages = st.one_of(
    st.binary(max_size=4000),
    malformed_html(),
    malformed_html().map(lambda b: b.replace(b"<", b"\x00<")),  # NUL bytes everywhere
)
surrogates = st.text(  # lone surrogates: valid in a Python str, not encodable as UTF-8
    alphabet=st.one_of(st.characters(categories=["Cs"]), st.characters()), max_size=200
)
texts = st.one_of(
    st.text(max_size=3000),
    surrogates,
    st.lists(words, max_size=60).map(" ".join),
)


@st.composite
def sql_urls(draw: st.DrawFn) -> str:
    host = draw(st.sampled_from(["a.example", "b.example", "xn--bcher-kva.example", "[::1]"]))
    path = draw(st.text(alphabet=st.sampled_from(list(SQL_META) + list("az09é中")), max_size=40))
    query = draw(st.sampled_from(["", *SQL_INJECTIONS]))
    return f"https://{host}/{path}" + (f"?q={query}" if query else "")


# -- the pipeline ---------------------------------------------------------------------------


@FUZZ
@given(
    html=pages,
    text=st.one_of(st.none(), texts),
    url=st.one_of(sql_urls(), st.text(), surrogates.map("https://s.example/".__add__)),
)
def test_pipeline_survives_any_item(
    db_file: str, caps: Caps, html: bytes, text: str | None, url: str
) -> None:
    pipeline = getattr(test_pipeline_survives_any_item, "pipeline", None)
    if pipeline is None or pipeline.config.database_url != db_file:
        pipeline = make_pipeline(db_file)
        test_pipeline_survives_any_item.pipeline = pipeline  # type: ignore[attr-defined]
    item: dict[str, Any] = {"url": url, "html": html}
    if text is not None:
        item["text"] = text
    before = dict(item)
    if process(pipeline, item) == "passed":  # passed on untouched, but the fingerprint and
        # the canonical URL set and the HTML field removed (SIMHASH_FILTER_REMOVE_HTML)
        assert {k: v for k, v in item.items() if k not in {"fingerprint", "canonical_url"}} == {
            k: v for k, v in before.items() if k != "html"
        }
    caps.assert_within(MAX_BYTES)


@FUZZ
@given(body=pages, charset=st.sampled_from([*CHARSETS, None]), status=st.sampled_from([200, 404]))
def test_middleware_survives_any_response(
    db_file: str, caps: Caps, body: bytes, charset: str | None, status: int
) -> None:
    middleware = getattr(test_middleware_survives_any_response, "middleware", None)
    if middleware is None or middleware.config.database_url != db_file:
        middleware = make_middleware(db_file)
        test_middleware_survives_any_response.middleware = middleware  # type: ignore[attr-defined]
    headers = {"Content-Type": f"text/html; charset={charset}" if charset else "text/html"}
    url = "https://fuzz.example/page"
    response = HtmlResponse(url, body=body, status=status, headers=headers, request=Request(url))
    respond(middleware, response)
    assert stat(middleware, "errors") == 0  # bad pages are no_text or fingerprinted, never errors
    caps.assert_within(MAX_BYTES)


# -- the big and the strange, one by one ---------------------------------------------------

BIG = 20 * 1024 * 1024

STRANGE_PAGES: dict[str, Callable[[], bytes]] = {
    "20 MB page": lambda: (
        b"<html><body><article>" + ARTICLE.encode() * (BIG // len(ARTICLE)) + b"</article>"
    ),
    "100,000 nested divs": lambda: b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 3,
    "one 5 MB word": lambda: b"<html><body><p>" + b"a" * (5 * 1024 * 1024) + b"</p></body></html>",
    "all punctuation": lambda: b"<html><body><p>" + b"!?.,;:-" * 100_000 + b"</p></body></html>",
    "all emoji": lambda: ("<html><body><p>" + "😀🎉🚀🔥" * 100_000 + "</p>").encode(),
    "mixed scripts": lambda: (
        "<html><body><article><p>"
        + "Hello мир 世界 こんにちは 안녕 مرحبا שלום नमस्ते " * 20_000
        + "</p></article></body></html>"
    ).encode(),
    "random Han, 2 MB": lambda: (
        "<html><body><article><p>"
        + "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(700_000))
        + "</p></article></body></html>"
    ).encode(),
    "NUL bytes": lambda: b"<html>\x00<body>\x00" * 1000,
    "wrong charset": lambda: (
        '<html><head><meta charset="utf-8"></head><body><article>'
        + "\n".join(f"<p>{p}</p>" for p in HARBOUR_BRIDGE.paragraphs)
        + "</article></body></html>"
    ).encode("utf-16"),
    "utf-8 declared, gbk served": lambda: (
        '<html><head><meta charset="utf-8"></head><body><article><p>'
        + "垃圾分类新规实施一周年，市民分类习惯逐步养成。" * 200
        + "</p></article></body></html>"
    ).encode("gbk"),
}


@pytest.mark.parametrize("name", list(STRANGE_PAGES))
def test_strange_pages_meet_the_caps(db_file: str, caps: Caps, name: str) -> None:
    body = STRANGE_PAGES[name]()
    pipeline = make_pipeline(db_file)
    process(pipeline, {"url": f"https://strange.example/{len(body)}", "html": body})
    middleware = make_middleware(db_file)
    response = HtmlResponse(
        "https://strange.example/m", body=body, request=Request("https://strange.example/m")
    )
    respond(middleware, response)
    assert stat(pipeline, "errors") == stat(middleware, "errors") == 0
    caps.assert_within(MAX_BYTES)
    assert caps.extracted or b"\x00" in body[:4096]  # binary-looking pages are not parsed


@pytest.mark.parametrize(
    "text",
    [
        "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1_000_000)),  # ~13 s uncapped
        "word " * 2_000_000,
        "a" * 10_000_000,
        "😀" * 1_000_000,
    ],
    ids=["1M random Han", "10 MB of words", "one 10 MB word", "1M emoji"],
)
def test_huge_text_fields_are_capped_before_tokenization(
    db_file: str, caps: Caps, text: str
) -> None:
    pipeline = make_pipeline(db_file)
    process(pipeline, {"url": "https://huge.example/", "text": text})
    assert caps.tokenized == [MAX_TEXT_CHARS]
    assert stat(pipeline, "errors") == 0


# -- SQL metacharacters and control characters, stored and read back verbatim ---------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(url=sql_urls(), fingerprint=st.integers(0, 2**64 - 1))
def test_store_keeps_sql_metacharacters_verbatim(db_url: str, url: str, fingerprint: int) -> None:
    store = _stores.get(db_url)
    if store is None:
        store = _stores[db_url] = FingerprintStore.open(db_url, StoreOptions(spec="fuzz"))
    verdict = store.check_and_add(url, fingerprint, text_length=7)
    canonical = canonical_url(url)
    assert verdict.url == canonical
    if verdict.admitted:
        record = store.lookup(url)
        assert record is not None
        assert record.url == canonical
        assert (record.fingerprint == fingerprint) or verdict.kind is VerdictKind.UNCHANGED
        assert canonical in {m.url for m in store.near(record.fingerprint, 0)}
    else:
        logged = next(store.duplicates(limit=1))
        assert logged.url == canonical
    assert store.stats().pages >= 1  # the tables are all still there


_stores: dict[str, FingerprintStore] = {}


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    for store in _stores.values():
        store.close()
    _stores.clear()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(url=sql_urls(), noise=st.sampled_from([*SQL_INJECTIONS, SQL_META]))
def test_pipeline_keeps_sql_metacharacters_verbatim(db_file: str, url: str, noise: str) -> None:
    pipeline = make_pipeline(db_file)
    text = f"{noise}\n" + "\n\n".join(URBAN_BEES.paragraphs) + f"\n{noise}"
    base = {"url": url, "text": text}
    item = dict(base)
    outcome = process(pipeline, item)
    assert {k: item[k] for k in base} == base  # the item is passed on untouched
    run(pipeline.close_spider())
    with FingerprintStore.open_existing(db_file) as store:
        if outcome == "passed" and "fingerprint" in item:
            record = store.lookup(url)
            assert record is not None
            assert record.url == canonical_url(url)
            fingerprint = int(item["fingerprint"], 16)  # this version, or one within k
            distance = hamming_distance(record.fingerprint, fingerprint)
            assert distance <= store.scheme.max_distance
        assert store.stats().pages >= 1
