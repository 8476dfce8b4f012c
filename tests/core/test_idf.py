"""IDF loaders: "token weight" files and jieba's bundled table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from simhash_filter import Fingerprinter, IdfTable
from simhash_filter.core.idf import jieba_idf, load_idf, parse_idf_lines


@pytest.fixture(scope="module")
def jieba_table() -> IdfTable:
    return jieba_idf()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "idf.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_idf_reads_token_weight_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "# a comment\nlamp 2.5\n\n北京 4.75\ntower\t7\nsea 3.0\n")
    table = load_idf(path)
    assert dict(table.weights) == {"lamp": 2.5, "北京": 4.75, "tower": 7.0, "sea": 3.0}
    assert table["lamp"] == 2.5
    assert table.default == 4.75  # the upper median of 2.5, 3, 4.75, 7 (jieba's rule)
    assert table["unseen"] == 4.75
    assert table.name.startswith("idf-")
    assert load_idf(str(path)).name == table.name  # str or Path, named by content


def test_load_idf_options(tmp_path: Path) -> None:
    path = write(tmp_path, "lamp 2.5\nsea 3.0\n")
    table = load_idf(path, default=9.0, name="harbour-crawl")
    assert table.default == 9.0
    assert table.name == "harbour-crawl"
    assert load_idf(path).name != load_idf(path, default=9.0).name


def test_tokens_are_normalized_like_page_text(tmp_path: Path) -> None:
    table = load_idf(write(tmp_path, "Lighthouse 3.0\nＬＡＭＰ 2.0\nlamp 5.0\n"))
    assert dict(table.weights) == {"lighthouse": 3.0, "lamp": 2.0}  # equal spellings: the smallest
    fp = Fingerprinter(weighting="tfidf", idf=table)
    assert fp.features("The LIGHTHOUSE lamp")["lighthouse"] == 3.0


def test_a_shingle_token_keeps_its_spaces() -> None:
    assert parse_idf_lines(["lantern room 6.5"]) == {"lantern room": 6.5}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("lamp", "expected 'token weight'"),
        ("lamp heavy", "'heavy' is not a number"),
        ("lamp -1", "'-1'"),
        ("lamp nan", "'nan'"),
        ("lamp inf", "'inf'"),
    ],
)
def test_bad_lines_are_rejected_with_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, f"sea 3.0\n{line}\n")
    with pytest.raises(ValueError, match=message) as error:
        load_idf(path)
    assert f"{path}:2:" in str(error.value)


def test_an_empty_file_needs_a_default(tmp_path: Path) -> None:
    path = write(tmp_path, "# nothing yet\n")
    with pytest.raises(ValueError, match="no 'token weight' lines"):
        load_idf(path)
    table = load_idf(path, default=1.0)
    assert table["anything"] == 1.0


def test_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_idf(tmp_path / "absent.txt")


def test_jieba_table_weighs_chinese_words(jieba_table: IdfTable) -> None:
    assert len(jieba_table.weights) > 250_000
    assert jieba_table["北京"] == pytest.approx(4.66740230872)
    assert 0 < jieba_table["北京"] < jieba_table.default  # common: below the median
    assert jieba_table["人工智能"] > jieba_table["北京"]
    assert jieba_table["never-seen-token"] == jieba_table.default
    assert math.isfinite(jieba_table.default)


def test_jieba_table_drives_tfidf_fingerprints(jieba_table: IdfTable) -> None:
    fp = Fingerprinter(weighting="tfidf", idf=jieba_table, top_n=20)
    assert f";idf={jieba_table.name};" in fp.spec
    text = (
        "北京大学人工智能研究院今天在北京发布了新一代中文大语言模型，研究团队表示该模型在阅读理解、"
        "机器翻译和代码生成等任务上的表现明显优于上一代系统，训练数据覆盖新闻、百科和科技论文。"
    )
    everything = Fingerprinter(weighting="tfidf", idf=jieba_table).features(text)
    assert everything["北京"] == pytest.approx(jieba_table["北京"])  # once: sublinear tf 1
    assert everything["模型"] == pytest.approx((1 + math.log(2)) * jieba_table["模型"])  # twice
    features = fp.features(text)
    assert features == dict(list(everything.items())[:20])
    assert "北京" not in features  # common words weigh little
    assert "人工智能" in features
    assert fp.fingerprint(text) is not None
