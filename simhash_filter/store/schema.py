"""The fingerprint database's tables, as SQLAlchemy Core tables (docs/design.md describes them).

``UInt64`` is the column type that stores Python's unsigned 64-bit ints as SQL's signed
BIGINT, converted by encoding.py (the one place that converts). On SQLite ``bands`` is a
covering index: its primary key ``(table_no, key, page_id)`` plus the fingerprint answer
a probe without touching ``pages`` (a WITHOUT ROWID table, so the primary key *is* the
table). A page's key rows are found by recomputing its keys from its fingerprint, so
``bands`` needs no second index on ``page_id``. PostgreSQL has no ``bands``: a page's
keys are columns of its own row (key_columns.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)

from .encoding import from_sql_int, to_sql_int

SCHEMA_VERSION = 8
"""1: the first release. 2: pages.sketch, duplicates.similarity, meta index and rule.
3: the minhash-lsh index (table keys from the sketch; meta rows); ``reindex`` converts 2.
4: on PostgreSQL the table keys are columns of the page row (key_columns.py), not
``bands`` rows; ``reindex`` converts 2 and 3. SQLite's tables are 3's (it reads 3 as 4).
5 (additive: a 4 is upgraded when it opens, upgrade.py): ``pages.dropped_at``, set when a
stored URL's new content is dropped as a copy of another page (the row leaves the index); the
keep policy's records: ``pages.canonical_url`` and ``duplicates.canonical_url`` (the canonical
URL the page declared) and ``duplicates.kind`` (NULL: dropped; ``superseded``: a page that was
kept until the copy its cluster's hints name replaced it, store/supersede.py); the URL rules'
tables, made on a writer's open where missing (url_rules.py): ``url_rules`` (learned and
universal URL rules per host, with their state, support, counterexamples, fetches saved and
sampled checks), ``rule_witnesses`` (what each supporting pair showed: support counts
distinct witnesses, so a pair seen again counts once) and ``skipped_requests`` (the URLs
skipped under each rule, fetched after all when it retires).
6 (additive: a 5 is upgraded when it opens): ``page_passages``, the stored page texts' own
text index (SQLite FTS5, PostgreSQL tsvector + GIN) that ``near --text`` finds a passage
by, made and filled from the stored texts on open (passage_index.py).
7 (additive: a 6 is upgraded when it opens, upgrade.upgrade_6_to_7): the hosts' templates,
``template_blocks`` (a host's block hashes with the pages they were seen on) and
``template_hosts`` (a host's pages learned from), store/templates.py.
8 (additive: a 7 is upgraded when it opens, upgrade.upgrade_7_to_8): ``template_pages``, a
page's template share as its last check found it (what ``lookup`` shows), store/templates.py."""

ADDITIVE_SINCE = 4
"""The oldest schema version a database is upgraded from when it opens: every table and
column added since is new and nullable (upgrade.py), so nothing is re-indexed."""

SQLITE_SAME_AS = 3
"""The schema version whose SQLite tables are version 4's (read as 4 without converting)."""

# INTEGER PRIMARY KEY is the rowid alias on SQLite; BIGINT elsewhere (billions of pages).
PageId = BigInteger().with_variant(Integer(), "sqlite")


class UInt64(TypeDecorator[int]):
    """An unsigned 64-bit int in Python, a signed BIGINT in SQL (two's complement)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_sql_int(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else from_sql_int(value)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime, also on SQLite (which stores naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime (timezone needed): {value!r}")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


metadata = MetaData()
"""The tables of the fingerprint database (SQLAlchemy Core: nothing here needs the ORM, whose
import would cost every crawl process ~0.1 s CPU)."""

meta_table = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)
"""Settings the database was made with: schema_version, spec, bits, max_distance, blocks,
index, rule, created_at."""

pages_table = Table(
    "pages",
    metadata,
    Column("id", PageId, primary_key=True, autoincrement=True),
    Column("url", Text, unique=True, nullable=False),
    Column("domain", Text, nullable=False, index=True),
    Column("fingerprint", UInt64, nullable=False),
    Column("text_length", Integer, nullable=False, default=0),
    Column("sketch", LargeBinary, nullable=True),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
    # set when the URL, re-crawled, was dropped as a copy of another page: the row is out of
    # the index (no table keys) and kept for its history; NULL while it is in the index
    Column("dropped_at", UTCDateTime, nullable=True),
    # the canonical URL the page declared when last checked (schema 5), canonicalized
    Column("canonical_url", Text, nullable=True),
)
"""The admitted pages."""

keys_table = Table(
    "bands",
    metadata,
    Column("table_no", SmallInteger, autoincrement=False, nullable=False),
    Column("key", UInt64, autoincrement=False, nullable=False),
    Column("page_id", PageId, ForeignKey("pages.id"), autoincrement=False, nullable=False),
    Column("fingerprint", UInt64, nullable=False),
    PrimaryKeyConstraint("table_no", "key", "page_id"),
    sqlite_with_rowid=False,
)
"""One table key of one admitted page a row (one row per table of the scheme), on SQLite;
PostgreSQL keeps the keys in the page's row (key_columns.py)."""

duplicates_table = Table(
    "duplicates",
    metadata,
    Column("id", PageId, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, index=True),
    Column("domain", Text, nullable=False, index=True),
    Column("fingerprint", UInt64, nullable=False),
    Column("duplicate_of", PageId, ForeignKey("pages.id"), nullable=False, index=True),
    Column("distance", SmallInteger, nullable=False),
    Column("similarity", Float, nullable=True),
    Column("seen_at", UTCDateTime, nullable=False, index=True),
    # the canonical URL the dropped page declared (schema 5), canonicalized
    Column("canonical_url", Text, nullable=True),
    # None: dropped when it arrived; SUPERSEDED: kept, then replaced (schema 5);
    # CANONICAL: dropped, but the cluster's canonical (its copy was emitted first)
    Column("kind", Text, nullable=True),
)
"""The dropped pages, each with the admitted page it was a near-duplicate of."""

SUPERSEDED = "superseded"
"""``duplicates.kind`` of a page the keep policy replaced by a copy (store/supersede.py)."""
CANONICAL = "canonical"
"""``duplicates.kind`` of a dropped page the keep policy names its cluster's canonical: a copy
of it was kept (and emitted) first, so it is dropped, and recorded (store/supersede.py)."""

page_texts_table = Table(
    "page_texts",
    metadata,
    Column("page_id", PageId, ForeignKey("pages.id"), primary_key=True, autoincrement=False),
    Column("text", LargeBinary, nullable=False),
)
"""The stored main text of an admitted page (``STORE_TEXT``; core/stored_text.py's bytes).
A table of its own, made on open when missing: a database made before it gains it, and the
check-and-add tables stay as they are."""

drop_texts_table = Table(
    "drop_texts",
    metadata,
    Column(
        "duplicate_id", PageId, ForeignKey("duplicates.id"), primary_key=True, autoincrement=False
    ),
    Column("text", LargeBinary, nullable=False),
)
"""The stored main text of a dropped page (it has no ``pages`` row to go with)."""

TEXT_TABLES = (page_texts_table, drop_texts_table)

url_rules_table = Table(
    "url_rules",
    metadata,
    Column("id", PageId, primary_key=True, autoincrement=True),
    Column("host", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("pattern", Text, nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("support", Integer, nullable=False, default=0),
    Column("counterexamples", Integer, nullable=False, default=0),
    Column("fetches_saved", Integer, nullable=False, default=0),
    Column("sampled_checks", Integer, nullable=False, default=0),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("host", "kind", "pattern"),
)
"""A URL rule of one host (simhash_filter.urls.rules) a row: what it maps, where it stands,
and the evidence for and against it."""

rule_witnesses_table = Table(
    "rule_witnesses",
    metadata,
    Column("rule_id", PageId, ForeignKey("url_rules.id"), nullable=False),
    Column("witness", Text, nullable=False),
    PrimaryKeyConstraint("rule_id", "witness"),
)
"""One distinct thing a rule's supporting pairs showed (the page they map onto, or a
parameter's value) a row: a rule's support is the number of its witnesses."""

skipped_requests_table = Table(
    "skipped_requests",
    metadata,
    Column("rule_id", PageId, ForeignKey("url_rules.id"), nullable=False),
    Column("url", Text, nullable=False),
    Column("skipped_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("rule_id", "url"),
)
"""A request not fetched because a rule mapped it to a form already seen, a row."""

RULE_TABLES = (url_rules_table, rule_witnesses_table, skipped_requests_table)


def tables_of(dialect_name: str) -> list[Table]:
    """The tables a new database of this back-end has (PostgreSQL: no ``bands``)."""
    tables = [meta_table, pages_table, keys_table, duplicates_table]
    if dialect_name == "postgresql":
        tables.remove(keys_table)
    return tables
