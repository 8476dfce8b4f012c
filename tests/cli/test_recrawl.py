"""Re-crawls as the command line reports them: pages are counted once however often a crawl
meets them again (``stats``), and a kept URL whose re-crawl is a copy of another page is
dropped, out of the index (``lookup``, ``near``), until its content is its own again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_corpus import (
    ARTICLE_A,
    ARTICLE_A1,
    ARTICLE_B,
    ARTICLE_C,
    FINGERPRINTER,
    URL_A,
    URL_A1,
    URL_B,
    hx,
    run,
)

from simhash_filter.cli import main as cli
from simhash_filter.store import FingerprintStore, StoreOptions, VerdictKind

CRAWL = [(URL_A, ARTICLE_A), (URL_B, ARTICLE_B), (URL_A1, ARTICLE_A1)]
"""One site's crawl: two pages of their own and a copy of the first."""


def crawl(url: str, pages: list[tuple[str, str]]) -> list[VerdictKind]:
    with FingerprintStore.open(url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        return [
            store.check_and_add(u, FINGERPRINTER.fingerprint(t), text_length=len(t)).kind  # type: ignore[arg-type]
            for u, t in pages
        ]


def stats(capsys: pytest.CaptureFixture[str], db: str) -> dict[str, object]:
    code, out, err = run(capsys, "--json", "stats", "--db", db)
    assert (code, err) == (0, "")
    document: dict[str, object] = json.loads(out)
    return document


def test_recrawls_count_pages_once(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(3):
        crawl(db_url, CRAWL)
    document = stats(capsys, db_url)
    assert (document["pages"], document["duplicates"], document["drop_events"]) == (2, 1, 3)
    assert document["dropped_share"] == round(1 / 3, 4)  # of 3 pages, not of 5 events
    assert document["domains"] == [
        {"domain": "mirror.example.org", "pages": 0, "duplicates": 1, "dropped_share": 1.0},
        {"domain": "news.example.com", "pages": 1, "duplicates": 0, "dropped_share": 0.0},
        {"domain": "space.example.org", "pages": 1, "duplicates": 0, "dropped_share": 0.0},
    ]
    code, out, _ = run(capsys, "stats", "--db", db_url)
    assert code == 0
    assert "duplicates dropped  1\n" in out
    assert "drops logged        3 (each re-crawl of a dropped page: one more)\n" in out
    assert "dropped share       33.3%\n" in out


def test_a_kept_url_whose_recrawl_is_a_copy_leaves_the_index(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert crawl(db_url, CRAWL) == [VerdictKind.NEW, VerdictKind.NEW, VerdictKind.DUPLICATE]
    # URL_B now serves a copy of URL_A's article
    assert crawl(db_url, [(URL_B, ARTICLE_A1)]) == [VerdictKind.DUPLICATE]
    code, out, _ = run(capsys, "--json", "lookup", URL_B, "--db", db_url)
    assert code == 0
    found = json.loads(out)
    assert found["status"] == "dropped"
    assert found["fingerprint"] == hx(ARTICLE_A1)  # the new verdict's, not the old version's
    assert found["kept_fingerprint"] == hx(ARTICLE_B)
    assert [d["duplicate_of"] for d in found["drops"]] == [URL_A]
    code, out, _ = run(capsys, "lookup", URL_B, "--db", db_url)
    assert out.startswith("status         dropped\n")
    assert f"as {hx(ARTICLE_B)}; its re-crawl was a copy of another page)" in out
    with FingerprintStore.open_existing(db_url) as store:
        # the old version is out of the index: nothing finds it any more
        assert URL_B not in {m.url for m in store.near(FINGERPRINTER.fingerprint(ARTICLE_B))}
        assert store.stats().pages == 1
    document = stats(capsys, db_url)
    assert (document["pages"], document["duplicates"], document["drop_events"]) == (1, 2, 2)
    # a page of its own again: admitted (its old row back in the index), kept
    assert crawl(db_url, [(URL_B, ARTICLE_C)]) == [VerdictKind.CHANGED]
    code, out, _ = run(capsys, "--json", "lookup", URL_B, "--db", db_url)
    found = json.loads(out)
    assert (found["status"], found["fingerprint"]) == ("kept", hx(ARTICLE_C))
    document = stats(capsys, db_url)
    assert (document["pages"], document["duplicates"], document["drop_events"]) == (2, 1, 2)
    # crawled again as it is: its own stored version, unchanged
    assert crawl(db_url, [(URL_B, ARTICLE_C)]) == [VerdictKind.UNCHANGED]


def test_a_recrawl_that_is_a_copy_again_changes_nothing(db_url: str) -> None:
    crawl(db_url, CRAWL)
    crawl(db_url, [(URL_B, ARTICLE_A1)])
    with FingerprintStore.open_existing(db_url) as store:
        before = store.lookup(URL_B)
    assert crawl(db_url, [(URL_B, ARTICLE_A1), (URL_B, ARTICLE_A)]) == [VerdictKind.DUPLICATE] * 2
    with FingerprintStore.open_existing(db_url) as store:
        assert store.lookup(URL_B) == before  # still out, as it left


def test_reindex_keeps_a_page_that_left_out_of_the_index(db_url: str) -> None:
    crawl(db_url, CRAWL)
    crawl(db_url, [(URL_B, ARTICLE_A1)])
    with FingerprintStore.open_existing(db_url) as store:
        store.reindex(blocks=5)
        assert URL_B not in {m.url for m in store.near(FINGERPRINTER.fingerprint(ARTICLE_B))}  # type: ignore[arg-type]
        assert store.stats().pages == 1
    assert crawl(db_url, [(URL_B, ARTICLE_B)]) == [VerdictKind.CHANGED]  # admitted again


def test_the_report_counts_pages_too(db_url: str, tmp_path: Path) -> None:
    for _ in range(3):
        crawl(db_url, CRAWL)
    report = tmp_path / "report.html"
    assert cli(["--db", db_url, "report", "--out", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert 'id="total-duplicates" data-count="1"' in html  # one page dropped (three drops)
    assert 'id="total-pages" data-count="2"' in html


def test_dupes_and_the_report_count_pages_not_events(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42: three crawls drop one page three times; ``dupes``, the report's samples,
    histograms and largest clusters show one dropped page, ``dupes --events`` the three."""
    from simhash_filter.store import audit

    for _ in range(3):
        crawl(db_url, CRAWL)
    code, out, _ = run(capsys, "--json", "dupes", "--db", db_url)
    assert code == 0
    assert [row["url"] for row in json.loads(out)] == [URL_A1]
    code, out, _ = run(capsys, "--json", "dupes", "--events", "--db", db_url)
    assert code == 0
    assert [row["url"] for row in json.loads(out)] == [URL_A1] * 3
    with FingerprintStore.open(db_url, StoreOptions(spec=FINGERPRINTER.spec)) as store:
        sampled, total = audit.sample_drops(store, 10)
        assert (len(sampled), total) == (1, 1)
        histogram = audit.similarity_histogram(store)
        assert sum(histogram.counts) + histogram.without_similarity == 1
        assert sum(audit.distance_counts(store).values()) == 1
        (group,) = audit.largest_drop_groups(store)
        assert (group.url, group.drops) == (URL_A, 1)
        timeline = audit.timeline(store)
        assert timeline is not None
        assert sum(bucket.dropped for bucket in timeline.buckets) == 1
