"""The hosts' template blocks a store counts (store/templates.py)."""

from __future__ import annotations

import threading

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.engine import has_table
from simhash_filter.store.templates import (
    RECOUNT_EVERY,
    TEMPLATE_INDEX,
    HostBlock,
    PageShare,
    TemplateStore,
)

SPEC = Fingerprinter().spec
MENU = (11, 12, 13)


def test_a_block_is_template_once_it_is_on_enough_pages(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        templates = TemplateStore(store)
        assert templates.template("a.example", 3).blocks == frozenset()
        templates.learn([("a.example", (*MENU, 100)), ("a.example", (*MENU, 101))])
        two = templates.template("a.example", 3)
        assert (two.blocks, two.pages, two.known) == (frozenset(), 2, False)
        templates.learn([("a.example", (*MENU, 102, 102)), ("b.example", (*MENU, 103))])
        three = templates.template("a.example", 3)
        assert (three.blocks, three.pages, three.known) == (frozenset(MENU), 3, True)
        assert templates.template("b.example", 3).blocks == frozenset()  # per host
        assert templates.hosts(3) == [("a.example", 3, 3), ("b.example", 1, 0)]


def test_a_host_keeps_a_bounded_number_of_blocks(sqlite_url: str) -> None:
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC)) as store:
        templates = TemplateStore(store, max_host_blocks=50)
        for n in range(300):  # every page: the menu and 5 blocks of its own
            templates.learn([("a.example", (*MENU, *range(1000 + 5 * n, 1005 + 5 * n)))])
        rows = store.engine.connect().exec_driver_sql(
            "SELECT count(*) FROM template_blocks WHERE domain = 'a.example'"
        )
        assert rows.scalar_one() <= 50 + RECOUNT_EVERY * 8  # counted every RECOUNT_EVERY pages
        assert templates.template("a.example", 5).blocks == frozenset(MENU)


def test_crawlers_sharing_a_database_count_into_one_template(pg_url: str) -> None:
    """Two stores (two crawlers) on one PostgreSQL database learn one host at once: every
    page counts once, and either reads the template both taught."""
    stores = [FingerprintStore.open(pg_url, StoreOptions(spec=SPEC)) for _ in range(2)]
    try:
        barrier = threading.Barrier(2)

        def crawl(store: FingerprintStore, first: int) -> None:
            templates = TemplateStore(store)
            barrier.wait()
            for n in range(first, first + 10):
                templates.learn([("a.example", (*MENU, 500 + n))])

        threads = [threading.Thread(target=crawl, args=(s, 10 * i)) for i, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for store in stores:
            template = TemplateStore(store).template("a.example", 20)
            assert (template.blocks, template.pages) == (frozenset(MENU), 20)
    finally:
        for store in stores:
            store.close()


def test_a_pages_template_share_is_recorded_and_read_back(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        templates = TemplateStore(store)
        assert templates.page_share("https://a.example/1") is None
        templates.learn(
            [("a.example", MENU)],
            [PageShare("https://a.example/1", 0.25), PageShare("https://a.example/2", 0.9, True)],
        )
        templates.learn([], [PageShare("https://a.example/1", 0.5)])  # checked again: the last
        assert templates.page_share("https://a.example/1") == PageShare(
            "https://a.example/1", 0.5, False
        )
        assert templates.page_share("https://a.example/2") == PageShare(
            "https://a.example/2", 0.9, True
        )


def test_a_hosts_blocks_are_listed_most_seen_first(db_url: str) -> None:
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        templates = TemplateStore(store)
        templates.learn([("a.example", (*MENU[:2], n)) for n in range(100, 103)])
        templates.learn([("a.example", MENU[:1])])
        assert templates.blocks("a.example", 3) == [HostBlock(11, 4), HostBlock(12, 3)]
        assert templates.blocks("a.example", 1, 1) == [HostBlock(11, 4)]
        assert templates.blocks("b.example", 1) == []


def test_pages_learned_together_count_as_pages_learned_apart(db_url: str) -> None:
    """A flush's pages of one host are one row a block (``pages + n``): the counts, the
    template and the bound's recount are those of the pages learned one by one."""
    with FingerprintStore.open(db_url, StoreOptions(spec=SPEC)) as store:
        templates = TemplateStore(store, max_host_blocks=50)
        pages = [("a.example", (*MENU, *range(1000 + 5 * n, 1005 + 5 * n))) for n in range(70)]
        pages += [("b.example", (*MENU, n)) for n in range(4)]
        for start in range(0, len(pages), 7):
            templates.learn(pages[start : start + 7])
        assert templates.hosts(5) == [("a.example", 70, 3), ("b.example", 4, 0)]
        assert templates.blocks("a.example", 5) == [HostBlock(b, 70) for b in MENU]
        assert templates.blocks("b.example", 1)[:3] == [HostBlock(b, 4) for b in MENU]
        rows = store.engine.connect().exec_driver_sql(
            "SELECT count(*) FROM template_blocks WHERE domain = 'a.example'"
        )
        assert rows.scalar_one() <= 50 + RECOUNT_EVERY * 8


def test_a_template_is_read_through_its_index(sqlite_url: str) -> None:
    """The read of a host's template is a range of (domain, pages), not every block row of
    the host; a database made before the index gains it when a writer opens it."""
    with FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC)) as store:
        with store.engine.connect() as conn:
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT block FROM template_blocks "
                "WHERE domain = 'a.example' AND pages >= 5"
            ).fetchall()
        assert TEMPLATE_INDEX in str(plan)
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP INDEX {TEMPLATE_INDEX}")
    with (
        FingerprintStore.open(sqlite_url, StoreOptions(spec=SPEC)) as store,
        store.engine.connect() as conn,
    ):
        assert has_table(conn, TEMPLATE_INDEX, "index")


def test_an_old_postgresql_database_gains_the_template_index(pg_url: str) -> None:
    with (
        FingerprintStore.open(pg_url, StoreOptions(spec=SPEC)) as store,
        store.engine.begin() as conn,
    ):
        conn.exec_driver_sql(f"DROP INDEX {TEMPLATE_INDEX}")
        assert not has_table(conn, TEMPLATE_INDEX, "index")
    with FingerprintStore.open(pg_url, StoreOptions(spec=SPEC)) as store:
        with store.engine.connect() as conn:
            assert has_table(conn, TEMPLATE_INDEX, "index")
        TemplateStore(store).learn([("a.example", MENU)] * 3)
        assert TemplateStore(store).template("a.example", 3).blocks == frozenset(MENU)
