"""``simhash-filter templates`` and the template share ``lookup`` shows (issue 43), on a
database a crawl of tests/support/template_site.py's newspaper filled."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.helpers import make_pipeline, run
from support.template_site import filler_story, story

from simhash_filter.cli import main
from simhash_filter.core.template import DEFAULT_MIN_PAGES, block_hash

HOST = "http://news.example"


def _story(n: int) -> tuple[str, str]:
    return f"{HOST}/Courier/story-{n}", story("Courier", f"Story {n}", n)


@pytest.fixture
def crawled(sqlite_url: str) -> str:
    """The host's first pages are stories whose extraction is the SECTIONS list (signed
    unsure, kept, their texts stored): the template is learned from them; then another
    story (nothing but the template) and a story whose extraction is right."""
    pipeline = make_pipeline(sqlite_url, STORE_TEXT=True)
    pages = [_story(n) for n in range(DEFAULT_MIN_PAGES + 1)]
    pages.append((f"{HOST}/Courier/filler", filler_story("Courier", "Filler", 1)))
    try:
        for url, html in pages:
            run(pipeline.process_item({"url": url, "html": html}))
            pipeline.filter.templates.drain()  # (the next page sees what was learned)
    finally:
        run(pipeline.close_spider())
    return sqlite_url


def _out(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> str:
    assert main(list(argv)) == code
    return capsys.readouterr().out


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    return json.loads(_out(capsys, *argv, "--json"))


def test_lookup_shows_a_pages_template_share(
    crawled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _json(capsys, "--db", crawled, "lookup", f"{HOST}/Courier/story-0")
    assert first["template"]["unsure"] is True
    assert first["template"]["share_now"] > 0.95  # its stored text: the menu, now template
    only = _json(capsys, "--db", crawled, "lookup", f"{HOST}/Courier/story-{DEFAULT_MIN_PAGES}")
    assert only["template"]["template_only"] is True
    assert only["template"]["share"] > 0.95
    filler = _json(capsys, "--db", crawled, "lookup", f"{HOST}/Courier/filler")
    assert filler["template"]["template_only"] is False
    assert filler["template"]["share"] < 0.5
    lines = _out(capsys, "--db", crawled, "lookup", f"{HOST}/Courier/story-{DEFAULT_MIN_PAGES}")
    assert "template share      all: nothing else was extracted (signed by its bytes)" in lines
    lines = _out(capsys, "--db", crawled, "lookup", f"{HOST}/Courier/story-0")
    assert "template share      signed before its host's template was known; 99%" in lines


def test_templates_lists_the_hosts_and_one_hosts_blocks_with_their_text(
    crawled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = _json(capsys, "--db", crawled, "templates")
    assert [h["host"] for h in hosts] == ["news.example"]
    assert hosts[0]["pages"] >= DEFAULT_MIN_PAGES  # the young host's pages taught (then sampled)
    assert hosts[0]["template_blocks"] >= 24  # the SECTIONS list's items at least
    one = _json(capsys, "--db", crawled, "templates", "--host", "NEWS.example", "--limit", "0")
    assert one["template_blocks"] == hosts[0]["template_blocks"] == len(one["blocks"])
    named = [b for b in one["blocks"] if b["text"]]
    menu = [b for b in named if b["text"].endswith(" section")]
    assert len(menu) == 24  # the menu's items, read back from the first pages' texts
    for block in named:
        assert f"{block_hash(block['text']):08x}" == block["block"]
        assert block["pages"] >= DEFAULT_MIN_PAGES
    first = _json(capsys, "--db", crawled, "templates", "--host", "news.example", "--limit", "3")
    assert first["blocks"] == one["blocks"][:3]
    table = _out(capsys, "--db", crawled, "templates", "--host", "news.example", "--limit", "3")
    assert f"the first 3 of {len(one['blocks'])}" in table
    for block in first["blocks"]:
        assert f"{block['block']}  " in table
        assert (block["text"] or "") in table
    assert main(["--db", crawled, "templates", "--host", "x.example"]) == 1
    assert "no template learned for x.example" in capsys.readouterr().err
