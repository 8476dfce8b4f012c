"""One URL key a page: the crawl canonicalizes a page's URL once, when the page arrives, and
the store, the hand-off, the request filter and the rule learner read that key."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from scrapy.utils.test import get_crawler
from support.helpers import run

from crawler.articles import HARBOUR_BRIDGE, LIBRARY
from crawler.testsite import news_template
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.filter import PageFilter
from simhash_filter.crawl.pages.outcomes import FilterResult, Outcome
from simhash_filter.crawl.requests.request_filter import RequestFilter
from simhash_filter.crawl.requests.rule_book import RuleBook
from simhash_filter.crawl.requests.rule_learner import RuleLearner
from simhash_filter.store import FingerprintStore
from simhash_filter.store.url_rules import UrlRuleStore
from simhash_filter.urls import key as url_key
from simhash_filter.urls.key import PageKey


def test_a_page_url_is_put_in_canonical_form_once(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    crawler = get_crawler()
    assert crawler.stats is not None
    config = Config(workers=0)
    store = FingerprintStore.open(
        sqlite_url, config.store_options(config.make_fingerprinter().spec)
    )
    page_filter = PageFilter(config, crawler.stats, store_factory=lambda: store)
    book = RuleBook(config)
    request_filter = RequestFilter(crawler, book, page_filter)
    request_filter.learner = RuleLearner(config, book, UrlRuleStore(store))
    request_filter._thread = ThreadPoolExecutor(1)  # the learner's thread, as spider_opened
    page_filter.listeners.append(request_filter._on_result)
    seen: Counter[str] = Counter()
    real = url_key.canonicalize

    def counted(url: str) -> str:
        seen[url] += 1
        return real(url)

    monkeypatch.setattr(url_key, "canonicalize", counted)
    page_filter.open()
    try:
        pages = [
            ("https://news.example/Bridge?utm_source=x&b=2", HARBOUR_BRIDGE),
            ("https://news.example/library?b=2&a=1", LIBRARY),
            ("https://news.example/library?a=1&b=2&ref=feed", LIBRARY),  # a copy
        ]
        results = []
        for url, article in pages:
            result = run(page_filter.check(url, html=news_template(article, date="1 May")))
            page_filter.record(result)
            results.append(result)
        request_filter._thread.shutdown(wait=True)
    finally:
        page_filter.close()
    assert [r.outcome for r in results] == [Outcome.KEPT, Outcome.KEPT, Outcome.DROPPED]
    assert request_filter.backlog == 0  # every page observed by the learner
    assert all(seen[url] == 1 for url, _ in pages), seen  # made once, read everywhere
    assert results[2].key == PageKey.of(pages[2][0])
    assert results[2].verdict is not None
    assert results[2].verdict.url == results[2].key.url


def test_a_result_made_without_keys_makes_them_from_its_url() -> None:
    result = FilterResult(Outcome.KEPT, "http://Example.com/a?b=2&a=1#x")
    assert result.key == PageKey("http://example.com/a?a=1&b=2", "example.com")
    assert FilterResult(Outcome.ERROR, "").key is None  # not a URL: no keys
