"""``show``, ``diff``, ``dupes --explain`` and ``import --store-text`` (issue 20), on both
back-ends: what a person reads to judge a drop, and the one-line refusal without texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_corpus import (
    ARTICLE_A,
    ARTICLE_A1,
    ARTICLE_B,
    FINGERPRINTER,
    PAGES,
    URL_A,
    URL_A1,
    URL_B,
    URL_C,
    fill,
    fp,
    run,
)

from simhash_filter.cli.audit import finding_keys, found_in
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.index.schemes import MINHASH_LSH, PERMUTED, make_scheme
from simhash_filter.store import FingerprintStore, StoreOptions


def fill_with_texts(url: str) -> None:
    """The CLI corpus checked and added as a crawl with STORE_TEXT does."""
    with FingerprintStore.open(
        url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        for page_url, text in PAGES:
            store.check_and_add(
                page_url,
                fp(text),
                text_length=len(text),
                sketch=FINGERPRINTER.sketch(text),
                text=pack_text(text),
            )


@pytest.fixture
def with_texts(db_url: str) -> str:
    fill_with_texts(db_url)
    return db_url


def test_show_prints_a_kept_and_a_dropped_page(
    with_texts: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--db", with_texts, "show", URL_A)
    assert (code, out, err) == (0, ARTICLE_A + "\n", "")
    code, out, _ = run(capsys, "--db", with_texts, "show", URL_A1, "--json")
    document = json.loads(out)
    assert code == 0
    assert document["status"] == "dropped"
    assert document["text"] == ARTICLE_A1
    assert document["duplicate_of"] == URL_A
    assert document["truncated"] is False


def test_diff_marks_the_changed_words(with_texts: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--db", with_texts, "diff", URL_A, URL_A1)
    assert code == 0, err
    assert "~ " in out
    assert "[-bus-]{+tram+}" in out
    assert "distance" in out
    assert "equal passages" in out
    code, out, _ = run(capsys, "--db", with_texts, "diff", URL_A1, URL_A, "--json")
    document = json.loads(out)
    assert document["a"]["status"] == "dropped"
    assert document["b"]["status"] == "kept"
    assert document["distance"] == (fp(ARTICLE_A) ^ fp(ARTICLE_A1)).bit_count()
    assert document["similarity"] is not None  # as logged with the drop
    assert document["changed_passages"] == 1
    ops = [p["op"] for p in document["passages"]]
    assert ops.count("replace") == 1
    # two unrelated kept pages: all changed, the sketches compared
    code, out, _ = run(capsys, "--db", with_texts, "diff", URL_A, URL_B, "--json")
    document = json.loads(out)
    assert document["text_similarity"] == 0.0
    assert document["similarity"] < 0.2


def test_explain_says_why_each_drop_happened(
    with_texts: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--db", with_texts, "dupes", "--explain", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert {row["url"] for row in rows} == {url for url, _ in PAGES[3:]}
    with FingerprintStore.open_existing(with_texts) as store:
        scheme = store.scheme
    texts_of = dict(PAGES)
    for row in rows:
        assert row["boilerplate"] is False
        assert row["judged_by"].startswith("sketch similarity >= ")
        assert row["texts_stored"] == [True, True]
        assert 0.0 <= row["text_similarity"] <= 1.0
        dropped, kept = int(row["fingerprint"], 16), int(row["duplicate_of_fingerprint"], 16)
        keys = finding_keys(
            scheme,
            dropped,
            FINGERPRINTER.sketch(texts_of[row["url"]]),
            kept,
            FINGERPRINTER.sketch(texts_of[row["duplicate_of"]]),
        )
        assert keys  # the candidate was found under at least one key
        assert row["found_by"] == " ".join(f"t{t}:{k:x}" for t, k in keys)
        assert row["found_in"] == found_in(scheme, keys)
    # the table says how many tables found the candidate; the keys on demand (issue 31.9)
    code, out, _ = run(capsys, "--db", with_texts, "dupes", "--explain", "--keys")
    assert code == 0
    assert "found by (table:key)" in out.splitlines()[0]
    code, out, _ = run(capsys, "--db", with_texts, "dupes", "--explain")
    assert code == 0
    header = out.splitlines()[0]
    assert "found by" in header
    assert "(table:key)" not in header
    assert all(row["found_in"] and row["found_in"] in out for row in rows)
    assert max(len(line) for line in out.splitlines()) < 300  # no run of 16-digit keys
    assert "t0:" not in out


def test_found_in_counts_the_tables_in_words() -> None:
    lsh = make_scheme(MINHASH_LSH)
    assert found_in(lsh, [(0, 1), (5, 2), (17, 3)]) == "3 of 18 bands"
    assert found_in(lsh, [(18, 7)]) == "1 of 4 simhash tables (pages without a sketch)"
    assert found_in(make_scheme(PERMUTED, max_distance=3), [(2, 9)]) == "1 of 4 tables"
    assert found_in(lsh, []) is None


def test_keys_without_explain_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dupes", "--keys")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "simhash-filter dupes: error: --keys lists the keys --explain found: give --explain too"
    )


def test_without_texts_each_says_so_and_exits_1(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(db_url)
    for argv in (["show", URL_A], ["diff", URL_A, URL_A1], ["dupes", "--explain"]):
        code, out, err = run(capsys, "--db", db_url, *argv)
        assert code == 1, argv
        assert out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert "no stored text" in err
        assert "STORE_TEXT" in err
    code, _, err = run(capsys, "--db", db_url, "show", "https://nowhere.example/")
    assert code == 1
    assert "neither kept, dropped nor skipped" in err


def test_report_without_texts_says_which_are_missing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(db_url)
    out_file = tmp_path / "r.html"
    code, out, err = run(capsys, "--db", db_url, "report", "--out", str(out_file), "--json")
    assert code == 0, err
    assert json.loads(out)["report"] == str(out_file)
    html = out_file.read_text(encoding="utf-8")
    assert html.count("no stored text of the dropped and the kept page") == 3
    assert 'id="pages-with-text" data-count="0"' in html


def test_finding_keys_is_the_shared_probe_and_index_key() -> None:
    from simhash_filter.index.schemes import INDEX_KINDS, make_scheme

    a, sketch = fp(ARTICLE_A), FINGERPRINTER.sketch(ARTICLE_A)
    other = FINGERPRINTER.sketch(ARTICLE_B)
    far = a ^ (2**64 - 1)
    for kind in INDEX_KINDS:
        scheme = make_scheme(kind, max_distance=3)
        assert finding_keys(scheme, a, sketch, a, sketch)  # a page finds itself
        assert finding_keys(scheme, a, sketch, far, other) == []
    lsh = make_scheme("minhash-lsh")
    # under the sketch-keyed index, a page is found by its sketch's bands, not its simhash
    assert all(t < lsh.n_blocks for t, _ in finding_keys(lsh, a, sketch, far, sketch))


def test_import_stores_texts_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "pages.jsonl"
    source.write_text(
        "".join(json.dumps({"url": u, "text": t}) + "\n" for u, t in PAGES), encoding="utf-8"
    )
    plain, stored = tmp_path / "plain.db", tmp_path / "stored.db"
    assert run(capsys, "--db", str(plain), "import", str(source), "--no-progress")[0] == 0
    assert run(capsys, "--db", str(plain), "show", URL_C)[0] == 1
    argv = ["--db", str(stored), "import", str(source), "--store-text", "--no-progress", "-j", "2"]
    assert run(capsys, *argv)[0] == 0
    code, out, _ = run(capsys, "--db", str(stored), "show", URL_B)
    assert (code, out) == (0, ARTICLE_B + "\n")
    code, out, _ = run(capsys, "--db", str(stored), "show", URL_A1)
    assert (code, out) == (0, ARTICLE_A1 + "\n")
