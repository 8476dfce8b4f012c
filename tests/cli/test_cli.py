"""The query commands through ``main([...])``: exact outputs on a database filled with
real fingerprints (SQLite and PostgreSQL), errors and usage."""

# ruff: noqa: E501 -- the expected tables are as wide as the command prints them

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest
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
    dist,
    fill,
    fill_with_sketches,
    html_page,
    hx,
    lines,
    run,
)

from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.engine import display_url
from simhash_filter.store.reports import database_size
from simhash_filter.store.schema import SCHEMA_VERSION
from simhash_filter.store.server_settings import ServerSettings, server_settings


@pytest.fixture
def filled(db_url: str) -> str:
    fill(db_url)
    return db_url


@pytest.fixture
def filled_sqlite(sqlite_url: str) -> str:
    fill(sqlite_url)
    return sqlite_url


def size_of(url: str) -> int:
    with FingerprintStore.open_existing(url) as store:
        size = database_size(store)
    assert size is not None
    return size


def human(size: int) -> str:
    return f"{size / 1024:.1f} KiB ({size} bytes)" if size < 1024**2 else f"{size} bytes"


def settings_of(url: str) -> ServerSettings | None:
    with FingerprintStore.open_existing(url) as store:
        return server_settings(store)


def server_lines(url: str) -> list[str]:
    """What ``stats`` adds on PostgreSQL (a test database's indexes fit any server's
    buffers and WAL, so no advice); nothing on SQLite."""
    s = settings_of(url)
    if s is None:
        return []

    def size(n: int) -> str:
        unit = max(u for u in range(5) if u == 0 or n >= 1024**u)
        name = ("bytes", "KiB", "MiB", "GiB", "TiB")[unit]
        return f"{n} bytes" if unit == 0 else f"{n / 1024**unit:.1f} {name} ({n} bytes)"

    return [
        f"indexes             {size(s.index_bytes)}",
        f"shared_buffers      {size(s.shared_buffers)}",
        f"max_wal_size        {size(s.max_wal_size)}",
        f"checkpoint_timeout  {s.checkpoint_timeout_s} s",
        f"wal_compression     {s.wal_compression}",
    ]


# --- the texts really are what the tests say ------------------------------------------


def test_corpus_distances() -> None:
    # What the expected outputs below rely on (a changed core that breaks it fails here).
    assert 0 < D_A1 <= 3
    assert 0 < D_B1 <= 3
    assert dist(ARTICLE_A, ARTICLE_A2) == 0
    assert min(dist(ARTICLE_A, ARTICLE_B), dist(ARTICLE_A, ARTICLE_C)) > 10
    assert FINGERPRINTER.fingerprint(SHORT) is None


# --- stats -----------------------------------------------------------------------------


def test_stats_table(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "stats", "--db", filled)
    size = size_of(filled)
    assert (code, err) == (0, "")
    assert out == lines(
        f"database            {display_url(filled)}",
        "pages kept          3",
        "duplicates dropped  3",
        "dropped share       50.0%",
        "domains             4",
        "scheme              f=64 k=4 blocks=6 tables=15",
        "index               permuted",
        "match rule          none (the simhash distance alone: within k=4)",
        f"spec                {FINGERPRINTER.spec}",
        f"schema version      {SCHEMA_VERSION}",
        f"size                {human(size)}",
        "created             2024-05-01T08:00:00Z",
        *server_lines(filled),
        "",
        "domains (most dropped first)",
        "domain              kept  dropped  dropped %",
        "------------------  ----  -------  ---------",
        "mirror.example.org     0        2     100.0%",
        "news.example.com       1        1      50.0%",
        "bread.example.net      1        0       0.0%",
        "space.example.org      1        0       0.0%",
    )


def test_stats_json_and_top_domains(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--json", "stats", "--domains", "2", "--db", filled)
    assert (code, err) == (0, "")
    server = settings_of(filled)
    postgresql = {} if server is None else {"postgresql": {**server._asdict(), "advice": []}}
    assert json.loads(out) == {
        **postgresql,
        "database": display_url(filled),
        "pages": 3,
        "duplicates": 3,
        "drop_events": 3,
        "dropped_share": 0.5,
        "domain_count": 4,
        "scheme": {"index": "permuted", "bits": 64, "max_distance": 4, "blocks": 6, "tables": 15},
        "rule": None,
        "spec": FINGERPRINTER.spec,
        "schema_version": SCHEMA_VERSION,
        "size_bytes": size_of(filled),
        "domains": [
            {"domain": "mirror.example.org", "pages": 0, "duplicates": 2, "dropped_share": 1.0},
            {"domain": "news.example.com", "pages": 1, "duplicates": 1, "dropped_share": 0.5},
        ],
        "created_at": "2024-05-01T08:00:00Z",
    }
    code, out, _ = run(capsys, "stats", "--nl", "--db", filled)
    assert code == 0
    assert out.count("\n") == 1
    assert json.loads(out)["domain_count"] == 4


def test_stats_shows_the_stored_match_rule_and_index_kind(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under which rule the database decides: every threshold stored in its meta (none
    of them the defaults), and the index kind, in each output form."""
    rule = MatchRule(
        candidate_distance=7,
        min_similarity=0.65,
        fallback_distance=2,
        min_page_similarity=0.75,
        max_text_share=0.2,
    )
    FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec, rule=rule, index="multi-index")
    ).close()
    code, out, err = run(capsys, "stats", "--db", db_url)
    assert (code, err) == (0, "")
    assert "\nscheme              f=64 k=7 blocks=3 tables=3\n" in out
    assert "\nindex               multi-index\n" in out
    assert (
        "\nmatch rule          candidate_distance=7 min_similarity=0.65 fallback_distance=2 "
        "min_page_similarity=0.75 max_text_share=0.2\n"
    ) in out
    stored = {
        "candidate_distance": 7,
        "min_similarity": 0.65,
        "fallback_distance": 2,
        "min_page_similarity": 0.75,
        "max_text_share": 0.2,
    }
    for mode in ("--json", "--nl"):
        code, out, _ = run(capsys, "stats", mode, "--db", db_url)
        document = json.loads(out)
        assert code == 0
        assert document["rule"] == stored
        assert document["scheme"]["index"] == "multi-index"


def test_stats_table_says_when_domains_are_cut(
    filled_sqlite: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "stats", "--domains", "1", "--db", filled_sqlite)
    assert code == 0
    assert out.endswith(
        lines(
            "top 1 of 4 domains (most dropped first; --domains 0: all)",
            "domain              kept  dropped  dropped %",
            "------------------  ----  -------  ---------",
            "mirror.example.org     0        2     100.0%",
        )
    )


def test_stats_of_an_empty_database(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill(sqlite_url, pages=[])
    code, out, _ = run(capsys, "stats", "--db", sqlite_url)
    assert code == 0
    assert "pages kept          0\n" in out
    assert "dropped share       0.0%\n" in out
    assert "domains (most" not in out


# --- dupes -----------------------------------------------------------------------------


def test_dupes_table_newest_first(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dupes", "--db", filled)
    assert (code, err) == (0, "")
    assert out == lines(
        "dropped at            distance  url                                     duplicate of",
        "--------------------  --------  --------------------------------------  --------------------------------",
        f"2024-05-04T10:00:00Z         {D_B1}  {URL_B1}  {URL_B}",
        f"2024-05-03T10:00:00Z         0  {URL_A2}  {URL_A}",
        f"2024-05-02T10:00:00Z         {D_A1}  {URL_A1}   {URL_A}",
    )


def test_dupes_filters_and_formats(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dupes", "--nl", "--domain", "News.Example.com", "--db", filled)
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "url": URL_A2,
            "fingerprint": hx(ARTICLE_A2),
            "duplicate_of": URL_A,
            "duplicate_of_fingerprint": hx(ARTICLE_A),
            "distance": 0,
            "similarity": None,
            "seen_at": "2024-05-03T10:00:00Z",
        }
    ]
    code, out, err = run(capsys, "dupes", "--json", "--since", "2024-05-03T00:00Z", "--db", filled)
    assert (code, err) == (0, "")
    assert [d["url"] for d in json.loads(out)] == [URL_B1, URL_A2]
    code, out, err = run(capsys, "dupes", "--limit", "1", "--db", filled)
    assert code == 0
    assert out.splitlines()[2:] == [f"2024-05-04T10:00:00Z         {D_B1}  {URL_B1}  {URL_B}"]
    assert err == "(showing the first 1 dropped pages; --limit 0 shows all)\n"
    code, out, err = run(capsys, "dupes", "--since", "1d", "--db", filled)
    assert (code, out, err) == (0, "", "no dropped pages match\n")
    code, out, err = run(capsys, "dupes", "--json", "--domain", "bread.example.net", "--db", filled)
    assert (code, out, err) == (0, "[]\n", "no dropped pages match\n")


# --- near ------------------------------------------------------------------------------


def test_near_a_text_file_html_file_stdin_and_fingerprint(
    filled: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The text of the dropped copy: the kept article is D_A1 bits away.
    expected = lines(
        "distance  fingerprint       url",
        "--------  ----------------  ------------------------------",
        f"       {D_A1}  {hx(ARTICLE_A)}  {URL_A}",
    )
    text_file = tmp_path / "article.txt"
    text_file.write_text(ARTICLE_A1, encoding="utf-8")
    code, out, err = run(capsys, "near", str(text_file), "--db", filled)
    assert (code, out) == (0, expected)
    assert err == heading(4, hx(ARTICLE_A1), text_file) + "\n"

    html_file = tmp_path / "page.html"
    html_file.write_text(html_page("River district plan", ARTICLE_A1), encoding="utf-8")
    code, out, _ = run(capsys, "near", str(html_file), "--db", filled)
    assert (code, out) == (0, expected)

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ARTICLE_A1.encode())))
    code, out, _ = run(capsys, "near", "-", "--db", filled)
    assert (code, out) == (0, expected)

    code, out, err = run(capsys, "near", hx(ARTICLE_A1), "--k", "0", "--db", filled)
    assert (code, out) == (0, "")
    assert err == (heading(0, hx(ARTICLE_A1), hx(ARTICLE_A1)) + "\nno stored page is that near\n")
    code, out, _ = run(capsys, "near", hx(ARTICLE_A), "--k", "0", "--db", filled)
    assert (code, out) == (
        0,
        lines(*expected.splitlines()[:2], f"       0  {hx(ARTICLE_A)}  {URL_A}"),
    )


def heading(k: int, fingerprint: str, source: object) -> str:
    """``near``'s first line under the simhash tables (issue 44 item 5: what it lists)."""
    return (
        f"kept pages within {k} bits of {fingerprint} ({source}), most alike first; "
        "similarity: the sketches' estimate of the 5-grams the texts share:"
    )


def test_near_a_stored_url_excludes_itself(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "near", URL_A, "--db", filled)
    assert (code, out) == (0, "")
    assert err == (heading(4, hx(ARTICLE_A), URL_A) + "\nno stored page is that near\n")
    # A dropped URL is looked up by the fingerprint it was dropped with.
    code, out, _ = run(capsys, "near", "--json", URL_A2, "--db", filled)
    assert code == 0
    assert json.loads(out) == [
        {"url": URL_A, "fingerprint": hx(ARTICLE_A), "distance": 0, "similarity": None}
    ]
    code, out, err = run(capsys, "near", "--text", ARTICLE_C, "--k", "0", "--db", filled)
    assert code == 0
    assert out.splitlines()[2:] == [f"       0  {hx(ARTICLE_C)}  {URL_C}"]


def test_near_errors(
    filled_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = filled_sqlite
    code, out, err = run(capsys, "near", "https://unknown.example/", "--db", db)
    assert (code, out) == (1, "")
    assert err == (
        "simhash-filter: error: https://unknown.example/: not in the database "
        "(neither kept nor dropped)\n"
    )
    code, _, err = run(capsys, "near", str(tmp_path / "missing.txt"), "--db", db)
    assert code == 1
    assert err == (
        f"simhash-filter: error: {tmp_path / 'missing.txt'}: no such file "
        "(and not a URL or a 16-digit hex fingerprint)\n"
    )
    code, _, err = run(capsys, "near", "--text", SHORT, "--db", db)  # a passage search
    assert code == 0, err
    assert "too short to fingerprint" in err
    code, _, err = run(capsys, "near", hx(ARTICLE_A), "--k", "5", "--db", db)
    assert (code, err) == (
        1,
        "simhash-filter: error: k=5 is beyond the index's max_distance=4: run "
        f"`simhash-filter reindex --max-distance 5 --db {display_url(db)}` "
        "first\n",
    )
    empty_html = tmp_path / "empty.html"
    empty_html.write_text("<html><body><img src='a.png'></body></html>", encoding="utf-8")
    code, _, err = run(capsys, "near", str(empty_html), "--db", db)
    assert (code, err) == (
        1,
        f"simhash-filter: error: {empty_html}: no main text found in the HTML\n",
    )


# --- lookup ----------------------------------------------------------------------------


def test_lookup_kept_page(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lookup", "https://NEWS.example.com/river#top", "--db", filled)
    assert (code, err) == (0, "")
    assert out == lines(
        "status              kept",
        f"url                 {URL_A}",
        f"fingerprint         {hx(ARTICLE_A)}",
        f"text length         {len(ARTICLE_A)}",
        "first seen          2024-05-01T09:00:00Z",
        "last seen           2024-05-01T09:00:00Z",
        "duplicates dropped  2",
        "",
        "its dropped duplicates",
        "dropped at            distance  dropped url",
        "--------------------  --------  --------------------------------------",
        f"2024-05-03T10:00:00Z         0  {URL_A2}",
        f"2024-05-02T10:00:00Z         {D_A1}  {URL_A1}",
    )


def test_lookup_dropped_and_unknown(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lookup", URL_B1, "--db", filled)
    assert (code, err) == (0, "")
    assert out == lines(
        "status         dropped",
        f"url            {URL_B1}",
        f"fingerprint    {hx(ARTICLE_B1)}",
        "times dropped  1",
        "",
        "dropped as a near-duplicate of",
        "dropped at            distance  duplicate of",
        "--------------------  --------  --------------------------------",
        f"2024-05-04T10:00:00Z         {D_B1}  {URL_B}",
    )
    code, out, _ = run(capsys, "lookup", "--json", URL_B1, "--db", filled)
    assert json.loads(out) == {
        "query": URL_B1,
        "status": "dropped",
        "url": URL_B1,
        "fingerprint": hx(ARTICLE_B1),
        "drops": [
            {
                "url": URL_B1,
                "fingerprint": hx(ARTICLE_B1),
                "duplicate_of": URL_B,
                "duplicate_of_fingerprint": hx(ARTICLE_B),
                "distance": D_B1,
                "similarity": None,
                "seen_at": "2024-05-04T10:00:00Z",
            }
        ],
    }
    code, out, _ = run(capsys, "lookup", "https://nowhere.example/", "--db", filled)
    assert (code, out) == (  # exit 1: not found, as grep
        1,
        lines(
            "status  unknown (neither kept, dropped nor skipped)",
            "url     https://nowhere.example/",
        ),
    )
    code, out, _ = run(capsys, "lookup", "--nl", "https://nowhere.example/", "--db", filled)
    assert out == '{"query":"https://nowhere.example/","status":"unknown"}\n'


def test_lookup_json_of_kept_page(filled_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lookup", "--json", URL_C, "--db", filled_sqlite)
    assert code == 0
    assert json.loads(out) == {
        "query": URL_C,
        "status": "kept",
        "url": URL_C,
        "fingerprint": hx(ARTICLE_C),
        "text_length": len(ARTICLE_C),
        "first_seen": "2024-05-01T09:02:00Z",
        "last_seen": "2024-05-01T09:02:00Z",
        "duplicates": [],
        "near": [],
    }


# --- clusters --------------------------------------------------------------------------


def test_clusters_table(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "clusters", "--db", filled)
    assert (code, err) == (0, "")
    assert out == lines(
        "cluster 1: 3 pages (1 kept, 2 dropped)",
        "role     distance  fingerprint       url                                     duplicate of",
        "-------  --------  ----------------  --------------------------------------  ------------------------------",
        f"kept            0  {hx(ARTICLE_A)}  {URL_A}",
        f"dropped         0  {hx(ARTICLE_A2)}  {URL_A2}  {URL_A}",
        f"dropped         {D_A1}  {hx(ARTICLE_A1)}  {URL_A1}   {URL_A}",
        "",
        "cluster 2: 2 pages (1 kept, 1 dropped)",
        "role     distance  fingerprint       url                                     duplicate of",
        "-------  --------  ----------------  --------------------------------------  --------------------------------",
        f"kept            0  {hx(ARTICLE_B)}  {URL_B}",
        f"dropped         {D_B1}  {hx(ARTICLE_B1)}  {URL_B1}  {URL_B}",
    )
    code, out, err = run(capsys, "clusters", "--min-size", "3", "--nl", "--db", filled)
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "cluster": 1,
            "size": 3,
            "kept": 1,
            "dropped": 2,
            "pages": [
                {
                    "role": "kept",
                    "url": URL_A,
                    "fingerprint": hx(ARTICLE_A),
                    "distance": 0,
                    "similarity": None,
                },
                {
                    "role": "dropped",
                    "url": URL_A2,
                    "fingerprint": hx(ARTICLE_A2),
                    "distance": 0,
                    "similarity": None,
                    "duplicate_of": URL_A,
                },
                {
                    "role": "dropped",
                    "url": URL_A1,
                    "fingerprint": hx(ARTICLE_A1),
                    "distance": D_A1,
                    "similarity": None,
                    "duplicate_of": URL_A,
                },
            ],
        }
    ]
    code, out, err = run(capsys, "clusters", "--limit", "1", "--json", "--db", filled)
    assert [c["size"] for c in json.loads(out)] == [3]
    assert err == "(showing the 1 largest of 2 clusters; --limit 0 shows all)\n"
    code, out, err = run(capsys, "clusters", "--min-size", "4", "--db", filled)
    assert (code, out, err) == (0, "", "no clusters\n")


def test_clusters_join_kept_pages_after_k_was_raised(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # With k=0 only the exact copy is dropped and the edited copy is kept. Raising k
    # to 3 puts both kept pages (D_A1 apart) in one cluster with the dropped copy.
    fill(
        db_url,
        pages=[(URL_A, ARTICLE_A), (URL_A1, ARTICLE_A1), (URL_A2, ARTICLE_A2)],
        max_distance=0,
    )
    code, out, err = run(capsys, "clusters", "--json", "--db", db_url)
    assert (code, err) == (0, "")
    assert [[p["url"] for p in c["pages"]] for c in json.loads(out)] == [[URL_A, URL_A2]]
    code, _, err = run(capsys, "clusters", "--k", "2", "--db", db_url)
    assert (code, err) == (
        1,
        "simhash-filter: error: k=2 is beyond the index's max_distance=0: run "
        f"`simhash-filter reindex --max-distance 2 --db {display_url(db_url)}` first\n",
    )
    assert run(capsys, "reindex", "--max-distance", "3", "--db", db_url)[0] == 0
    code, out, err = run(capsys, "clusters", "--db", db_url)
    assert (code, err) == (0, "")
    assert out == lines(
        "cluster 1: 3 pages (2 kept, 1 dropped)",
        "role     distance  fingerprint       url                                     duplicate of",
        "-------  --------  ----------------  --------------------------------------  ------------------------------",
        f"kept            0  {hx(ARTICLE_A)}  {URL_A}",
        f"kept            {D_A1}  {hx(ARTICLE_A1)}  {URL_A1}",
        f"dropped         0  {hx(ARTICLE_A2)}  {URL_A2}  {URL_A}",
    )
    code, out, _ = run(capsys, "lookup", "--json", URL_A, "--db", db_url)
    assert json.loads(out)["near"] == [
        {"url": URL_A1, "fingerprint": hx(ARTICLE_A1), "distance": D_A1, "similarity": None}
    ]
    code, out, _ = run(capsys, "lookup", URL_A1, "--db", db_url)
    assert out.endswith(
        lines(
            "other kept pages within k",
            "distance  url",
            "--------  ------------------------------",
            f"       {D_A1}  {URL_A}",
        )
    )
    # At k=0 the edited copy stands alone again.
    code, out, _ = run(capsys, "clusters", "--k", "0", "--json", "--db", db_url)
    assert [[p["url"] for p in c["pages"]] for c in json.loads(out)] == [[URL_A, URL_A2]]


# --- fingerprint -----------------------------------------------------------------------


def test_fingerprint_of_text_with_features(
    filled_sqlite: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "fingerprint", "--text", ARTICLE_C, "--features", "3", "--db", filled_sqlite
    )
    features = list(FINGERPRINTER.features(ARTICLE_C).items())
    tokens = len(FINGERPRINTER.tokens(ARTICLE_C))
    assert (code, err) == (0, "")
    width = max(len(f"{w:.4g}") for _, w in features[:3])
    assert out == lines(
        "source       --text",
        f"fingerprint  {hx(ARTICLE_C)}",
        f"characters   {len(ARTICLE_C)}",
        f"tokens       {tokens}",
        f"spec         {FINGERPRINTER.spec}",
        "",
        f"top 3 of {len(features)} features",
        f"{'weight'.rjust(width)}  feature",
        f"{'-' * max(width, 6)}  {'-' * max(7, *(len(f) for f, _ in features[:3]))}",
        *(f"{f'{w:.4g}'.rjust(max(width, 6))}  {f}" for f, w in features[:3]),
    )
    assert features[0][1] > features[-1][1]  # heaviest first
    code, out, _ = run(
        capsys, "fingerprint", "--json", "--text", ARTICLE_C, "--features", "--db", filled_sqlite
    )
    document = json.loads(out)
    assert document["fingerprint"] == hx(ARTICLE_C)
    assert document["tokens"] == tokens
    assert document["features"] == [{"feature": f, "weight": round(w, 4)} for f, w in features[:20]]


def test_fingerprint_of_files_stdin_urls_and_hex(
    filled_sqlite: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = filled_sqlite
    page = tmp_path / "rye"  # no suffix: sniffed as HTML
    page.write_text(html_page("Rye bread", ARTICLE_C), encoding="utf-8")
    code, out, _ = run(capsys, "fingerprint", "--nl", str(page), "--db", db)
    extracted = ARTICLE_C
    assert code == 0
    assert json.loads(out) == {
        "source": str(page),
        "fingerprint": hx(extracted),
        "characters": len(extracted),
        "tokens": len(FINGERPRINTER.tokens(extracted)),
        "spec": FINGERPRINTER.spec,
    }
    code, out, _ = run(capsys, "fingerprint", "--as", "text", "--nl", str(page), "--db", db)
    assert json.loads(out)["characters"] == len(html_page("Rye bread", ARTICLE_C))

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ARTICLE_B.encode())))
    code, out, _ = run(capsys, "fingerprint", "-", "--json", "--db", db)
    assert json.loads(out)["fingerprint"] == hx(ARTICLE_B)

    code, out, _ = run(capsys, "fingerprint", URL_B1, "--db", db)
    assert (code, out) == (0, lines(f"source       {URL_B1}", f"fingerprint  {hx(ARTICLE_B1)}"))
    code, out, _ = run(capsys, "fingerprint", "0x" + hx(ARTICLE_B).upper(), "--db", db)
    assert (code, out) == (
        0,
        lines(f"source       {hx(ARTICLE_B)}", f"fingerprint  {hx(ARTICLE_B)}"),
    )
    code, _, err = run(capsys, "fingerprint", URL_B, "--features", "--db", db)
    assert (code, err) == (
        1,
        "simhash-filter: error: features need the text: the database keeps fingerprints, "
        "not texts; pass the page's HTML or text file (or --text)\n",
    )


def test_fingerprint_needs_no_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    code, out, err = run(capsys, "fingerprint", "--text", ARTICLE_A, "--db", str(missing))
    assert (code, err) == (0, "")
    assert f"fingerprint  {hx(ARTICLE_A)}\n" in out
    assert not missing.exists()
    code, _, err = run(capsys, "fingerprint", URL_A, "--db", str(missing))
    assert code == 1
    assert err.startswith("simhash-filter: error: no database at sqlite:///")


# --- databases that are not there, broken, foreign or made under another spec -------------


QUERIES = [
    ["stats"],
    ["dupes"],
    ["near", "0123456789abcdef"],
    ["lookup", URL_A],
    ["clusters"],
    ["export"],
    ["reindex", "--max-distance", "2"],
]


@pytest.mark.parametrize("argv", QUERIES, ids=lambda a: a[0])
def test_queries_never_create_a_database(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "dedup.db"
    code, out, err = run(capsys, *argv, "--db", str(missing))
    assert (code, out) == (1, "")
    assert err == f"simhash-filter: error: no database at {missing} (the file does not exist)\n"
    assert not missing.exists()


@pytest.mark.parametrize("argv", QUERIES, ids=lambda a: a[0])
def test_a_broken_file_is_a_clear_error(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database at all\n" * 200)
    code, out, err = run(capsys, *argv, "--db", str(broken))
    assert (code, out) == (1, "")
    assert err == (
        f"simhash-filter: error: sqlite:///{broken} is not a usable SQLite database: "
        "file is not a database\n"
    )
    assert "Traceback" not in err


def test_a_foreign_sqlite_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "app.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    code, out, err = run(capsys, "stats", "--db", f"sqlite:///{foreign}")
    assert (code, out) == (1, "")
    assert err == (
        f"simhash-filter: error: sqlite:///{foreign} holds no simhash-filter index "
        "(no meta table)\n"
    )


def test_debug_shows_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--debug", "stats", "--db", str(tmp_path / "none.db"))
    assert code == 1
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith("(the file does not exist)\n")


def test_other_spec_cannot_compare_texts(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    other = FINGERPRINTER.spec.replace("shingle=1", "shingle=2")
    assert other != FINGERPRINTER.spec
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=other)) as store:
        store.check_and_add(URL_A, 0x0123456789ABCDEF)
    code, out, err = run(capsys, "near", "--text", ARTICLE_A, "--db", sqlite_url)
    assert (code, out) == (1, "")
    assert err == (
        "simhash-filter: error: the database's fingerprints were made under another spec "
        "than this simhash-filter's defaults (stored spec has 'shingle=2', requested spec "
        "has 'shingle=1'); texts cannot be "
        "compared with it: re-import the corpus into a new database\n"
    )
    # Stored fingerprints still answer.
    code, out, _ = run(capsys, "near", "--nl", "0123456789abcdee", "--db", sqlite_url)
    assert (code, out) == (
        0,
        f'{{"url":"{URL_A}","fingerprint":"0123456789abcdef","distance":1,"similarity":null}}\n',
    )


def test_password_is_never_printed(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql+psycopg://someone:s3cr3t-pw@127.0.0.1:1/nothing"
    code, out, err = run(capsys, "stats", "--db", url)
    assert (code, out) == (1, "")
    assert "s3cr3t-pw" not in err
    assert err.startswith("simhash-filter: error: ")
    assert err.count("\n") == 1


# --- usage, the environment, the entry points ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["near"],
        ["near", "x", "--text", "y"],
        ["dupes", "--since", "last tuesday"],
        ["dupes", "--limit", "-1"],
        ["stats", "--json", "--nl"],
        ["near", "x", "--as", "pdf"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert "usage: simhash-filter" in err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in (
        "stats",
        "dupes",
        "near",
        "lookup",
        "clusters",
        "fingerprint",
        "import",
        "export",
        "reindex",
    ):
        assert command in out
    code, out, _ = run(capsys, "--version")
    assert (code, out) == (0, "simhash-filter 0.1.0\n")


def test_database_from_the_environment(
    filled_sqlite: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMHASH_FILTER_DATABASE_URL", filled_sqlite)
    code, out, _ = run(capsys, "stats", "--nl")
    assert code == 0
    assert json.loads(out)["pages"] == 3
    # --db before the command works as well as after it
    code, out, _ = run(capsys, "--db", filled_sqlite, "--nl", "dupes", "--limit", "1")
    assert json.loads(out)["url"] == URL_B1


def test_python_dash_m_and_the_script_entry(filled_sqlite: str) -> None:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-m", "simhash_filter", "lookup", "--nl", URL_A, "--db", filled_sqlite],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["fingerprint"] == hx(ARTICLE_A)
    result = subprocess.run(
        [sys.executable, "-m", "simhash_filter", "stats", "--db", "/nonexistent/x.db"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "simhash-filter: error: no database at /nonexistent/x.db (the file does not exist)\n"
    )


# --- both distances: the simhash bits and the sketches' similarity (issue 13.C) --------


def sim(rule: MatchRule, a: str, b: str) -> float:
    """What the CLI shows: the rule's similarity estimate of two texts' sketches."""
    return round(rule.verify(FINGERPRINTER.sketch(a), FINGERPRINTER.sketch(b)).similarity, 3)


def test_dupes_near_lookup_and_clusters_show_both_distances(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = fill_with_sketches(db_url)
    s_a1, s_a2, s_b1 = sim(rule, ARTICLE_A1, ARTICLE_A), 1.0, sim(rule, ARTICLE_B1, ARTICLE_B)
    assert rule.min_similarity <= s_a1 < 1.0  # an edited copy: confirmed, and not identical
    code, out, err = run(capsys, "dupes", "--db", db_url)
    assert (code, err) == (0, "")
    assert out == lines(
        "dropped at            distance  similarity  url                                     duplicate of",
        "--------------------  --------  ----------  --------------------------------------  --------------------------------",
        f"2024-05-04T10:00:00Z         {D_B1}  {s_b1:>10.4g}  {URL_B1}  {URL_B}",
        f"2024-05-03T10:00:00Z         0  {s_a2:>10.4g}  {URL_A2}  {URL_A}",
        f"2024-05-02T10:00:00Z         {D_A1}  {s_a1:>10.4g}  {URL_A1}   {URL_A}",
    )
    # near: a text's sketch against the stored ones.
    code, out, _ = run(capsys, "near", "--json", "--text", ARTICLE_A1, "--db", db_url)
    assert json.loads(out) == [
        {"url": URL_A, "fingerprint": hx(ARTICLE_A), "distance": D_A1, "similarity": s_a1}
    ]
    # A hex fingerprint has no sketch: the similarity is unknown, the column left out.
    code, out, _ = run(capsys, "near", hx(ARTICLE_A), "--db", db_url)
    assert out.splitlines()[0].split() == ["distance", "fingerprint", "url"]
    # lookup: the drops as logged; the kept page's neighbours from the stored sketches.
    code, out, _ = run(capsys, "lookup", "--json", URL_A, "--db", db_url)
    document = json.loads(out)
    assert [(d["url"], d["similarity"]) for d in document["duplicates"]] == [
        (URL_A2, s_a2),
        (URL_A1, s_a1),
    ]
    code, out, _ = run(capsys, "lookup", "--json", URL_B1, "--db", db_url)
    assert [d["similarity"] for d in json.loads(out)["drops"]] == [s_b1]
    # clusters: kept pages compared with the cluster's first page; drops as logged.
    code, out, _ = run(capsys, "clusters", "--json", "--min-size", "3", "--db", db_url)
    (cluster,) = json.loads(out)
    assert [(p["role"], p["url"], p["distance"], p["similarity"]) for p in cluster["pages"]] == [
        ("kept", URL_A, 0, 1.0),
        ("dropped", URL_A2, 0, s_a2),
        ("dropped", URL_A1, D_A1, s_a1),
    ]
