"""Widths and words (issue 44 item 5): tables fit ``$COLUMNS``; ``near`` says what it lists;
one similarity, the sketches', named so and shown the same by ``near``, ``dupes`` and
``diff``, beside the passages ``diff`` finds equal; the report's charts title their axes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cli_corpus import PAGES, URL_A, URL_A1, run

URLS = [url for url, _ in PAGES]


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    url = f"sqlite:///{tmp_path / 'words.db'}"
    feed = tmp_path / "pages.jsonl"
    feed.write_text("".join(json.dumps({"url": u, "text": t}) + "\n" for u, t in PAGES))
    assert run(capsys, "import", str(feed), "--no-progress", *options, "--db", url)[0] == 0
    return url


def test_dupes_explain_fits_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = imported(tmp_path, capsys, "--store-text")
    monkeypatch.delenv("COLUMNS", raising=False)
    code, whole, _ = run(capsys, "dupes", "--explain", "--db", db)  # a pipe: whole lines
    assert code == 0
    assert max(len(line) for line in whole.splitlines()) > 120
    assert "equal passages" in whole.splitlines()[0]
    for width in ("80", "120", "200"):
        monkeypatch.setenv("COLUMNS", width)
        code, out, _ = run(capsys, "dupes", "--explain", "--db", db)
        assert code == 0
        assert max(len(line) for line in out.splitlines()) <= int(width), out
        for dropped in (URL_A1, "https://news.example.com/river?print=1"):  # whole or cut
            assert dropped in out or "…" in out
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "dupes", "--db", db)  # URLs cut in the middle to fit
    assert max(len(line) for line in out.splitlines()) <= 100
    assert out.splitlines()[0].split()[:3] == ["dropped", "at", "distance"]


def test_near_names_what_it_lists_and_the_similarity_dupes_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = imported(tmp_path, capsys)  # no stored texts: a drop's neighbours by its original
    code, out, _ = run(capsys, "--json", "dupes", "--db", db)
    logged = {row["url"]: row["similarity"] for row in json.loads(out)}
    assert logged[URL_A1] < 1
    code, out, err = run(capsys, "--json", "near", URL_A1, "--db", db)
    assert code == 0
    (original,) = [row for row in json.loads(out) if row["url"] == URL_A]
    assert original["similarity"] == logged[URL_A1]  # not 1: the original's own sketch
    first = err.splitlines()[0]
    assert first.startswith(f"kept pages sharing a band of the index with {URL_A1}")
    assert "within 64" not in first
    assert "similarity: the sketches' estimate of the 5-grams the texts share" in first


def test_diff_names_its_two_measures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = imported(tmp_path, capsys, "--store-text")
    code, out, _ = run(capsys, "diff", URL_A, URL_A1, "--db", db)
    assert code == 0
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines()[:6])
    assert fields["similarity"].endswith("(the sketches' estimate of the 5-grams the texts share)")
    assert fields["equal passages"].endswith("(share of passages in both texts)")
    assert "text similarity" not in out


def test_the_report_charts_title_their_axes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = imported(tmp_path, capsys, "--store-text")
    report = tmp_path / "report.html"
    assert run(capsys, "report", "--out", str(report), "--db", db)[0] == 0
    charts = re.findall(r"<svg id=\"([a-z-]+)\".*?</svg>", report.read_text(), re.S)
    assert {"similarity-chart", "distance-chart", "timeline-chart"} <= set(charts)
    for svg in re.findall(r"<svg id=.*?</svg>", report.read_text(), re.S):
        titles = re.findall(r'<text class="axis"[^>]*>([^<]+)</text>', svg)
        assert len(titles) == 2, svg[:200]
        assert titles[1] in ("drops", "pages")
