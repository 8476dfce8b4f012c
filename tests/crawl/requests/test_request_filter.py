"""The request side in Scrapy's terms: the fingerprinter, the skip accounting, and the
learner that turns the crawl's verdicts into rules and retires them on a counterexample."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.utils.misc import load_object
from scrapy.utils.request import RequestFingerprinter, fingerprint
from scrapy.utils.test import get_crawler
from w3lib.url import canonicalize_url

from simhash_filter.crawl.addon import Addon, import_path
from simhash_filter.crawl.config import Config
from simhash_filter.crawl.pages.outcomes import Outcome
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.request_filter import REQUEST_STATS, RequestFilter
from simhash_filter.crawl.requests.rule_book import RuleBook, canonical_fingerprint
from simhash_filter.crawl.requests.rule_learner import RuleLearner
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.url_rules import SkippedRequest, StoredRule, UrlRuleStore
from simhash_filter.urls.rules import PARAM, PREFIX, RuleState, UrlRule
from simhash_filter.urls.sampling import is_sampled

H = "site.example"


def _unsampled(template: str, rate: int = 20) -> str:
    """The first URL of ``template.format(k)`` that is not in the 1-in-``rate`` sample."""
    return next(template.format(k) for k in range(100) if not is_sampled(template.format(k), rate))


def _sampled(template: str, rate: int = 20) -> str:
    return next(template.format(k) for k in range(1000) if is_sampled(template.format(k), rate))


# -- the fingerprint


@pytest.mark.parametrize(
    "request_",
    [
        Request("http://site.example/b?z=1&a=2#frag"),
        Request("http://site.example/form", method="POST", body=b"q=1"),
        Request("http://site.example/%7Euser/caf%C3%A9"),
    ],
)
def test_the_canonical_fingerprint_is_scrapys_own(request_: Request) -> None:
    assert canonical_fingerprint(request_, canonicalize_url(request_.url)) == fingerprint(request_)


def _fingerprinter(**settings: object) -> RuleFingerprinter:
    crawler = get_crawler(settings_dict={f"SIMHASH_FILTER_{k}": v for k, v in settings.items()})
    return RuleFingerprinter.from_crawler(crawler)


def test_a_variant_has_its_canonical_forms_fingerprint() -> None:
    fingerprinter = _fingerprinter()
    variant = _unsampled("http://site.example/a?utm_source=feed{}")
    assert fingerprinter.fingerprint(Request(variant)) == fingerprint(
        Request("http://site.example/a")
    )
    plain = Request("http://site.example/a?id=3")
    assert fingerprinter.fingerprint(plain) == fingerprint(plain)


def test_the_target_of_a_redirect_is_never_seen_by_its_own_canonical_form() -> None:
    """Heritrix's lesson: ``/a?utm_source=x`` marks ``/a`` seen; its redirect to ``/a``
    must still be fetched."""
    fingerprinter = _fingerprinter()
    variant = _unsampled("http://site.example/a?utm_source=mail{}")
    target = Request("http://site.example/a", meta={"redirect_urls": [variant]})
    seen = {fingerprinter.fingerprint(Request(variant))}
    assert _fingerprinter().fingerprint(Request("http://site.example/a")) in seen
    assert fingerprinter.fingerprint(target) not in seen
    # a later link to /a is the page the redirect fetched: it keeps that fingerprint
    assert fingerprinter.fingerprint(Request("http://site.example/a")) == (
        fingerprinter.fingerprint(target)
    )
    elsewhere = Request("http://site.example/b", meta={"redirect_urls": [variant]})
    assert fingerprinter.fingerprint(elsewhere) == fingerprint(elsewhere)  # another form


def test_a_sampled_prediction_is_fingerprinted_by_its_own_url() -> None:
    fingerprinter = _fingerprinter(RULE_SAMPLE=5)
    sampled = Request(_sampled("http://site.example/a?utm_source=s{}", 5))
    assert fingerprinter.fingerprint(sampled) == fingerprint(sampled)


def test_a_url_keeps_the_fingerprint_it_was_first_given() -> None:
    """Fetched under its own form before a rule mapped it, a URL is not fetched again."""
    from simhash_filter.urls.rules import SUFFIX
    from simhash_filter.urls.ruleset import RuleSet

    fingerprinter = _fingerprinter()
    url = _unsampled("http://site.example/a{}/index.html")
    first = fingerprinter.fingerprint(Request(url))
    assert fingerprinter.book is not None
    fingerprinter.book.set_rules(RuleSet([UrlRule(H, SUFFIX, "/index.html -> /")]))
    again = Request(url)
    assert fingerprinter.fingerprint(again) == first
    assert fingerprinter.book.form_of(again).repeat
    other = Request(url.replace("/a", "/b", 1))
    assert fingerprinter.fingerprint(other) == fingerprint(
        Request(url.replace("/a", "/b", 1)[:-10])
    )


def test_a_post_keeps_scrapys_fingerprint() -> None:
    fingerprinter = _fingerprinter()
    post = Request("http://site.example/a?utm_source=x", method="POST", body=b"q=1")
    assert fingerprinter.fingerprint(post) == fingerprint(post)


def test_the_request_filter_can_be_turned_off() -> None:
    fingerprinter = _fingerprinter(REQUEST_FILTER=False)
    variant = Request(_unsampled("http://site.example/a?utm_source=feed{}"))
    assert fingerprinter.fingerprint(variant) == fingerprint(variant)


def test_the_addon_sets_the_fingerprinter_unless_the_project_did() -> None:
    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 100}})
    assert load_object(crawler.settings["REQUEST_FINGERPRINTER_CLASS"]) is RuleFingerprinter
    assert isinstance(crawler.settings["REQUEST_FINGERPRINTER_CLASS"], str)  # a path, logged
    assert import_path(RequestFilter) in crawler.settings.getdict("EXTENSIONS")
    own = "scrapy.utils.request.RequestFingerprinter"
    crawler = get_crawler(
        settings_dict={"ADDONS": {Addon: 100}, "REQUEST_FINGERPRINTER_CLASS": own}
    )
    assert crawler.settings["REQUEST_FINGERPRINTER_CLASS"] == own
    crawler = get_crawler(
        settings_dict={"ADDONS": {Addon: 100}, "SIMHASH_FILTER_REQUEST_FILTER": False}
    )
    assert load_object(crawler.settings["REQUEST_FINGERPRINTER_CLASS"]) is not RuleFingerprinter
    crawler = get_crawler(
        settings_dict={
            "ADDONS": {Addon: 100},
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        }
    )
    assert crawler.settings["DUPEFILTER_CLASS"].endswith("redis_dupefilter.RedisDupeFilter")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("RULE_SAMPLE", 0, "RULE_SAMPLE"), ("RULE_MIN_SUPPORT", 0, "RULE_MIN_SUPPORT")],
)
def test_bad_rule_settings_are_named(key: str, value: object, message: str) -> None:
    from scrapy.settings import Settings

    with pytest.raises(ValueError, match=message):
        Config.from_settings(Settings({f"SIMHASH_FILTER_{key}": value}))


# -- the skips: stats and the INFO line


def test_skips_are_counted_by_reason_and_the_first_is_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    crawler.stats.open_spider()  # type: ignore[union-attr]
    extension = RequestFilter.from_crawler(crawler)
    variants = [
        Request(_unsampled("http://site.example/a?utm_source=x{}")),
        Request(_unsampled("http://site.example/b;jsessionid=A1B2C3{}")),
    ]
    dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())

    def schedule_and_drop(request: Request) -> None:  # as the engine and the scheduler do
        extension.request_scheduled(request)
        dupefilter.fingerprint(request)
        extension.request_dropped(request)

    with caplog.at_level(logging.DEBUG, logger="simhash_filter"):
        for request in variants:
            schedule_and_drop(request)
        schedule_and_drop(Request(variants[0].url))  # the same variant again: Scrapy's drop
        schedule_and_drop(Request("http://site.example/c"))  # no rule: Scrapy's own drop
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats[REQUEST_STATS + "skipped/tracking"] == 1
    assert stats[REQUEST_STATS + "skipped/session"] == 1
    info = [r for r in caplog.records if r.levelno == logging.INFO and "Skipped" in r.message]
    assert len(info) == 1
    assert "SIMHASH_FILTER_DEBUG" in info[0].message


# -- the learner


class Crawl:
    """A learner on a real store, fed as the crawl feeds it: pages stored, then observed."""

    def __init__(self, path: Path, **settings: int) -> None:
        self.store = FingerprintStore.open(
            f"sqlite:///{path / 'rules.db'}", StoreOptions(spec="test")
        )
        config = Config(**{"rule_min_support": 3, "rule_sample": 20, **settings})  # type: ignore[arg-type]
        self.learner = RuleLearner(config, RuleBook(config), UrlRuleStore(self.store))
        self.learner.load()
        self._fingerprints = random.Random(7)

    def keep(self, url: str) -> list[object]:
        assert self.store.check_and_add(url, self._fingerprints.getrandbits(64)).admitted
        return list(self.learner.observe(Outcome.KEPT, url, None))

    def drop(self, url: str, copy_of: str, *, listing: bool = False) -> list[object]:
        return list(self.learner.observe(Outcome.DROPPED, url, copy_of, listing=listing))

    def active(self) -> set[UrlRule]:
        return set(self.learner.book.ruleset.rules)


@pytest.fixture
def crawl(tmp_path: Path) -> Crawl:
    return Crawl(tmp_path)


def test_a_rule_becomes_active_after_enough_support(crawl: Crawl) -> None:
    rule = UrlRule(H, PREFIX, "/print/ -> /")
    for k in range(3):
        crawl.keep(f"http://{H}/news/{k}")
        assert rule not in crawl.active()
        crawl.drop(f"http://{H}/print/news/{k}", f"http://{H}/news/{k}")
    assert rule in crawl.active()
    assert crawl.learner.book.ruleset.form(f"http://{H}/print/news/9").url == f"http://{H}/news/9"
    (active,) = crawl.learner.store.rules(states=[RuleState.ACTIVE])
    assert (active.rule, active.support) == (rule, 3)


def test_the_activation_threshold_is_a_setting(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path, rule_min_support=5)
    for k in range(4):
        crawl.keep(f"http://{H}/news/{k}")
        crawl.drop(f"http://{H}/print/news/{k}", f"http://{H}/news/{k}")
    assert crawl.active() == set()
    crawl.keep(f"http://{H}/news/4")
    crawl.drop(f"http://{H}/print/news/4", f"http://{H}/news/4")
    assert crawl.active() == {UrlRule(H, PREFIX, "/print/ -> /")}


def _stored(crawl: Crawl, rule: UrlRule) -> StoredRule:
    (stored,) = [r for r in crawl.learner.store.rules(host=H) if r.rule == rule]
    return stored


def test_one_counterexample_retires_a_rule_and_gives_its_skips_back(crawl: Crawl) -> None:
    rule = UrlRule(H, PARAM, "/doc/?view")
    for k in range(3):
        crawl.keep(f"http://{H}/doc/{k}")
        crawl.drop(f"http://{H}/doc/{k}?view=v{k}", f"http://{H}/doc/{k}")
    assert rule in crawl.active()  # three values seen: any value (and /?view, a step up)
    skipped = [f"http://{H}/doc/7?view=v7", f"http://{H}/doc/8?view=v8"]
    crawl.learner.skipped([SkippedRequest(rule, url) for url in skipped])
    crawl.keep(f"http://{H}/doc/10")
    # a sampled prediction, kept as new while the form the rule maps it to is stored
    retired = {r.rule: r.urls for r in crawl.keep(f"http://{H}/doc/10?view=full")}  # type: ignore[attr-defined]
    assert retired[rule] == sorted(skipped)
    assert UrlRule(H, PARAM, "/?view") in retired  # the wider rule is wrong as well
    assert crawl.active() == set()
    stored = _stored(crawl, rule)
    assert (stored.state, stored.counterexamples) == (RuleState.RETIRED, 1)


def test_a_sampled_drop_onto_the_predicted_page_is_support(crawl: Crawl) -> None:
    rule = UrlRule(H, PARAM, "/doc/?view=full")
    for k in range(3):
        crawl.keep(f"http://{H}/doc/{k}")
        crawl.drop(f"http://{H}/doc/{k}?view=full", f"http://{H}/doc/{k}")
    assert rule in crawl.active()  # one value on three pages: that value only
    assert not [r for r in crawl.active() if r.value is None]
    crawl.keep(f"http://{H}/doc/5")
    assert crawl.drop(f"http://{H}/doc/5?view=full", f"http://{H}/doc/5") == []
    stored = _stored(crawl, rule)
    assert (stored.state, stored.support, stored.counterexamples) == (RuleState.ACTIVE, 4, 0)
    assert stored.sampled_checks == 1  # fetched although the active rule mapped it
    crawl.drop(f"http://{H}/doc/5?view=full&utm_source=x", f"http://{H}/doc/5")
    assert _stored(crawl, rule).support == 4  # the same pair again: no new witness


@pytest.mark.parametrize(
    ("template", "base", "name"),
    [
        ("http://site.example/?p={}", "http://site.example/", "p"),
        ("http://site.example/list?page={}", "http://site.example/list", "page"),
        ("http://site.example/doc?lang={}", "http://site.example/doc", "lang"),
        ("http://site.example/view.php?id={}", "http://site.example/view.php", "id"),
    ],
)
def test_a_parameter_that_selects_content_never_becomes_a_rule(
    crawl: Crawl, template: str, base: str, name: str
) -> None:
    """The worst case: the parameter's own drops (an unknown id showing the default page)
    support it, yet the other values are different pages, so it never skips."""
    crawl.keep(base)
    for k in range(1, 4):
        crawl.keep(template.format(k))  # different pages under different values
    for k in range(900, 906):  # unknown values: the default page again, a drop each
        crawl.drop(template.format(k), base)
        assert crawl.active() == set()
    stored = _stored(crawl, UrlRule(H, PARAM, f"/?{name}"))
    assert stored.support >= 3  # enough to be ready: the history check stops it
    assert stored.state is RuleState.RETIRED
    assert stored.counterexamples >= 1


def test_sibling_months_pool_their_pairs_into_the_years_rule(crawl: Crawl) -> None:
    """WordPress's ``/YYYY/MM/`` permalinks: one reply pair in April, two in July; the
    witnesses pooled from the store make ``/2024/?replytocom`` skip, checked first."""
    pairs = [("04", "a", 1), ("07", "b", 2), ("07", "c", 3)]
    year = UrlRule(H, PARAM, "/2024/?replytocom")
    for month, slug, reply in pairs:
        assert year not in crawl.active()
        page = f"http://{H}/2024/{month}/{slug}/"
        crawl.keep(page)
        crawl.drop(f"{page}?replytocom={reply}", page)
    assert year in crawl.active()
    assert UrlRule(H, PARAM, "/2024/07/?replytocom") not in crawl.active()  # two values
    form = crawl.learner.book.ruleset.form(f"http://{H}/2024/10/d/?replytocom=9")
    assert form.url == f"http://{H}/2024/10/d/"


def test_a_pooled_rule_that_maps_stored_pages_together_never_skips(crawl: Crawl) -> None:
    """``?page`` changes nothing on two months' posts, but October's listing pages are
    stored under it: the year's rule pooled from the posts is stopped by the history."""
    crawl.keep(f"http://{H}/2024/10/list/")
    crawl.keep(f"http://{H}/2024/10/list/?page=2")
    for month, slug, value in [("04", "a", 1), ("07", "b", 2), ("07", "c", 3)]:
        page = f"http://{H}/2024/{month}/{slug}/"
        crawl.keep(page)
        crawl.drop(f"{page}?page={value}", page)
    assert not [rule for rule in crawl.active() if rule.pattern.startswith("/2024/?page")]
    assert _stored(crawl, UrlRule(H, PARAM, "/2024/?page")).counterexamples == 1


def test_listings_equal_by_coincidence_teach_no_rule(crawl: Crawl) -> None:
    """An author's archive equals the home page's while the blog has one author (and the
    posts' order agrees): its pages are dropped as copies, yet no mirror rule is learned,
    since its skipped pages would hide the next ones where the coincidence ends."""
    mirror = UrlRule(H, PREFIX, "/author/editor/ -> /")
    for k in range(2, 8):
        crawl.keep(f"http://{H}/page/{k}/")
        crawl.drop(f"http://{H}/author/editor/page/{k}/", f"http://{H}/page/{k}/", listing=True)
    assert crawl.active() == set()
    assert mirror not in {stored.rule for stored in crawl.learner.store.rules(host=H)}
    for k in range(2, 5):  # the same pairs of articles teach it
        crawl.keep(f"http://{H}/a{k}/")
        crawl.drop(f"http://{H}/author/editor/a{k}/", f"http://{H}/a{k}/")
    assert mirror in crawl.active()


def test_a_listing_still_disproves_a_rule(crawl: Crawl) -> None:
    rule = UrlRule(H, PREFIX, "/print/ -> /")
    for k in range(3):
        crawl.keep(f"http://{H}/news/{k}")
        crawl.drop(f"http://{H}/print/news/{k}", f"http://{H}/news/{k}")
    assert rule in crawl.active()
    crawl.keep(f"http://{H}/archive/")
    crawl.keep(f"http://{H}/list/")
    # a listing kept as new though the rule maps it onto a stored page: a counterexample
    assert crawl.learner.observe(Outcome.KEPT, f"http://{H}/print/list/", None, listing=True)
    assert rule not in crawl.active()


def test_a_default_value_is_learned_and_the_other_values_still_fetched(crawl: Crawl) -> None:
    """``?lang=en`` is the page itself on every article, ``?lang=de`` another text: the rule
    learned is for ``en`` alone, whatever order the pages come in."""
    for k in range(9):  # the later pairs come in while "lang=en" is already active
        crawl.keep(f"http://{H}/news/{k}/")
        crawl.drop(f"http://{H}/news/{k}/?lang=en", f"http://{H}/news/{k}/")
    assert _stored(crawl, UrlRule(H, PARAM, "/news/?lang")).support == 1  # one value, ever
    ruleset = crawl.learner.book.ruleset
    assert ruleset.form(f"http://{H}/news/9/?lang=en").url == f"http://{H}/news/9/"
    assert not ruleset.form(f"http://{H}/news/9/?lang=de").changed


def test_a_tracking_parameter_that_changes_content_is_retired_on_that_host(crawl: Crawl) -> None:
    crawl.keep(f"http://{H}/a")
    crawl.keep(f"http://{H}/a?utm_source=x")  # a different page: utm_source selects content
    book = crawl.learner.book
    assert not book.ruleset.form(f"http://{H}/b?utm_source=y").changed
    assert book.ruleset.form("http://other.example/b?utm_source=y").changed


@pytest.mark.postgres
@pytest.mark.slow
def test_a_refused_connection_while_learning_is_one_line_and_its_own_stat(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database goes away under the rule learner: a real refused connection. Counted
    under errors/rule_learning, not as pages that could not be checked (every page was), and
    the first logged as one line, without the three chained tracebacks."""
    from support.pgserver import PrivateServer

    from crawler.services import create_pg_database
    from simhash_filter.crawl.pages.filter import PageFilter

    with PrivateServer() as server:
        store = FingerprintStore.open(
            create_pg_database("sf_test", server.url()), StoreOptions(spec="test")
        )
        config = Config(workers=0)
        learner = RuleLearner(config, RuleBook(config), UrlRuleStore(store))
        learner.load()
        server.stop()
        errors = []
        for n in range(2):
            try:
                list(learner.observe(Outcome.DROPPED, f"http://{H}/print/{n}", f"http://{H}/{n}"))
                learner.flush()
            except Exception as exc:
                errors.append(exc)
        store.close()
    assert len(errors) == 2
    crawler = get_crawler()
    assert crawler.stats is not None
    page_filter = PageFilter(config, crawler.stats, store_factory=lambda: store)
    request_filter = RequestFilter(crawler, RuleBook(config), page_filter)
    with caplog.at_level(logging.INFO):
        for error in errors:
            request_filter._learning_failed(error)
        page_filter.errors.flush()
        request_filter.rule_errors.flush()
    assert crawler.stats.get_value("simhash_filter/errors/rule_learning") == 2
    assert crawler.stats.get_value("simhash_filter/errors") is None
    lines = [
        r for r in caplog.records if "URL rules" in r.getMessage() or "URL-rule" in r.getMessage()
    ]
    assert len(lines) == 2, [r.getMessage() for r in lines]
    assert "Could not learn URL rules" in lines[0].getMessage()
    assert lines[0].exc_info is None  # a refused connection: its line says all
    assert "1 more URL-rule learning errors" in lines[1].getMessage()
    assert "could not be checked" not in caplog.text
