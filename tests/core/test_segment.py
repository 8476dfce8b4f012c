"""The opt-in jieba-rs segmenter (rjieba): same words as jieba here, its own spec name."""

from __future__ import annotations

import sys

import pytest
from scrapy.settings import Settings
from support.helpers import python_prints

from crawler.articles import HIGH_SPEED_RAIL_ZH, WASTE_SORTING_ZH
from simhash_filter import Fingerprinter
from simhash_filter.core.segment import check_segmenter, segment_function
from simhash_filter.core.text import Tokenizer
from simhash_filter.crawl.config import Config

ZH_TEXTS = ["\n".join(a.paragraphs) for a in (WASTE_SORTING_ZH, HIGH_SPEED_RAIL_ZH)]


@pytest.mark.parametrize("hmm", [True, False])
def test_rjieba_segments_han_runs_as_jieba_does(hmm: bool) -> None:
    jieba = segment_function("jieba", None, hmm)
    rjieba = segment_function("rjieba", None, hmm)
    for text in ZH_TEXTS:
        for run in text.split("，"):
            assert rjieba(run) == jieba(run)


def test_tokens_and_fingerprints_match_but_the_spec_names_the_segmenter() -> None:
    jieba, fast = Fingerprinter(segmenter="jieba"), Fingerprinter()  # rjieba is the default
    for text in [*ZH_TEXTS, "English with 中文混合的句子 and more words 在这里"]:
        assert fast.tokens(text) == jieba.tokens(text)
        assert fast.fingerprint(text) == jieba.fingerprint(text)
    assert "+jieba-" in jieba.spec
    assert "+rjieba-" in fast.spec
    assert fast.spec != jieba.spec  # a database never mixes the two


def test_bad_segmenters_are_refused() -> None:
    with pytest.raises(ValueError, match="one of jieba, rjieba"):
        check_segmenter("thulac")
    with pytest.raises(ValueError, match="no custom dictionary"):
        Tokenizer(segmenter="rjieba", jieba_dictionary="/tmp/dict.txt")
    with pytest.raises(ValueError, match="SIMHASH_FILTER_SEGMENTER"):
        Config.from_settings(Settings({"SIMHASH_FILTER_SEGMENTER": "thulac"}))


def test_the_setting_reaches_the_fingerprinter() -> None:
    config = Config.from_settings(Settings({"SIMHASH_FILTER_SEGMENTER": "rjieba"}))
    assert config.segmenter == "rjieba"
    assert config.make_fingerprinter().spec == Fingerprinter(segmenter="rjieba").spec
    assert Config().make_fingerprinter().spec == Fingerprinter().spec


def test_checking_rjieba_does_not_import_it() -> None:
    """The crawl process checks the setting but never segments (its page workers do)."""
    code = (
        "import sys\n"
        "from simhash_filter.core.text import Tokenizer\n"
        "Tokenizer(segmenter='rjieba')\n"
        "print('rjieba' in sys.modules)\n"
    )
    assert python_prints(code) == "False"


def test_rjieba_not_installed_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rjieba", None)  # as an import of a missing package
    with pytest.raises(ValueError, match="pip install rjieba"):
        check_segmenter("rjieba")
