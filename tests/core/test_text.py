"""Normalization and script-aware tokenization: NFKC, case folding, English words,
Chinese words (jieba), kana / hangul bigrams, stopwords, the shared jieba tokenizer."""

from __future__ import annotations

import re
import tempfile
import threading
import unicodedata
from pathlib import Path
from typing import Any

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter.core import stopwords
from simhash_filter.core.text import (
    HAN,
    KANA_HANGUL,
    MAX_NON_STARTERS,
    Tokenizer,
    cap_non_starters,
    collapse_white_space,
    jieba_tokenizer,
    may_hold_non_starter_run,
    non_starter_run_re,
    non_starters,
    normalize,
    strip_machine_text,
)

DETERMINISTIC = settings(derandomize=True, deadline=None, max_examples=150)


def tokens(text: str, **options: Any) -> list[str]:
    options.setdefault("stopwords", stopwords.DEFAULT)
    return Tokenizer(**options).tokenize(normalize(text))


def test_normalize_nfkc_full_width_letters_equal_ascii() -> None:
    assert normalize("ＨＥＬＬＯ　Ｗｏｒｌｄ ２０２４") == "hello world 2024"
    assert normalize("ﬁle") == "file"  # the ligature decomposes
    assert normalize("①") == "1"


def test_normalize_case_folds() -> None:
    assert normalize("Lighthouse LIGHTHOUSE lightHouse") == "lighthouse lighthouse lighthouse"
    assert normalize("STRASSE Straße") == "strasse strasse"
    assert normalize("ΣΊΣΥΦΟΣ") == normalize("σίσυφος")


def test_normalize_collapses_white_space_and_unifies_apostrophes() -> None:
    assert normalize("  the\tkeeper’s \n\n log\u3000book \u00a0") == "the keeper's log book"
    assert normalize("") == ""
    assert normalize(" \t\n\u3000") == ""


@DETERMINISTIC
@given(st.text(max_size=60))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert "  " not in once
    assert once == once.strip()


def test_english_words_punctuation_and_stopwords() -> None:
    assert tokens("The keeper's logbook, from 1912 to 1958: lit (again)!") == [
        "keeper's",
        "logbook",
        "1912",
        "1958",
        "lit",
    ]
    assert tokens("snake_case and kebab-case") == ["snake", "case", "kebab", "case"]


def test_stopwords_are_removed_only_when_listed() -> None:
    text = "The lamp of the tower and the sea"
    assert tokens(text) == ["lamp", "tower", "sea"]
    assert tokens(text, stopwords=()) == ["the", "lamp", "of", "the", "tower", "and", "the", "sea"]
    assert tokens(text, stopwords={"lamp"}) == ["the", "of", "the", "tower", "and", "the", "sea"]


def test_bundled_stopwords_cover_english_and_chinese() -> None:
    for word in ("the", "of", "and", "don't", "的", "地", "得", "了", "是"):
        assert word in stopwords.DEFAULT
    assert stopwords.DEFAULT == stopwords.ENGLISH | stopwords.CHINESE
    assert stopwords.digest(["a", "b"]) == stopwords.digest(["b", "a", "a"])
    assert stopwords.digest(["a", "b"]) != stopwords.digest(["a", "c"])


def test_drop_numbers() -> None:
    text = "Built in 1912, relit in 2024 after 40 years"
    assert tokens(text) == ["built", "1912", "relit", "2024", "40", "years"]
    assert tokens(text, drop_numbers=True) == ["built", "relit", "years"]
    assert tokens("covid19 mp3", drop_numbers=True) == ["covid19", "mp3"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "!!! ... ??? --- ;;; “”「」，。！",
        "🎉🚀🔥 😀😀 👍🏽",
        "★☆ → ← ∑ ∞ © ®",
        "___",
    ],
)
def test_no_words_no_tokens(text: str) -> None:
    assert tokens(text) == []
    assert tokens(text, stopwords=()) == []


CHINESE_SENTENCE = "北京大学的人工智能研究院今天发布了新一代中文大语言模型，推动数字化转型。"


def test_chinese_is_segmented_into_words() -> None:
    words = tokens(CHINESE_SENTENCE)
    assert "北京大学" in words
    assert "人工智能" in words
    assert "研究院" in words
    assert "数字化" in words
    # words, not single characters and not whole clauses
    assert sum(len(w) for w in words) / len(words) >= 1.8
    assert max(len(w) for w in words) <= 4
    assert sum(len(w) == 1 for w in words) <= 2
    assert "，" not in "".join(words)
    assert "。" not in "".join(words)


def test_chinese_stopwords_are_removed() -> None:
    words = tokens(CHINESE_SENTENCE)
    assert "的" not in words
    assert "了" not in words
    raw = tokens(CHINESE_SENTENCE, stopwords=())
    assert "的" in raw
    assert "了" in raw
    assert [w for w in raw if w not in stopwords.DEFAULT] == words


def test_mixed_chinese_and_english() -> None:
    words = tokens("我们用Python和ＰｙＴｏｒｃｈ训练人工智能模型，在GitHub上开源。")
    assert words == ["用", "python", "pytorch", "训练", "人工智能", "模型", "github", "开源"]


def test_kana_and_hangul_become_character_bigrams() -> None:
    assert tokens("カタカナ") == ["カタ", "タカ", "カナ"]
    assert tokens("한국어 공부") == ["한국", "국어", "공부"]
    assert tokens("ひらがな と カタカナ") == ["ひら", "らが", "がな", "と", "カタ", "タカ", "カナ"]
    # Japanese mixes kanji (segmented by jieba) with kana (bigrams)
    assert tokens("東京タワー") == ["東京", "タワ", "ワー"]


def test_half_width_katakana_is_normalized_first() -> None:
    assert tokens("ｶﾀｶﾅ") == tokens("カタカナ")


def test_hmm_option_reaches_jieba() -> None:
    # An unknown name: jieba's HMM joins characters into a guessed word, without it
    # they stay single characters.
    with_hmm = tokens("小明硕士毕业于中国科学院计算所", stopwords=())
    without = tokens("小明硕士毕业于中国科学院计算所", stopwords=(), hmm=False)
    assert with_hmm != without
    assert "".join(with_hmm) == "".join(without)


def test_jieba_tokenizer_is_shared_and_ready() -> None:
    first = jieba_tokenizer()
    assert first is jieba_tokenizer()
    assert first.initialized
    assert first is not jieba.dt  # its own instance, not jieba's global one


def test_jieba_tokenizer_is_initialized_once_under_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight threads asking at once for a not yet loaded dictionary get one tokenizer."""
    dictionary = tmp_path / "dict.txt"
    dictionary.write_text("灯塔 100 n\n守塔人 50 n\n港口 80 n\n", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # jieba's cache file goes here
    created: list[object] = []

    class CountingTokenizer(jieba.Tokenizer):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            created.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(jieba, "Tokenizer", CountingTokenizer)
    barrier = threading.Barrier(8)
    got: list[object] = []
    words: list[list[str]] = []
    lock = threading.Lock()
    tokenizer = Tokenizer(jieba_dictionary=str(dictionary))

    def work() -> None:
        barrier.wait()
        t = jieba_tokenizer(str(dictionary))
        w = tokenizer.tokenize("守塔人走向港口灯塔")
        with lock:
            got.append(t)
            words.append(w)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8
    assert len({id(t) for t in got}) == 1
    assert len(created) == 1
    assert all(w == words[0] for w in words)
    assert "守塔人" in words[0]
    assert "灯塔" in words[0]


def test_tokenizer_is_safe_under_threads() -> None:
    texts = [
        CHINESE_SENTENCE * (i % 3 + 1) + "研究团队表示，该模型在机器翻译任务上表现优异。"
        for i in range(16)
    ]
    tokenizer = Tokenizer(stopwords=stopwords.DEFAULT)
    serial = [tokenizer.tokenize(normalize(t)) for t in texts]
    results: dict[int, list[list[str]]] = {}
    barrier = threading.Barrier(8)

    def work(n: int) -> None:
        barrier.wait()
        results[n] = [tokenizer.tokenize(normalize(t)) for t in texts * 5]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8
    for got in results.values():
        assert got == serial * 5


@DETERMINISTIC
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_tokens_are_non_empty_normalized_and_not_stopwords(text: str) -> None:
    for token in tokens(text):
        assert token
        assert token not in stopwords.DEFAULT
        assert " " not in token
        assert normalize(token) == token


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("हिन्दी भाषा का समाचार", ["हिन्दी", "भाषा", "का", "समाचार"]),
        ("مُحَمَّد رَسُول", ["مُحَمَّد", "رَسُول"]),
        ("İstanbul büyükşehir", ["i\u0307stanbul", "büyükşehir"]),  # case-folded İ keeps its dot
        ("ǰunk mail", ["j\u030cunk", "mail"]),  # ǰ case-folds to j + U+030C
        ("café\u0301 ok", ["café\u0301", "ok"]),
    ],
)
def test_combining_marks_stay_inside_words(text: str, expected: list[str]) -> None:
    assert tokens(text, stopwords=()) == expected
    # the same with CJK elsewhere in the text (the other tokenizing path)
    assert tokens(text + " 北京", stopwords=()) == [*expected, "北京"]


def test_a_stray_mark_is_not_a_word() -> None:
    assert tokens("\u0301 \u0903 x\u0301", stopwords=()) == ["x\u0301"]


CJK = re.compile(f"[{HAN}{KANA_HANGUL}]")
NOT_CJK = st.text(
    alphabet=st.characters(codec="utf-8").filter(lambda c: not CJK.match(c)), max_size=60
)


@DETERMINISTIC
@given(NOT_CJK)
def test_text_without_cjk_tokenizes_the_same_on_both_paths(text: str) -> None:
    """Text with no CJK takes a fast path; appending a CJK word must not change the
    tokens before it."""
    plain = tokens(text, stopwords=())
    if CJK.search(normalize(text)):
        return  # NFKC made CJK out of something (e.g. half-width katakana)
    assert tokens(text + " 北京", stopwords=()) == [*plain, "北京"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [the guide](https://example.org/a/b?c=1) now", "see [the guide] now"),
        ('![a cat](/img/cat(1).png "Cat") sat', "![a cat] sat"),
        ("mail ann.lee+news@mail.example.co.uk today", "mail   today"),
        ("visit www.example.com/path or http://x.org.", "visit   or  "),
        ('<a href="/x">link text</a><br/>', " link text  "),
        ("a < b and c > d stay", "a < b and c > d stay"),
        ("nothing to remove here", "nothing to remove here"),
    ],
)
def test_strip_machine_text_keeps_what_a_person_reads(text: str, expected: str) -> None:
    assert strip_machine_text(text) == expected


def test_a_moved_image_host_does_not_change_the_tokens() -> None:
    a = "Intro ![chart](https://cdn-one.example.com/img/chart.png) and the results."
    b = "Intro ![chart](https://images.other-cdn.net/2024/chart-final.webp) and the results."
    assert tokens(strip_machine_text(a), stopwords=()) == tokens(
        strip_machine_text(b), stopwords=()
    )


@DETERMINISTIC
@given(st.text(max_size=80))
def test_text_without_machine_text_markers_is_left_alone(text: str) -> None:
    markers = ("](", "://", "www.", "@", "<")
    if not any(m in text for m in markers):
        assert strip_machine_text(text) == text
    once = strip_machine_text(text)
    assert len(once) <= len(text)


# -- the mark-run cap's fast prefilter -------------------------------------------------------


def test_the_prefilter_admits_every_run_the_cap_cuts() -> None:
    """Its class holds every non-starter: a text it passes over holds no run to cut."""
    long = MAX_NON_STARTERS + 1
    for code in non_starters():
        assert may_hold_non_starter_run("x" + chr(code) * long + "y"), hex(code)
    assert not may_hold_non_starter_run("\u0301" * MAX_NON_STARTERS + "a" + "\u0301")


_MARK_ALPHABET = st.sampled_from(
    ["a", " ", "é", "\u0301", "\u0323", "\U0001d165", "\U0001d167", "\U0001f600", "丂", "，"]
)


@DETERMINISTIC
@given(st.lists(st.tuples(_MARK_ALPHABET, st.integers(1, 40)), max_size=12))
def test_the_cap_equals_the_exact_runs_cut(pieces: list[tuple[str, int]]) -> None:
    """With the prefilter, the cap is still what it was without it: a text in ``form`` as it
    is (its runs are in order), else every exact run (astral marks such as U+1D165
    included) cut to the bound, and nothing else."""
    text = "".join(ch * n for ch, n in pieces)
    exact = non_starter_run_re().sub(lambda m: m.group()[:MAX_NON_STARTERS], text)
    for form in ("NFC", "NFKC"):
        expected = text if unicodedata.is_normalized(form, text) else exact
        assert cap_non_starters(text, form) == expected  # type: ignore[arg-type]


def test_white_space_is_what_re_calls_white_space() -> None:
    """``collapse_white_space`` splits on ``str.isspace``: the same runs as ``\\s+``."""
    spaces = [chr(c) for c in range(0x110000) if re.fullmatch(r"\s", chr(c))]
    assert spaces == [chr(c) for c in range(0x110000) if chr(c).isspace()]
    text = "".join(f"{s}w{s}{s}" for s in spaces) + "\u200b\u00a0x\u3000 y "
    assert collapse_white_space(text) == re.sub(r"\s+", " ", text).strip()
