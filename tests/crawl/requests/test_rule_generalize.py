"""The crawl's learner widens a parameter rule active in sibling scopes, and retires it."""

from __future__ import annotations

from pathlib import Path

from simhash_filter.store.url_rules import SkippedRequest
from simhash_filter.urls.rules import PARAM, RuleState, UrlRule
from tests.crawl.requests.test_request_filter import Crawl

H = "site.example"
YEAR = UrlRule(H, PARAM, "/2024/?replytocom")


def _month(crawl: Crawl, month: str) -> None:
    """Two posts of ``/2024/<month>/`` and their comment-reply links, copies of them."""
    for post in range(2):
        page = f"http://{H}/2024/{month}/post-{post}/"
        crawl.keep(page)
        for comment in range(2):
            crawl.drop(f"{page}?replytocom={month}{post}{comment}", page)


def test_rules_active_in_two_months_make_the_years_rule_active(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path)
    _month(crawl, "04")
    assert UrlRule(H, PARAM, "/2024/04/?replytocom") in crawl.active()
    assert YEAR not in crawl.active()
    _month(crawl, "07")
    assert YEAR in crawl.active()
    form = crawl.learner.book.ruleset.form(f"http://{H}/2024/10/new/?replytocom=1")
    assert form.url == f"http://{H}/2024/10/new/"
    assert YEAR in form.rules
    (stored,) = [r for r in crawl.learner.store.rules(host=H) if r.rule == YEAR]
    assert stored.support == 2  # the two sibling months


def test_one_counterexample_retires_the_wider_rule_and_gives_its_skips_back(
    tmp_path: Path,
) -> None:
    crawl = Crawl(tmp_path)
    _month(crawl, "04")
    _month(crawl, "07")
    skipped = [f"http://{H}/2024/10/list/?replytocom=9"]
    crawl.learner.skipped([SkippedRequest(YEAR, url) for url in skipped])
    crawl.keep(f"http://{H}/2024/10/list/")
    # here the parameter selects content: a page kept as new while its form is stored
    retired = {r.rule: r.urls for r in crawl.keep(f"http://{H}/2024/10/list/?replytocom=3")}  # type: ignore[attr-defined]
    assert retired[YEAR] == skipped
    assert YEAR not in crawl.active()
    assert UrlRule(H, PARAM, "/2024/04/?replytocom") in crawl.active()  # April still holds


def test_a_sibling_with_a_counterexample_keeps_the_year_from_widening(tmp_path: Path) -> None:
    crawl = Crawl(tmp_path)
    crawl.keep(f"http://{H}/2024/10/list/")
    crawl.keep(f"http://{H}/2024/10/list/?replytocom=3")  # selects content in October
    for k in range(3):
        crawl.drop(f"http://{H}/2024/10/list/?replytocom={90 + k}", f"http://{H}/2024/10/list/")
    october = [r for r in crawl.learner.store.rules(host=H) if r.rule.scope == "/2024/10/"]
    assert october
    assert all(r.state is not RuleState.ACTIVE for r in october)
    _month(crawl, "04")
    _month(crawl, "07")
    assert UrlRule(H, PARAM, "/2024/07/?replytocom") in crawl.active()
    assert YEAR not in crawl.active()
