"""The hosts' templates a store learns: how many distinct pages of a host carried each block
(core/template.py), so that crawlers sharing one PostgreSQL database learn one template.

``template_blocks`` has a row per (host, block hash) with the pages of the host it was seen
on and the host's page count when it was last seen; ``template_hosts`` a row per host with
its pages learned from and its block rows; ``template_pages`` (schema 8) a row per page
checked with its host's template known: the template's share of its extracted text (what
``lookup`` shows; a signature does not keep it). Counts are added in SQL (``pages = pages +
n``), so every crawler's pages count. A host keeps about :data:`MAX_HOST_BLOCKS` block rows at
most (counted every :data:`RECOUNT_EVERY` of its pages): past it, the blocks seen once and not
for :data:`PRUNE_AFTER` of the host's pages are forgotten (an article's own paragraphs), and a
new block of a host still full is not counted. A flush's pages of one host are one ``INSERT …
ON CONFLICT DO UPDATE`` (a row a distinct block, counted by the pages it was on). The tables
(schemas 7 and 8) are additive: a writer's open makes them where missing
(:func:`ensure_template_tables`); a reader of a database without them sees no template.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    and_,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.types import BigInteger

from simhash_filter.core.template import HostTemplate

from .engine import has_table
from .reading import ReadableStore
from .schema import metadata, page_texts_table, pages_table
from .side_tables import ensure_schema, ensure_tables, side_connection

__all__ = [
    "MAX_HOST_BLOCKS",
    "PAGE_TABLES",
    "PRUNE_AFTER",
    "RECOUNT_EVERY",
    "TEMPLATE_INDEX",
    "TEMPLATE_TABLES",
    "HostBlock",
    "PageShare",
    "TemplateStore",
    "ensure_template_index",
    "ensure_template_tables",
    "has_template_index",
    "template_blocks_table",
    "template_hosts_table",
    "template_pages_table",
]

MAX_HOST_BLOCKS = 20_000
"""Block rows a host keeps at most (a few hundred KB of a database a host)."""
RECOUNT_EVERY = 10
"""A host's block rows are counted every this many of its pages (so a host may pass its bound
by this many pages' blocks at most)."""
PRUNE_AFTER = 200
"""A block of a full host not seen for this many of its pages, and below the template
threshold, is forgotten."""

template_blocks_table = Table(
    "template_blocks",
    metadata,
    Column("domain", Text, nullable=False),
    Column("block", BigInteger, autoincrement=False, nullable=False),
    Column("pages", Integer, nullable=False),
    Column("last_page", Integer, nullable=False),
    PrimaryKeyConstraint("domain", "block"),
)
"""A block of a host's pages (its 32-bit hash, core/template.py) a row: on how many pages."""

TEMPLATE_INDEX = "template_blocks_by_pages"
template_blocks_by_pages = Index(
    TEMPLATE_INDEX, template_blocks_table.c.domain, template_blocks_table.c.pages
)
"""A host's template read (its blocks on ``min_pages`` pages or more) as a range of this index:
without it, the read went through every block row of the host (up to
:data:`MAX_HOST_BLOCKS`), ~4 ms a read on SQLite. Made with the table, or on a writer's open of
a database made before it (:func:`ensure_template_index`; additive: no schema version)."""

template_hosts_table = Table(
    "template_hosts",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("pages", Integer, nullable=False),
    Column("blocks", Integer, nullable=False),
)
"""A host a row: its pages learned from, its block rows."""

template_pages_table = Table(
    "template_pages",
    metadata,
    Column("url", Text, primary_key=True),
    Column("share", Float, nullable=False),
    Column("template_only", Boolean, nullable=False),
)
"""A page checked with its host's template known a row (schema 8), by its canonical URL (kept
or dropped): the share of its extracted main text in template blocks, left out of what was
signed, and whether nothing else was left (signed by its bytes). The last check's."""

HOST_TABLES = (template_hosts_table, template_blocks_table)
"""Schema 7's tables."""
PAGE_TABLES = (template_pages_table,)
"""Schema 8's table."""
TEMPLATE_TABLES = HOST_TABLES + PAGE_TABLES


class PageShare(NamedTuple):
    """A page's template share as the crawl records it (``template_pages``)."""

    url: str
    """The page's canonical URL (as ``pages.url`` or ``duplicates.url`` holds it)."""
    share: float
    """The host's template blocks' share of the characters of its extracted main text."""
    template_only: bool = False
    """Nothing but the template was extracted: the page was signed by its bytes."""


class HostBlock(NamedTuple):
    """A block of a host's template as the store counts it."""

    block: int
    """Its 32-bit hash (core/template.py)."""
    pages: int
    """Distinct pages of the host it was seen on."""


def ensure_template_tables(engine: Engine, tables: Sequence[Table] = TEMPLATE_TABLES) -> None:
    """Make the template tables (or ``tables`` of them) where they are missing (a writer's
    open: side_tables.py)."""
    ensure_tables(engine, tables)


def has_template_index(conn: Connection) -> bool:
    """Whether the database has :data:`template_blocks_by_pages` (or no template table to
    index)."""
    return has_table(conn, TEMPLATE_INDEX, "index") or not has_table(
        conn, template_blocks_table.name
    )


def ensure_template_index(engine: Engine) -> None:
    """Make :data:`template_blocks_by_pages` where the template table lacks it
    (:func:`~.side_tables.ensure_schema`). One read when it is there."""
    ensure_schema(
        engine,
        has_template_index,
        lambda conn: template_blocks_by_pages.create(conn, checkfirst=True),
    )


class TemplateStore:
    """The template tables of an open store (``FingerprintStore`` or any :class:`ReadableStore`)."""

    def __init__(self, store: ReadableStore, *, max_host_blocks: int = MAX_HOST_BLOCKS) -> None:
        self._engine = store.engine
        self._where = store.display_url
        self.max_host_blocks = max_host_blocks

    def _connection(self, *, write: bool) -> AbstractContextManager[Connection]:
        return side_connection(self._engine, self._where, write=write)

    def has_tables(self) -> bool:
        """Whether the database has the template tables (one made before schema 8 may not)."""
        with self._connection(write=False) as conn:
            return all(has_table(conn, t.name) for t in TEMPLATE_TABLES)

    # -- learning

    def learn(
        self, pages: Iterable[tuple[str, Sequence[int]]], shares: Sequence[PageShare] = ()
    ) -> None:
        """Count each (host, block hashes of one page) once: the host's page count and each
        distinct block's; record the ``shares`` of pages checked (the last one of a URL
        stays); in one transaction. A host's pages are counted together: one row a block
        (``pages + n``), sent to the driver as tuples (SQLAlchemy's parameters for each row
        were most of a page's learning)."""
        by_host: dict[str, list[Sequence[int]]] = {}
        for domain, blocks in pages:
            by_host.setdefault(domain, []).append(blocks)
        with self._connection(write=True) as conn:
            for domain, host_pages in by_host.items():
                self._learn_host(conn, domain, host_pages)
            if shares:
                last = {share.url: share for share in shares}  # one row a URL a statement
                statement = _insert(conn)(template_pages_table)
                conn.execute(
                    statement.on_conflict_do_update(
                        index_elements=["url"],
                        set_={
                            "share": statement.excluded.share,
                            "template_only": statement.excluded.template_only,
                        },
                    ),
                    [share._asdict() for share in last.values()],
                )

    def _learn_host(self, conn: Connection, domain: str, pages: list[Sequence[int]]) -> None:
        """Count ``pages`` (each its block hashes) of one host."""
        seen: Counter[int] = Counter()
        for blocks in pages:
            seen.update(set(blocks))
        n, held = self._count_pages(conn, domain, len(pages))
        if n // RECOUNT_EVERY != (n - len(pages)) // RECOUNT_EVERY:  # passed a multiple
            held = self._recount(conn, domain, n)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        if held >= self.max_host_blocks:  # full: the blocks it holds still count
            sql = (
                f"UPDATE {template_blocks_table.name} SET pages = pages + {mark}, "
                f"last_page = {mark} WHERE domain = {mark} AND block = {mark}"
            )
            rows: list[tuple[object, ...]] = [
                (count, n, domain, block) for block, count in sorted(seen.items())
            ]
        else:
            sql = (
                f"INSERT INTO {template_blocks_table.name} (domain, block, pages, last_page) "
                f"VALUES ({mark}, {mark}, {mark}, {mark}) ON CONFLICT (domain, block) DO UPDATE "
                f"SET pages = {template_blocks_table.name}.pages + excluded.pages, "
                "last_page = excluded.last_page"
            )
            rows = [(domain, block, count, n) for block, count in sorted(seen.items())]
        if rows:
            conn.exec_driver_sql(sql, rows)

    def _count_pages(self, conn: Connection, domain: str, added: int) -> tuple[int, int]:
        """``added`` more pages of ``domain``: its page count now, and its block rows."""
        h = template_hosts_table.c
        insert = _insert(conn)(template_hosts_table).values(domain=domain, pages=added, blocks=0)
        conn.execute(
            insert.on_conflict_do_update(index_elements=["domain"], set_={"pages": h.pages + added})
        )
        row = conn.execute(select(h.pages, h.blocks).where(h.domain == domain)).one()
        return int(row.pages), int(row.blocks)

    def _recount(self, conn: Connection, domain: str, n: int) -> int:
        """The host's block rows counted again (every :data:`RECOUNT_EVERY` of its pages),
        its rare old blocks forgotten first when it is over its bound; the rows left."""
        b, h = template_blocks_table.c, template_hosts_table.c
        count = select(func.count()).select_from(template_blocks_table).where(b.domain == domain)
        held = int(conn.execute(count).scalar_one())
        if held >= self.max_host_blocks:
            conn.execute(
                delete(template_blocks_table).where(
                    and_(b.domain == domain, b.pages <= 1, b.last_page < n - PRUNE_AFTER)
                )
            )
            held = int(conn.execute(count).scalar_one())
        conn.execute(update(template_hosts_table).where(h.domain == domain).values(blocks=held))
        return held

    # -- reading

    def template(self, domain: str, min_pages: int) -> HostTemplate:
        """The host's template: its blocks seen on at least ``min_pages`` of its pages, its
        pages learned from, and whether that is enough to trust it (``min_pages`` pages)."""
        h, b = template_hosts_table.c, template_blocks_table.c
        with self._connection(write=False) as conn:
            if not has_table(conn, template_hosts_table.name):
                return HostTemplate(frozenset())
            pages = conn.execute(select(h.pages).where(h.domain == domain)).scalar()
            if not pages:
                return HostTemplate(frozenset())
            blocks = conn.execute(
                select(b.block).where(b.domain == domain, b.pages >= min_pages)
            ).scalars()
            return HostTemplate(frozenset(int(x) for x in blocks), int(pages), pages >= min_pages)

    def page_share(self, url: str) -> PageShare | None:
        """The template share recorded for the page of canonical ``url``, or None (its host's
        template was not known when it was checked, or the database predates schema 8)."""
        p = template_pages_table.c
        with self._connection(write=False) as conn:
            if not has_table(conn, template_pages_table.name):
                return None
            row = conn.execute(select(p.share, p.template_only).where(p.url == url)).first()
        return None if row is None else PageShare(url, float(row[0]), bool(row[1]))

    def page_template(self, url: str, min_pages: int) -> HostTemplate:
        """The template of the host of the kept page of canonical ``url`` (empty when the
        page is not kept)."""
        p = pages_table.c
        with self._connection(write=False) as conn:
            domain = conn.execute(select(p.domain).where(p.url == url)).scalar()
        return HostTemplate(frozenset()) if domain is None else self.template(domain, min_pages)

    def blocks(self, domain: str, min_pages: int, limit: int | None = None) -> list[HostBlock]:
        """The host's template blocks (on ``min_pages`` of its pages or more), the most
        seen first (``limit``: at most so many)."""
        b = template_blocks_table.c
        with self._connection(write=False) as conn:
            if not has_table(conn, template_blocks_table.name):
                return []
            query = (
                select(b.block, b.pages)
                .where(b.domain == domain, b.pages >= min_pages)
                .order_by(b.pages.desc(), b.block)
                .limit(limit)
            )
            return [HostBlock(int(x), int(n)) for x, n in conn.execute(query)]

    def host_texts(self, domain: str, limit: int) -> list[bytes]:
        """The stored texts (core/stored_text.py's bytes) of the host's first ``limit`` kept
        pages: a page signed before its template was known keeps the template's lines in
        its text, so they show what the blocks say (the store keeps only their hashes)."""
        p, t = pages_table.c, page_texts_table.c
        with self._connection(write=False) as conn:
            if not has_table(conn, page_texts_table.name):
                return []
            query = (
                select(t.text)
                .join(pages_table, p.id == t.page_id)
                .where(p.domain == domain)
                .order_by(p.id)
                .limit(limit)
            )
            return [bytes(x) for x in conn.execute(query).scalars()]

    def hosts(self, min_pages: int) -> list[tuple[str, int, int]]:
        """Every host learned from: (host, pages, template blocks), by host."""
        h, b = template_hosts_table.c, template_blocks_table.c
        with self._connection(write=False) as conn:
            if not has_table(conn, template_hosts_table.name):
                return []
            counted = (
                select(b.domain, func.count().label("n"))
                .where(b.pages >= min_pages)
                .group_by(b.domain)
                .subquery()
            )
            query = (
                select(h.domain, h.pages, func.coalesce(counted.c.n, 0))
                .outerjoin(counted, counted.c.domain == h.domain)
                .order_by(h.domain)
            )
            return [(str(d), int(p), int(n)) for d, p, n in conn.execute(query)]


def _insert(conn: Connection) -> Any:
    """The dialect's INSERT with ``on_conflict_do_update`` (SQLite and PostgreSQL have it;
    imported here: a SQLite crawl never loads PostgreSQL's dialect)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert
