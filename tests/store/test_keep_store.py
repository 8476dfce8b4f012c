"""The keep policy in the store: hints stored beside verdicts, supersede (on SQLite and on
PostgreSQL's three write paths), wrong canonicals, confirmed pairs, racing processes, and a
schema-4 database upgraded in place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from crawler.articles import ENGLISH_ARTICLES
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text, unpack_text
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions, VerdictKind
from simhash_filter.store.schema import SCHEMA_VERSION, duplicates_table, pages_table
from simhash_filter.store.texts import drop_texts, page_texts
from simhash_filter.store.upgrade import missing_columns
from simhash_filter.store.url_rules import RuleDelta, UrlRuleStore
from simhash_filter.urls.rules import UrlRule
from tests.support.racers import race, spawn

FINGERPRINTER = Fingerprinter()
TEXTS = ["\n\n".join(article.paragraphs) for article in ENGLISH_ARTICLES]
SITE = "https://site.example"


def row(
    url: str, n: int, *, canonical: str | None = None, edit: str = "", keep: bool = False
) -> PageRow:
    """Page ``url`` with article ``n``'s text (``edit`` appended: still a copy)."""
    body = TEXTS[n] + edit
    signature = FINGERPRINTER.sign(body)
    assert signature is not None
    return PageRow(
        url,
        signature.fingerprint,
        signature.text_length,
        signature.sketch,
        pack_text(body) if keep else None,
        canonical,
    )


def add(store: FingerprintStore, page: PageRow) -> Any:
    return store.check_and_add(
        page.url,
        page.fingerprint,
        text_length=page.text_length,
        sketch=page.sketch,
        text=page.text,
        declared=page.declared,
    )


@pytest.fixture(params=["sqlite", "pg-sqlalchemy", "pg-function", "pg-pipeline"])
def store(request: pytest.FixtureRequest, sqlite_url: str) -> Iterator[FingerprintStore]:
    """A store on SQLite, and on PostgreSQL through each of its write paths."""
    if request.param == "sqlite":
        url, path = sqlite_url, None
    else:
        url, path = request.getfixturevalue("pg_url"), request.param.removeprefix("pg-")
        path = "sqlalchemy" if path == "sqlalchemy" else f"pg-{path}"
    opened = FingerprintStore.open(
        url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule(), write_path=path)
    )
    with opened:
        yield opened


def _passage_entries(store: FingerprintStore) -> set[int]:
    """The page ids the passage index has an entry for (SQLite: FTS5's docsize rows)."""
    sqlite = store.dialect == "sqlite"
    table, key = ("page_passages_docsize", "id") if sqlite else ("page_passages", "page_id")
    with store.engine.connect() as conn:
        return {r[0] for r in conn.execute(text(f"SELECT {key} FROM {table}"))}


def _stored_page_texts(store: FingerprintStore) -> set[int]:
    with store.engine.connect() as conn:
        return {r[0] for r in conn.execute(text("SELECT page_id FROM page_texts"))}


def test_hints_are_stored_with_the_verdicts(store: FingerprintStore) -> None:
    assert add(store, row(f"{SITE}/a?ref=x", 0, canonical=f"{SITE}/a")).kind is VerdictKind.NEW
    page = store.lookup(f"{SITE}/a?ref=x")
    assert page is not None
    assert page.canonical_url == f"{SITE}/a"
    verdict = add(store, row(f"{SITE}/print/a", 0, canonical=f"{SITE}/A", edit=" Print."))
    assert verdict.kind is VerdictKind.DUPLICATE
    (drop,) = store.duplicates()
    assert drop.canonical_url == f"{SITE}/A"
    assert drop.kind is None
    assert not drop.superseded
    assert add(store, row(f"{SITE}/b", 1)).kind is VerdictKind.NEW  # no hint: NULL
    page_b = store.lookup(f"{SITE}/b")
    assert page_b is not None
    assert page_b.canonical_url is None
    assert add(store, row(f"{SITE}/b", 1, canonical=f"{SITE}/b")).kind is VerdictKind.UNCHANGED
    page_b = store.lookup(f"{SITE}/b")
    assert page_b is not None
    assert page_b.canonical_url == f"{SITE}/b"


def test_the_canonical_arriving_after_its_variants_supersedes_the_first(
    store: FingerprintStore,
) -> None:
    canonical = f"{SITE}/news/bridge"
    first = row(f"{SITE}/news/bridge?utm_source=rss", 0, canonical=canonical, keep=True)
    assert add(store, first).kind is VerdictKind.NEW
    second = row(f"{SITE}/amp/bridge", 0, canonical=canonical, edit=" AMP.", keep=True)
    dropped = add(store, second)
    assert dropped.kind is VerdictKind.DUPLICATE
    assert store.supersede(second, dropped.duplicate_of) is None  # a variant never replaces
    page = row(canonical, 0, canonical=canonical, edit=" Share.", keep=True)
    verdict = add(store, page)
    assert verdict.kind is VerdictKind.DUPLICATE
    assert verdict.duplicate_of.url == first.url
    swap = store.supersede(page, verdict.duplicate_of)
    assert swap is not None
    assert (swap.old_url, swap.new_url) == (first.url, canonical)
    assert store.lookup(first.url) is None
    kept = store.lookup(canonical)
    assert kept is not None
    assert kept.canonical_url == canonical
    assert kept.page_id == swap.new_page_id
    drops = {d.url: d for d in store.duplicates()}
    assert set(drops) == {first.url, second.url}  # the canonical's own drop is gone
    assert drops[first.url].superseded
    assert drops[first.url].duplicate_of_url == canonical
    assert drops[second.url].duplicate_of_url == canonical
    assert not drops[second.url].superseded
    pairs = {(p.variant_url, p.canonical_url, p.superseded) for p in store.canonical_pairs()}
    assert pairs == {(first.url, canonical, True), (second.url, canonical, False)}
    texts = page_texts(store, [kept.page_id])
    assert unpack_text(texts[kept.page_id]).text.endswith("Share.")
    old_text = drop_texts(store, [drops[first.url].duplicate_id])
    assert unpack_text(old_text[drops[first.url].duplicate_id]).text == TEXTS[0]
    assert _passage_entries(store) == _stored_page_texts(store)  # the old entry went too
    # later crawls: the variant is a copy of the canonical, the canonical is unchanged
    again = add(store, first)
    assert again.kind is VerdictKind.DUPLICATE
    assert again.duplicate_of.url == canonical
    assert add(store, page).kind is VerdictKind.UNCHANGED
    assert store.supersede(page, verdict.duplicate_of) is None  # stale: the old page is gone
    assert store.stats().pages == 1


def test_a_canonical_after_its_emitted_variant_is_recorded_not_swapped(
    store: FingerprintStore,
) -> None:
    """The default policy (issue 42): the variant was emitted, so it stays; the canonical's
    drop row names it the cluster's canonical, on every write path."""
    canonical = f"{SITE}/news/tram"
    first = row(f"{SITE}/news/tram?utm_source=rss", 0, canonical=canonical)
    assert add(store, first).kind is VerdictKind.NEW
    variant = row(f"{SITE}/amp/tram", 0, canonical=canonical, edit=" AMP.")
    dropped = add(store, variant)
    assert not store.mark_canonical(variant, dropped.duplicate_of)  # a variant: no
    page = row(canonical, 0, canonical=canonical, edit=" Share.")
    verdict = add(store, page)
    assert verdict.kind is VerdictKind.DUPLICATE
    assert store.mark_canonical(page, verdict.duplicate_of)
    assert store.lookup(first.url) is not None  # still kept
    assert store.lookup(canonical) is None
    drops = {d.url: d for d in store.duplicates()}
    assert drops[canonical].kind == "canonical"
    assert drops[canonical].duplicate_of_url == first.url
    assert not drops[canonical].superseded
    assert drops[variant.url].kind is None
    # an unchanged recrawl: the same verdicts, nothing swapped
    assert add(store, first).kind is VerdictKind.UNCHANGED
    again = add(store, page)
    assert again.kind is VerdictKind.DUPLICATE
    assert again.duplicate_of.url == first.url
    assert store.stats().pages == 1


def test_a_url_its_variants_name_replaces_the_first_without_a_hint_of_its_own(
    store: FingerprintStore,
) -> None:
    canonical = f"{SITE}/story"
    assert add(store, row(f"{SITE}/story?page=all", 2)).kind is VerdictKind.NEW  # no hint
    variant = row(f"{SITE}/m/story", 2, canonical=canonical, edit=" Mobile.")
    assert add(store, variant).kind is VerdictKind.DUPLICATE
    page = row(canonical, 2, edit=" Web.")  # no hint, but a logged copy names it
    verdict = add(store, page)
    swap = store.supersede(page, verdict.duplicate_of)
    assert swap is not None
    assert swap.new_url == canonical


def test_the_cluster_read_counts_the_votes_of_other_urls(store: FingerprintStore) -> None:
    """A keep decision reads the kept page and its votes in one statement (issue 45): the
    copies naming the kept URL or the new one count, the new URL's own drops do not, and a
    page gone from the index (or a URL no longer its) reads as nothing."""
    from simhash_filter.store.supersede import read_cluster

    kept_url, new_url = f"{SITE}/tale?page=all", f"{SITE}/tale"
    first = add(store, row(kept_url, 4, canonical=kept_url))
    assert first.kind is VerdictKind.NEW
    for n, hint in enumerate([new_url, new_url, kept_url, f"{SITE}/elsewhere", None]):
        copy = row(f"{SITE}/m/tale{n}", 4, canonical=hint, edit=f" Copy {n}.")
        assert add(store, copy).kind is VerdictKind.DUPLICATE
    own = row(new_url, 4, canonical=new_url, edit=" Own.")  # the new URL's own drop
    dropped = add(store, own)
    assert dropped.kind is VerdictKind.DUPLICATE
    page_id = dropped.duplicate_of.page_id
    with store._cursor_reads() as execute:
        statement = store._superseder.kept_cluster
        cluster = read_cluster(execute, statement, page_id, kept_url, new_url)
        assert cluster is not None
        assert cluster.page.url == kept_url
        assert cluster.page.canonical_url == kept_url
        assert cluster.page.fingerprint == dropped.duplicate_of.fingerprint
        assert cluster.votes == {new_url: 2, kept_url: 1}
        moved = read_cluster(execute, statement, page_id, new_url, kept_url)
        assert moved is None
        assert read_cluster(execute, statement, -1, kept_url, new_url) is None


def test_first_come_stays_on_a_tie(store: FingerprintStore) -> None:
    assert add(store, row(f"{SITE}/x", 3, canonical=f"{SITE}/x")).kind is VerdictKind.NEW
    page = row(f"{SITE}/x?session=1", 3, canonical=f"{SITE}/x?session=1", edit=" S.")
    verdict = add(store, page)  # a site that echoes every URL as its own canonical
    assert verdict.kind is VerdictKind.DUPLICATE
    assert store.supersede(page, verdict.duplicate_of) is None
    assert store.lookup(f"{SITE}/x") is not None


def test_wrong_canonicals_lose_nothing(store: FingerprintStore) -> None:
    home = f"{SITE}/"
    for n in range(4):  # every article names the home page
        page = row(f"{SITE}/article/{n}", n, canonical=home)
        assert add(store, page).kind is VerdictKind.NEW
    home_page = row(home, 5, canonical=home)
    assert add(store, home_page).kind is VerdictKind.NEW
    variant = row(f"{SITE}/article/0?print=1", 0, canonical=home, edit=" Print.")
    verdict = add(store, variant)
    assert verdict.kind is VerdictKind.DUPLICATE
    assert verdict.duplicate_of.url == f"{SITE}/article/0"
    assert store.supersede(variant, verdict.duplicate_of) is None
    # a canonical naming another article: both articles are kept
    other = row(f"{SITE}/article/4", 4, canonical=f"{SITE}/article/1")
    assert add(store, other).kind is VerdictKind.NEW
    assert store.stats().pages == 6
    assert list(store.canonical_pairs()) == []  # no hint was confirmed by the content


def test_a_hint_the_store_disproves_counts_as_none(store: FingerprintStore) -> None:
    home = f"{SITE}/"
    assert add(store, row(home, 5, canonical=home)).kind is VerdictKind.NEW
    first = row(f"{SITE}/article/0?utm_source=rss", 0, canonical=home)  # the template's hint
    assert add(store, first).kind is VerdictKind.NEW
    page = row(f"{SITE}/article/0", 0, canonical=home, edit=" Web.")
    verdict = add(store, page)
    assert verdict.kind is VerdictKind.DUPLICATE
    # the home page is stored as another page: the hint names no copy, the universal rule
    # maps the variant onto the page
    swap = store.supersede(page, verdict.duplicate_of)
    assert swap is not None
    assert (swap.old_url, swap.new_url) == (first.url, page.url)
    # a hint naming a URL the store has not seen is not disproved: the page stays a variant
    other = row(f"{SITE}/article/1?utm_source=rss", 1)
    assert add(store, other).kind is VerdictKind.NEW
    named = row(f"{SITE}/article/1", 1, canonical=f"{SITE}/unseen", edit=" Web.")
    verdict = add(store, named)
    assert store.supersede(named, verdict.duplicate_of) is None
    # a hint naming a logged copy of the cluster is a member's: not disproved either
    member = row(f"{SITE}/article/1?fbclid=abc", 1, canonical=other.url, edit=" FB.")
    verdict = add(store, member)
    assert store.supersede(member, verdict.duplicate_of) is None


def test_the_one_statement_answer_agrees_with_the_whole_read(store: FingerprintStore) -> None:
    # supersede answers a copy that names another URL its canonical on whether the store
    # disproves that hint alone (Superseder.stays_a_copy); the whole read (the kept page,
    # the votes, the rules) must say the same wherever it does
    from datetime import UTC, datetime

    from simhash_filter.store.statements import cursor_execute
    from simhash_filter.urls.key import hint_key

    home = f"{SITE}/"
    add(store, row(home, 5, canonical=home))
    kept = row(f"{SITE}/article/0?utm_source=rss", 0, canonical=home)
    add(store, kept)
    logged = row(f"{SITE}/article/0?fbclid=x", 0, canonical=f"{SITE}/article/0", edit=" X.")
    add(store, logged)
    superseder = store._superseder
    cases = {  # the hint a copy names: is the one-statement answer "a copy"?
        f"{SITE}/unseen": True,  # not stored: not disproved
        kept.url: True,  # the kept page itself
        logged.url: True,  # a logged copy of the cluster: a member's
        home: False,  # stored as another page: disproved, the whole read decides
        None: False,  # no hint: the whole read decides
    }
    for hint, stays in cases.items():
        page = row(f"{SITE}/article/0?ref={len(str(hint))}", 0, canonical=hint, edit=" Y.")
        match = store.near(page.fingerprint, sketch=page.sketch)[0]
        with store._cursors.cursor() as cursor:
            early = superseder.stays_a_copy(cursor_execute(cursor), page.url, hint_key(hint), match)
        assert early is stays, hint
        if early:  # the whole read (it swaps nothing here: it answers None)
            new, _ = store._row(page)
            now = datetime.now(UTC)
            whole = superseder.supersede(store._cursor_reads, new, hint_key(hint), None, match, now)
            assert whole is None, hint


def _rule(kind: str, pattern: str, *, support: int = 1) -> RuleDelta:
    return RuleDelta(UrlRule("site.example", kind, pattern), support=support)


def test_a_learned_rule_breaks_a_tie_toward_its_image(store: FingerprintStore) -> None:
    rules = UrlRuleStore(store)
    rules.record([_rule("prefix", "/print/ -> /")])  # a candidate: the content check decides
    first = row(f"{SITE}/print/story", 2)
    assert add(store, first).kind is VerdictKind.NEW
    variant = row(f"{SITE}/print/story?utm_source=x", 2, edit=" P.")
    verdict = add(store, variant)  # two steps from the form: never the reverse
    assert store.supersede(variant, verdict.duplicate_of) is None
    page = row(f"{SITE}/story", 2, edit=" Web.")
    verdict = add(store, page)
    swap = store.supersede(page, verdict.duplicate_of)
    assert swap is not None
    assert swap.new_url == page.url
    again = row(f"{SITE}/print/story", 2, edit=" Again.")
    verdict = add(store, again)
    assert verdict.duplicate_of.url == page.url
    assert store.supersede(again, verdict.duplicate_of) is None  # the rules never go back


def test_rules_that_do_not_hold_break_no_tie(store: FingerprintStore) -> None:
    rules = UrlRuleStore(store)
    (amp,) = rules.record([_rule("prefix", "/amp/ -> /")])
    rules.record([RuleDelta(amp.rule, counterexamples=1)])  # retired
    rules.record([_rule("suffix", "/ -> ", support=2), _rule("suffix", " -> /", support=2)])
    for n, (kept, new) in enumerate(
        [(f"{SITE}/amp/story", f"{SITE}/story"), (f"{SITE}/news/x/", f"{SITE}/news/x")]
    ):
        assert add(store, row(kept, n)).kind is VerdictKind.NEW
        page = row(new, n, edit=" Other.")
        verdict = add(store, page)
        assert verdict.kind is VerdictKind.DUPLICATE
        assert store.supersede(page, verdict.duplicate_of) is None, new
    # the stronger of a rule and its reverse counts: the trailing slash added
    rules.record([_rule("suffix", " -> /")])
    assert add(store, row(f"{SITE}/news/y", 3)).kind is VerdictKind.NEW
    page = row(f"{SITE}/news/y/", 3, edit=" Other.")
    verdict = add(store, page)
    swap = store.supersede(page, verdict.duplicate_of)
    assert swap is not None
    assert swap.new_url == f"{SITE}/news/y/"


def test_a_schema_4_database_opens_and_is_upgraded(db_url: str) -> None:
    with FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        add(store, row(f"{SITE}/old", 0))
        add(store, row(f"{SITE}/old-copy", 0, edit=" Copy."))
    engine = create_engine(db_url)
    with engine.begin() as conn:  # what a schema-4 database looks like
        for table, column in (("pages", "canonical_url"), ("duplicates", "canonical_url"),
                              ("duplicates", "kind")):  # fmt: skip
            conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        conn.execute(text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))
        assert len(missing_columns(conn)) == 3
    with FingerprintStore.open_existing(db_url) as store:  # the command line's open
        assert store.stats().schema_version == SCHEMA_VERSION == 8
        old = store.lookup(f"{SITE}/old")
        assert old is not None
        assert old.canonical_url is None
        (drop,) = store.duplicates()
        assert drop.url == f"{SITE}/old-copy"
        assert drop.kind is None
    with engine.begin() as conn:
        assert missing_columns(conn) == []
        assert conn.execute(select(pages_table.c.id)).all()  # the pages are still there
        assert conn.execute(select(duplicates_table.c.id)).all()
    engine.dispose()
    with FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        page = row(f"{SITE}/old", 0, canonical=f"{SITE}/old")
        assert add(store, page).kind is VerdictKind.UNCHANGED
        found = store.lookup(f"{SITE}/old")
        assert found is not None
        assert found.canonical_url == f"{SITE}/old"


RACER = r"""
import json, sys
from crawler.articles import ENGLISH_ARTICLES
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.store import FingerprintStore, PageRow, StoreOptions

db_url, who, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
fingerprinter = Fingerprinter()
store = FingerprintStore.open(db_url, StoreOptions(spec=fingerprinter.spec, rule=MatchRule()))
pages = []
for n in range(rounds):
    body = "\n\n".join(ENGLISH_ARTICLES[n].paragraphs) + f" Edition {who}."
    sig = fingerprinter.sign(body)
    url = f"https://site.example/{n}/{who}"
    canonical = None if who == "plain" else url  # two pages each their own canonical
    pages.append(PageRow(url, sig.fingerprint, sig.text_length, sig.sketch, None, canonical))
checks = [None] * rounds
if who != "plain":  # checked before the start: copies of the first, kept page
    for n, page in enumerate(pages):
        checks[n] = store.check_and_add(page.url, page.fingerprint, text_length=page.text_length,
                                        sketch=page.sketch, declared=page.declared)
print("ready", flush=True)
sys.stdin.readline()
for n, page in enumerate(pages):
    if who == "plain":
        verdict = store.check_and_add(page.url, page.fingerprint, text_length=page.text_length,
                                      sketch=page.sketch)
        print(json.dumps({"n": n, "who": who, "kind": verdict.kind.value}), flush=True)
    else:
        swap = store.supersede(page, checks[n].duplicate_of)
        print(json.dumps({"n": n, "who": who, "won": swap is not None}), flush=True)
store.close()
print("done", flush=True)
"""


@pytest.mark.slow
def test_racing_supersedes_keep_one_page_a_cluster(db_url: str) -> None:
    rounds = 6
    with FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        for n in range(rounds):  # the first copy of each article, a variant
            assert (
                add(store, row(f"{SITE}/{n}/first", n, canonical=f"{SITE}/{n}/elsewhere")).kind
                is VerdictKind.NEW
            )
    procs = [spawn(RACER, db_url, who, rounds) for who in ("one", "two", "plain")]
    results = [json.loads(line) for line in race(procs)]
    for n in range(rounds):
        won = [r["who"] for r in results if r["n"] == n and r.get("won")]
        assert len(won) == 1, (n, results)  # exactly one of the two canonicals replaced it
        (plain,) = [r for r in results if r["n"] == n and r["who"] == "plain"]
        assert plain["kind"] == "duplicate"  # a third copy is never kept beside them
    with FingerprintStore.open(
        db_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        kept = {n: [] for n in range(rounds)}
        engine = store.engine
        with engine.connect() as conn:
            urls = [u for (u,) in conn.execute(select(pages_table.c.url))]
            dangling = conn.execute(
                text(
                    "SELECT count(*) FROM duplicates d LEFT JOIN pages p"
                    " ON p.id = d.duplicate_of WHERE p.id IS NULL"
                )
            ).scalar_one()
        for url in urls:
            kept[int(url.split("/")[3])].append(url)
        assert all(
            len(urls_n) == 1 and not urls_n[0].endswith(("/first", "/plain"))
            for urls_n in kept.values()
        ), kept
        assert dangling == 0
        superseded = [d for d in store.duplicates() if d.superseded]
        assert sorted(d.url for d in superseded) == sorted(
            f"{SITE}/{n}/first" for n in range(rounds)
        )
