"""``near`` under the default (minhash-lsh) index: neighbours ranked by the sketches'
similarity, shown with it; a dropped URL's neighbours found through a sketch, not by a scan
of every page within 64 bits; and the page a passage comes from, found in the stored texts
(or, without them, a note saying why the index cannot find it)."""

from __future__ import annotations

import json

import pytest
from support.cli_corpus import (
    ARTICLE_A,
    ARTICLE_B,
    FINGERPRINTER,
    PAGES,
    URL_A,
    URL_A1,
    run,
)

from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, StoreOptions, passage_index

PASSAGE = ARTICLE_A[len(ARTICLE_A) // 3 : 2 * len(ARTICLE_A) // 3]
"""A third of article A, from its middle: far less alike the whole page than a copy is."""


def fill(url: str, *, store_text: bool) -> None:
    """The corpus as a default crawl stores it (the minhash-lsh index, sketches), with its
    texts when ``store_text``."""
    with FingerprintStore.open(
        url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        assert store.scheme.kind == "minhash-lsh"
        for page_url, text in PAGES:
            store.check_and_add(
                page_url,
                FINGERPRINTER.fingerprint(text),  # type: ignore[arg-type]
                text_length=len(text),
                sketch=FINGERPRINTER.sketch(text),
                text=pack_text(text) if store_text else None,
            )


def near(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> tuple[list[dict], str]:
    code, out, err = run(capsys, "--json", "near", *args, "--db", db)
    assert code == 0, err
    return json.loads(out), err


def test_a_dropped_url_finds_its_neighbours_by_a_sketch(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(db_url, store_text=False)
    rows, notes = near(capsys, db_url, URL_A1)
    assert [r["url"] for r in rows] == [URL_A]  # not every stored page "within 64"
    assert rows[0]["similarity"] >= 0.7
    assert f"those of {URL_A}, the page it was dropped as a copy of" in notes


def test_neighbours_come_most_alike_first(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill(db_url, store_text=True)
    rows, _ = near(capsys, db_url, "--text", ARTICLE_A + " One more closing line here.")
    assert rows[0]["url"] == URL_A
    similarities = [r["similarity"] for r in rows]
    assert similarities == sorted(similarities, reverse=True)
    rows, _ = near(capsys, db_url, URL_A1)  # with its stored text, its own sketch
    assert rows[0]["url"] == URL_A
    assert rows[0]["similarity"] >= 0.7


def test_a_passage_finds_the_page_it_comes_from(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(db_url, store_text=True)
    rows, notes = near(capsys, db_url, "--text", PASSAGE)
    assert rows[0]["url"] == URL_A
    assert rows[0]["contains"] == 1.0
    assert rows[0]["similarity"] < 0.7  # a sketch alone would not call it alike
    assert all(r["contains"] < 0.5 for r in rows[1:])  # the other pages hold little of it
    assert "searched the passage index" in notes
    code, out, _ = run(capsys, "near", "--text", PASSAGE, "--db", db_url)
    assert code == 0
    assert "contains" in out.splitlines()[0]


def test_without_stored_texts_it_says_why(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill(db_url, store_text=False)
    rows, notes = near(capsys, db_url, "--text", PASSAGE)
    assert URL_A not in {r["url"] for r in rows}
    assert "SIMHASH_FILTER_STORE_TEXT" in notes


CHINESE = (
    "江边的老仓库将改建为住房、一座公共图书馆和一个有顶棚的农贸市场。工程明年春天开工，"
    "预计持续三年左右。在会上发言的居民欢迎建图书馆，但担心沿河狭窄街道的交通。市长承诺"
    "在第一批公寓交付之前，开通两条新的公交线路，并在运河上修建一座自行车桥。"
)
URL_ZH = "https://news.example.cn/river"


def _fill_with_chinese(db: str) -> None:
    fill(db, store_text=True)
    with FingerprintStore.open_existing(db) as store:
        store.check_and_add(
            URL_ZH,
            FINGERPRINTER.fingerprint(CHINESE),  # type: ignore[arg-type]
            text_length=len(CHINESE),
            sketch=FINGERPRINTER.sketch(CHINESE),
            text=pack_text(CHINESE),
        )


def test_a_chinese_passage_finds_its_page(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill_with_chinese(db_url)
    rows, notes = near(capsys, db_url, "--text", CHINESE[20:90])
    assert rows[0]["url"] == URL_ZH
    assert rows[0]["contains"] == 1.0
    assert "searched the passage index" in notes


def test_a_passage_too_short_to_fingerprint_is_searched(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(db_url, store_text=True)
    sentence = "Residents who spoke at the meeting welcomed the library"  # 9 tokens
    assert FINGERPRINTER.fingerprint(sentence) is None
    rows, notes = near(capsys, db_url, "--text", sentence)
    assert rows == [
        {
            "url": URL_A,
            "fingerprint": rows[0]["fingerprint"],
            "distance": None,
            "similarity": None,
            "contains": 1.0,
        }
    ]
    assert "too short to fingerprint" in notes


def test_the_index_answers_as_the_scan_of_every_stored_text(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill_with_chinese(db_url)
    mixed = ARTICLE_A[100:400] + " " + ARTICLE_B[50:200]  # most of it A's, some B's
    passages = [
        PASSAGE,
        CHINESE[5:80],
        mixed,
        ARTICLE_B[300:500],
        "the river district",
        CHINESE[40:52],
        "a text no stored page holds, of words none of them has",
    ]
    answers = {}
    for passage in passages:
        rows, notes = near(capsys, db_url, "--text", passage)
        assert "searched the passage index" in notes
        answers[passage] = [(r["url"], r.get("contains")) for r in rows]
    monkeypatch.setattr(passage_index, "is_complete", lambda store: False)
    for passage in passages:
        rows, notes = near(capsys, db_url, "--text", passage)
        assert "stored texts (the passage index is being built)" in notes
        assert [(r["url"], r.get("contains")) for r in rows] == answers[passage], passage
    assert answers[mixed][0][0] == URL_A  # (holding two thirds of it)
    assert answers[passages[-1]] == []
