"""``import``, ``export`` and ``reindex`` through ``main([...])`` (SQLite and PostgreSQL)."""

# ruff: noqa: E501 -- expected outputs are as wide as the command prints them

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sys
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler
from support.cli_corpus import (
    ARTICLE_A,
    ARTICLE_A1,
    ARTICLE_A2,
    ARTICLE_B,
    ARTICLE_B1,
    ARTICLE_C,
    D_A1,
    D_B1,
    FINGERPRINTER,
    SHORT,
    URL_A,
    URL_A1,
    URL_A2,
    URL_B,
    URL_B1,
    URL_C,
    fill,
    fill_with_sketches,
    html_page,
    hx,
    lines,
    run,
    write_warc,
)

from simhash_filter.cli.importing import _Progress
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.engine import display_url


def summary(
    read: int,
    kept: int,
    dropped: int,
    unchanged: int = 0,
    changed: int = 0,
    no_text: int = 0,
    skipped: int = 0,
) -> str:
    return lines(
        f"read                       {read}",
        f"kept                       {kept}",
        f"dropped (near-duplicates)  {dropped}",
        f"unchanged (already in)     {unchanged}",
        f"changed (new version)      {changed}",
        f"no text (too short)        {no_text}",
        f"skipped (unreadable)       {skipped}",
    )


def write_jsonl(path: Path) -> Path:
    rows = [
        {"url": URL_A, "text": ARTICLE_A},
        {"url": URL_B, "text": ARTICLE_B},
        {"url": URL_C, "html": html_page("Rye bread", ARTICLE_C)},
        {"url": URL_A1, "text": ARTICLE_A1},
        {"url": URL_A2, "text": ARTICLE_A2},
        {"url": URL_B1, "text": ARTICLE_B1},
        {"url": "https://news.example.com/404", "text": SHORT},
    ]
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        out.write("{broken\n")
    return path


def pages_and_drops(url: str) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
    with FingerprintStore.open_existing(url) as store:
        from simhash_filter.store.reports import iter_pages

        pages = sorted((p.url, p.fingerprint) for p in iter_pages(store))
        drops = sorted((d.url, d.duplicate_of_url, d.distance) for d in store.duplicates())
    return pages, drops


# --- import ----------------------------------------------------------------------------


def test_import_jsonl_then_again(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "items.jsonl")
    code, out, err = run(capsys, "import", str(source), "--db", db_url)
    assert code == 0
    assert out == summary(read=7, kept=3, dropped=3, no_text=1, skipped=1)
    assert err == (
        f"skipped {source}:8: not JSON (Expecting property name enclosed in double quotes at column 2)\n"
    )
    pages, drops = pages_and_drops(db_url)
    assert pages == sorted(
        [
            (URL_A, int(hx(ARTICLE_A), 16)),
            (URL_B, int(hx(ARTICLE_B), 16)),
            (URL_C, int(hx(ARTICLE_C), 16)),
        ]
    )
    assert drops == [(URL_B1, URL_B, D_B1), (URL_A1, URL_A, D_A1), (URL_A2, URL_A, 0)]
    # The same corpus again: kept pages are unchanged, the copies are dropped again.
    code, out, _ = run(capsys, "import", "--json", str(source), "--db", db_url)
    document = json.loads(out)
    assert document.pop("seconds") >= 0
    counts = {
        "read": 7,
        "kept": 0,
        "dropped": 3,
        "unchanged": 3,
        "changed": 0,
        "no_text": 1,
        "skipped": 1,
    }
    assert document == {
        **counts,
        "sources": [{"source": str(source), **counts, "status": "complete"}],
    }


def test_import_html_folder(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    (site / "mirror").mkdir(parents=True)
    (site / "river.html").write_text(html_page("River district plan", ARTICLE_A), encoding="utf-8")
    (site / "mirror" / "river.html").write_text(
        html_page("River district plan", ARTICLE_A1), encoding="utf-8"
    )
    (site / "rye.htm").write_text(html_page("Rye bread", ARTICLE_C), encoding="utf-8")
    (site / "empty.html").write_text("<html><body></body></html>", encoding="utf-8")
    (site / "readme.txt").write_text(ARTICLE_B, encoding="utf-8")
    code, out, err = run(
        capsys,
        "import",
        str(site),
        "--base-url",
        "https://archive.example/site/",
        "--db",
        sqlite_url,
    )
    assert (code, err) == (0, "")
    # files in name order: empty, mirror/river, river, rye
    assert out == summary(read=4, kept=2, dropped=1, no_text=1)
    _, drops = pages_and_drops(sqlite_url)
    assert drops == [
        (
            "https://archive.example/site/river.html",
            "https://archive.example/site/mirror/river.html",
            D_A1,
        )
    ]


def test_import_warc(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = write_warc(tmp_path / "crawl.warc.gz")
    code, out, err = run(capsys, "import", str(archive), "--db", db_url)
    assert (code, err) == (0, "")
    assert out == summary(read=4, kept=3, dropped=1)
    pages, drops = pages_and_drops(db_url)
    assert [url for url, _ in pages] == sorted(
        [
            "https://news.example.com/river",
            "https://space.example.org/galaxy",
            "https://bread.example.net/rye",
        ]
    )
    assert drops == [
        (
            "https://bread.example.net/rye.txt",
            "https://bread.example.net/rye",
            0,
        )
    ]


def test_import_from_stdin_in_worker_processes(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = write_jsonl(tmp_path / "items.jsonl")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.read_bytes())))
    code, out, _ = run(
        capsys, "import", "-", "--jobs", "2", "--batch-size", "2", "--db", sqlite_url
    )
    assert code == 0
    assert out == summary(read=7, kept=3, dropped=3, no_text=1, skipped=1)
    serial = f"sqlite:///{tmp_path / 'serial.db'}"
    assert run(capsys, "import", str(source), "--db", serial)[0] == 0
    assert pages_and_drops(sqlite_url) == pages_and_drops(serial)
    # no --max-distance/--blocks: a new database gets the crawl's match rule (any simhash
    # distance) and its default index, 18 bands of the sketch (+ 4 fallback tables)
    code, out, _ = run(capsys, "stats", "--json", "--db", serial)
    document = json.loads(out)
    assert document["scheme"] == {
        "index": "minhash-lsh",
        "bits": 64,
        "max_distance": 64,
        "blocks": 18,
        "tables": 22,
    }
    assert document["rule"] == dataclasses.asdict(Config().match_rule())


@pytest.mark.parametrize("max_distance", [None, 0, 4])
def test_a_new_database_gets_the_same_defaults_from_import_and_the_crawl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], max_distance: int | None
) -> None:
    """Both open a new database through Config.open_store: the same index, blocks and rule."""
    source = write_jsonl(tmp_path / "items.jsonl")
    imported = f"sqlite:///{tmp_path / 'imported.db'}"
    option = [] if max_distance is None else ["--max-distance", str(max_distance)]
    assert run(capsys, "import", str(source), *option, "--db", imported)[0] == 0
    crawled = f"sqlite:///{tmp_path / 'crawled.db'}"
    settings: dict[str, object] = {
        "SIMHASH_FILTER_DATABASE_URL": crawled,
        "SIMHASH_FILTER_WORKERS": 0,
        "SIMHASH_FILTER_MAX_DISTANCE": max_distance,
    }
    crawler = get_crawler(settings_dict=settings)
    page_filter = PageFilter.for_crawler(crawler)
    page_filter.open()
    page_filter.close()
    with (
        FingerprintStore.open_existing(imported) as by_import,
        FingerprintStore.open_existing(crawled) as by_crawl,
    ):
        assert by_import.scheme == by_crawl.scheme
        assert by_import.rule == by_crawl.rule
        assert by_import.spec == by_crawl.spec


def test_import_makes_a_database_with_the_scheme_asked_for(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "items.jsonl")
    code, out, _ = run(capsys, "import", str(source), "--max-distance", "0", "--db", sqlite_url)
    # At k=0 only the exact copy is dropped; the edited copies are new pages.
    assert (code, out) == (0, summary(read=7, kept=5, dropped=1, no_text=1, skipped=1))
    code, out, _ = run(capsys, "stats", "--json", "--db", sqlite_url)
    assert json.loads(out)["scheme"] == {
        "index": "minhash-lsh",
        "bits": 64,
        "max_distance": 0,
        "blocks": 18,
        "tables": 22,
    }
    # An existing database keeps its scheme; asking for another one is an error.
    code, out, err = run(capsys, "import", str(source), "--max-distance", "3", "--db", sqlite_url)
    assert (code, out) == (1, "")
    assert err == (
        f"simhash-filter: error: {display_url(sqlite_url)} was indexed with another index "
        "scheme (max_distance: stored 0, requested 3; rule: stored candidates within 0 bits "
        "(0 without a sketch) confirmed at similarity 0.7, requested candidates within 3 bits "
        "(3 without a sketch) confirmed at similarity 0.7). Re-index it with `simhash-filter "
        f"reindex --blocks 18 --max-distance 3 --db {display_url(sqlite_url)}`, or open it "
        "with the stored settings.\n"
    )
    # the command it names works, and then the import does (issue 31.1)
    assert (
        run(capsys, "reindex", "--blocks", "18", "--max-distance", "3", "--db", sqlite_url)[0] == 0
    )
    code, out, _ = run(capsys, "import", str(source), "--max-distance", "3", "--db", sqlite_url)
    assert code == 0
    code, out, _ = run(capsys, "import", str(source), "--db", sqlite_url)
    assert (code, out) == (0, summary(read=7, kept=0, dropped=1, unchanged=5, no_text=1, skipped=1))


def test_import_errors(sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "import", str(tmp_path / "nothing.jsonl"), "--db", sqlite_url)
    assert (code, out, err) == (
        1,
        "",
        f"simhash-filter: error: {tmp_path / 'nothing.jsonl'}: no such file or folder\n",
    )
    odd = tmp_path / "data.bin"
    odd.write_bytes(b"\x00")
    code, out, err = run(capsys, "import", str(odd), "--db", sqlite_url)
    assert (code, out) == (1, "")
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists()  # no database for nothing
    assert err == (
        f"simhash-filter: error: cannot tell the format of {str(odd)!r} from its name: "
        "pass --format (jsonl, html, warc)\n"
    )
    other = FINGERPRINTER.spec.replace("shingle=1", "shingle=2")
    foreign = f"sqlite:///{tmp_path / 'other.db'}"
    FingerprintStore.open(foreign, StoreOptions(spec=other)).close()
    code, out, err = run(capsys, "import", str(write_jsonl(tmp_path / "i.jsonl")), "--db", foreign)
    assert (code, out) == (1, "")
    assert err.startswith(
        "simhash-filter: error: the database's fingerprints were made under another spec"
    )
    assert "(stored spec has 'shingle=2', requested spec has 'shingle=1')" in err


def test_many_skipped_records_are_summarized(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text("".join(f'{{"n": {n}}}\n' for n in range(12)), encoding="utf-8")
    code, out, err = run(capsys, "import", "--format", "jsonl", str(source), "--db", sqlite_url)
    assert code == 1  # every record skipped: nothing imported (issue 44 item 4)
    assert out == summary(read=0, kept=0, dropped=0, skipped=12)
    assert err.splitlines()[:-1] == [
        f"skipped {source}:{n}: no 'url' field" for n in range(1, 11)
    ] + ["(2 more skipped records not shown)"]
    assert err.splitlines()[-1].startswith(
        "simhash-filter: error: every record was skipped: nothing was imported"
    )


def test_progress_line_only_on_a_terminal() -> None:
    from collections import Counter

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    counts = Counter({"read": 5, "kept": 3, "dropped": 1, "no_text": 1})
    quiet = io.StringIO()
    _Progress(quiet, enabled=True).update(counts, force=True)
    assert quiet.getvalue() == ""
    terminal = Terminal()
    progress = _Progress(terminal, enabled=True)
    progress.update(counts, force=True)
    progress.done()
    assert terminal.getvalue().startswith(
        "\rread 5 · kept 3 · dropped 1 · unchanged 0 · changed 0 · no text 1 · "
    )
    assert terminal.getvalue().endswith("/s \n")
    disabled = Terminal()
    _Progress(disabled, enabled=False).update(counts, force=True)
    assert disabled.getvalue() == ""


# --- export ----------------------------------------------------------------------------


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def page_line(url: str, text: str, minute: int) -> str:
    return compact(
        {
            "kind": "page",
            "url": url,
            "fingerprint": hx(text),
            "text_length": len(text),
            "first_seen": f"2024-05-01T09:0{minute}:00Z",
            "last_seen": f"2024-05-01T09:0{minute}:00Z",
        }
    )


def drop_line(url: str, text: str, of: str, distance: int, day: int) -> str:
    return compact(
        {
            "kind": "duplicate",
            "url": url,
            "fingerprint": hx(text),
            "duplicate_of": of,
            "distance": distance,
            "similarity": None,
            "seen_at": f"2024-05-0{day}T10:00:00Z",
        }
    )


def test_export_jsonl(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill(db_url)
    code, out, err = run(capsys, "export", "--db", db_url)
    assert code == 0
    assert out == lines(
        page_line(URL_A, ARTICLE_A, 0),
        page_line(URL_B, ARTICLE_B, 1),
        page_line(URL_C, ARTICLE_C, 2),
        drop_line(URL_B1, ARTICLE_B1, URL_B, D_B1, 4),
        drop_line(URL_A2, ARTICLE_A2, URL_A, 0, 3),
        drop_line(URL_A1, ARTICLE_A1, URL_A, D_A1, 2),
    )
    assert err == "exported 3 pages and 3 duplicates to stdout\n"
    code, out, err = run(capsys, "export", "--pages", "--db", db_url)
    assert out.count("\n") == 3
    assert err == "exported 3 pages and 0 duplicates to stdout\n"


def test_export_csv(sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(sqlite_url)
    target = tmp_path / "drops.csv"
    code, out, err = run(capsys, "export", "--duplicates", "-o", str(target), "--db", sqlite_url)
    assert (code, out) == (0, "")
    assert err == f"exported 0 pages and 3 duplicates to {target}\n"
    assert target.read_text(encoding="utf-8") == lines(
        "url,fingerprint,duplicate_of,distance,similarity,seen_at",
        f"{URL_B1},{hx(ARTICLE_B1)},{URL_B},{D_B1},,2024-05-04T10:00:00Z",
        f"{URL_A2},{hx(ARTICLE_A2)},{URL_A},0,,2024-05-03T10:00:00Z",
        f"{URL_A1},{hx(ARTICLE_A1)},{URL_A},{D_A1},,2024-05-02T10:00:00Z",
    )
    code, out, _ = run(capsys, "export", "--format", "csv", "--db", sqlite_url)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == [
        "kind", "url", "fingerprint", "text_length", "first_seen", "last_seen", "duplicate_of", "distance", "similarity", "seen_at",
    ]  # fmt: skip
    assert [(r["kind"], r["url"]) for r in rows] == [
        ("page", URL_A), ("page", URL_B), ("page", URL_C),
        ("duplicate", URL_B1), ("duplicate", URL_A2), ("duplicate", URL_A1),
    ]  # fmt: skip
    assert rows[0]["duplicate_of"] == ""
    assert rows[3]["text_length"] == ""


def test_export_carries_the_similarity_of_each_drop(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A drop's sketch similarity, as stored (not rounded as ``dupes`` shows it), in JSON
    Lines and in CSV."""
    fill_with_sketches(db_url)
    with FingerprintStore.open_existing(db_url) as store:
        stored = {record.url: record.similarity for record in store.duplicates()}
    assert set(stored) == {URL_A1, URL_A2, URL_B1}
    assert all(value is not None for value in stored.values())
    assert stored[URL_A1] != round(stored[URL_A1], 3)  # an edited copy: not a round number
    code, out, _ = run(capsys, "export", "--duplicates", "--db", db_url)
    assert code == 0
    assert {row["url"]: row["similarity"] for row in map(json.loads, out.splitlines())} == stored
    target = tmp_path / "drops.csv"
    code, _, _ = run(capsys, "export", "--duplicates", "-o", str(target), "--db", db_url)
    assert code == 0
    with target.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    assert {row["url"]: float(row["similarity"]) for row in rows} == stored


def test_export_round_trips_through_import(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pages exported without their text cannot be re-imported (the reader skips each line
    with a reason, and import exits 1: nothing imported); with ``--texts`` they are, and
    the new database holds the same pages with the same fingerprints."""
    source = write_jsonl(tmp_path / "pages.jsonl")
    assert run(capsys, "import", str(source), "--store-text", "--db", sqlite_url)[0] == 0
    target = tmp_path / "dump.jsonl"
    assert run(capsys, "export", "--pages", "-o", str(target), "--db", sqlite_url)[0] == 0
    code, out, err = run(capsys, "import", str(target), "--db", f"sqlite:///{tmp_path / 'new.db'}")
    assert (code, out) == (1, summary(read=0, kept=0, dropped=0, skipped=3))
    assert err.splitlines()[0] == f"skipped {target}:1: no 'text' or 'html' field"
    texts = tmp_path / "texts.jsonl"
    assert run(capsys, "export", "--texts", "-o", str(texts), "--db", sqlite_url)[0] == 0
    again = f"sqlite:///{tmp_path / 'again.db'}"
    code, out, _ = run(capsys, "import", str(texts), "--db", again)
    assert (code, out) == (0, summary(read=3, kept=3, dropped=0))
    code, before, _ = run(capsys, "export", "--pages", "--format", "csv", "--db", sqlite_url)
    code, after, _ = run(capsys, "export", "--pages", "--format", "csv", "--db", again)
    urls_and_fingerprints = [line.split(",")[:2] for line in before.splitlines()]
    assert urls_and_fingerprints == [line.split(",")[:2] for line in after.splitlines()]


# --- reindex ---------------------------------------------------------------------------


def test_reindex(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    def near(url: str) -> str:
        return run(capsys, "near", "--nl", url, "--db", db_url)[1]

    def near_a(distance: int) -> str:
        found = {"url": URL_A, "fingerprint": hx(ARTICLE_A), "distance": distance}
        return compact({**found, "similarity": None}) + "\n"

    def reindexed(*options: str) -> str:
        code, out, err = run(capsys, "reindex", *options, "--db", db_url)
        assert (code, err) == (0, "")
        return out

    fill(db_url, max_distance=3)  # the paper's scheme: 4 blocks, 4 tables
    assert reindexed("--blocks", "6") == lines(
        "before  k=3 blocks=4 tables=4",
        "after   k=3 blocks=6 tables=20",
        "pages   3",
    )
    assert near(URL_A1) == near_a(D_A1)
    document = json.loads(reindexed("--json", "--max-distance", "0"))
    assert document.pop("seconds") >= 0
    assert document == {
        "before": {"index": "permuted", "max_distance": 3, "blocks": 6, "tables": 20},
        "after": {"index": "permuted", "max_distance": 0, "blocks": 1, "tables": 1},
        "pages": 3,
    }
    code, out, _ = run(capsys, "near", "--nl", URL_A1, "--db", db_url)
    assert (code, out) == (0, "")  # D_A1 bits away: beyond the new k
    assert near(URL_A2) == near_a(0)
    # --max-distance alone takes that k's default blocks: k=4 -> 6 blocks, 15 tables
    assert reindexed("--max-distance", "4") == lines(
        "before  k=0 blocks=1 tables=1",
        "after   k=4 blocks=6 tables=15",
        "pages   3",
    )
    assert near(URL_A1) == near_a(D_A1)

    # Another index kind: multi-index hashing, blocks probed within a radius.
    code, out, err = run(
        capsys, "reindex", "--json", "--index", "multi-index", "--max-distance", "7",
        "--db", db_url,
    )  # fmt: skip
    assert (code, err) == (0, "")
    after = json.loads(out)["after"]
    assert (after["index"], after["max_distance"]) == ("multi-index", 7)
    code, out, _ = run(capsys, "near", "--nl", URL_A1, "--db", db_url)
    assert json.loads(out)["url"] == URL_A
    # Blocks that cannot reach k: a usage error, nothing changed.
    code, out, err = run(capsys, "reindex", "--index", "permuted", "--blocks", "2", "--db", db_url)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith("simhash-filter reindex: error: ")
    code, out, _ = run(capsys, "stats", "--json", "--db", db_url)
    assert json.loads(out)["scheme"]["max_distance"] == 7


def test_import_stores_each_page_with_its_sketch(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the crawl does (page.work.sign_page): the second signature goes in with the page."""
    source = write_jsonl(tmp_path / "items.jsonl")
    assert run(capsys, "import", str(source), "--db", sqlite_url)[0] == 0
    from simhash_filter.store.reports import page_sketches

    with FingerprintStore.open_existing(sqlite_url) as store:
        page = store.lookup(URL_A)
        assert page is not None
        assert page_sketches(store, [page.page_id]) == {
            page.page_id: FINGERPRINTER.sketch(ARTICLE_A)
        }
