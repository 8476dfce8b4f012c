"""The keep policy's URL rules are read for the two URLs at hand, not for the whole host
(issue 45: a candidate per article made every keep decision grow with the crawl)."""

from __future__ import annotations

from pathlib import Path

from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.keep_evidence import RuleForms, _host_rules
from simhash_filter.store.statements import connection_execute
from simhash_filter.store.url_rules import RuleDelta, UrlRuleStore
from simhash_filter.urls.rules import PARAM, PREFIX, UrlRule

H = "site.example"


def test_only_the_rules_that_may_apply_to_the_two_urls_are_read(tmp_path: Path) -> None:
    store = FingerprintStore.open(f"sqlite:///{tmp_path / 'keep.db'}", StoreOptions(spec="test"))
    rules = UrlRuleStore(store)
    ref = UrlRule(H, PARAM, "/a/?ref")
    mirror = UrlRule(H, PREFIX, "/print/ -> /")
    elsewhere = [UrlRule(H, PARAM, f"/x{k}/?ref=feed") for k in range(40)]
    other_value = UrlRule(H, PARAM, "/a/?ref=other")
    for rule in (ref, mirror, other_value, *elsewhere):
        rules.record([RuleDelta(rule, witnesses=(rule.pattern,))])
    kept, new = f"http://{H}/a/b?ref=feed", f"http://{H}/a/b"
    with store.engine.connect() as conn:
        query, params = _host_rules(H, (kept, new))
        read = {UrlRule(h, k, p) for h, k, p, _, _ in conn.execute(query, params)}
        assert read == {ref, mirror}
        kept_form, new_form = RuleForms(conn.dialect)(connection_execute(conn), kept, new)
    assert kept_form.url == new_form.url == new  # the candidate maps the variant
    store.close()


def test_the_rules_are_found_through_the_index_not_by_reading_the_host(tmp_path: Path) -> None:
    """A host's stored candidates grow with the crawl (issue 45): a keep decision must not
    read them all. SQLite's plan seeks (host, kind[, pattern]), never (host) alone."""
    store = FingerprintStore.open(f"sqlite:///{tmp_path / 'keep.db'}", StoreOptions(spec="test"))
    query, params = _host_rules(H, (f"http://{H}/a/b?ref=feed", f"http://{H}/a/b"))
    sql = str(query.params(params).compile(store.engine, compile_kwargs={"literal_binds": True}))
    with store.engine.connect() as conn:
        plan = [row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN url_rules"))]
    assert searches
    assert all("kind=?" in step for step in searches), plan
    store.close()
