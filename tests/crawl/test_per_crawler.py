"""One config and one page filter and rule book a crawler, declared in ``crawl.per_crawler``."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from simhash_filter.crawl.config import SettingsError
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.per_crawler import crawler_config
from simhash_filter.crawl.requests.rule_book import RuleBook


def _crawler(tmp_path: Path, **settings: str) -> Crawler:
    return get_crawler(
        settings_dict={"SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path}/d.db", **settings}
    )


def test_a_crawler_has_one_of_each_and_two_crawlers_share_none(tmp_path: Path) -> None:
    one, two = _crawler(tmp_path), _crawler(tmp_path)
    assert crawler_config(one) is crawler_config(one)
    assert PageFilter.for_crawler(one) is PageFilter.for_crawler(one)
    assert RuleBook.for_crawler(one) is RuleBook.for_crawler(one)
    assert PageFilter.for_crawler(one) is not PageFilter.for_crawler(two)
    assert RuleBook.for_crawler(one) is not RuleBook.for_crawler(two)
    assert PageFilter.for_crawler(one).config is crawler_config(one)
    assert not hasattr(one, "_simhash_filter_page_filter")


def test_the_config_is_the_crawlers_settings(tmp_path: Path) -> None:
    crawler = _crawler(tmp_path, SIMHASH_FILTER_KEEP="first")
    assert crawler_config(crawler).keep == "first"
    assert RuleBook.for_crawler(crawler).config.keep == "first"


def test_a_bad_setting_stops_every_component_the_same_way(tmp_path: Path) -> None:
    crawler = _crawler(tmp_path, SIMHASH_FILTER_KEEP="sometimes")
    with pytest.raises(SettingsError, match="SIMHASH_FILTER_KEEP"):
        crawler_config(crawler)
