"""SQLAlchemy 2 models of the fingerprint database (the tables docs/design.md describes).

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
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .encoding import from_sql_int, to_sql_int

SCHEMA_VERSION = 5
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
skipped under each rule, fetched after all when it retires)."""

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


class Base(DeclarativeBase):
    """Declarative base of the fingerprint database."""


class Meta(Base):
    """Settings the database was made with: schema_version, spec, bits, max_distance,
    blocks, index, rule, created_at."""

    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)


class Page(Base):
    """An admitted page."""

    __tablename__ = "pages"

    id: Mapped[int] = mapped_column(PageId, primary_key=True, autoincrement=True)
    url: Mapped[str] = mapped_column(Text, unique=True, nullable=False)
    domain: Mapped[str] = mapped_column(Text, nullable=False, index=True)
    fingerprint: Mapped[int] = mapped_column(UInt64, nullable=False)
    text_length: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    sketch: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    dropped_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """Set when the URL, re-crawled, was dropped as a copy of another page: the row is out
    of the index (no table keys) and kept for its history; NULL while it is in the index."""
    canonical_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The canonical URL the page declared when last checked (schema 5), canonicalized."""


class TableKeyEntry(Base):
    """One table key of one admitted page (one row per table of the scheme), on SQLite;
    PostgreSQL keeps the keys in the page's row (key_columns.py)."""

    __tablename__ = "bands"
    __table_args__ = (
        PrimaryKeyConstraint("table_no", "key", "page_id"),
        {"sqlite_with_rowid": False},
    )

    table_no: Mapped[int] = mapped_column(SmallInteger, autoincrement=False)
    key: Mapped[int] = mapped_column(UInt64, autoincrement=False)
    page_id: Mapped[int] = mapped_column(PageId, ForeignKey("pages.id"), autoincrement=False)
    fingerprint: Mapped[int] = mapped_column(UInt64, nullable=False)


class Duplicate(Base):
    """A dropped page and the admitted page it was a near-duplicate of."""

    __tablename__ = "duplicates"

    id: Mapped[int] = mapped_column(PageId, primary_key=True, autoincrement=True)
    url: Mapped[str] = mapped_column(Text, nullable=False, index=True)
    domain: Mapped[str] = mapped_column(Text, nullable=False, index=True)
    fingerprint: Mapped[int] = mapped_column(UInt64, nullable=False)
    duplicate_of: Mapped[int] = mapped_column(
        PageId, ForeignKey("pages.id"), nullable=False, index=True
    )
    distance: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    similarity: Mapped[float | None] = mapped_column(Float, nullable=True)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, index=True)
    canonical_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The canonical URL the dropped page declared (schema 5), canonicalized."""
    kind: Mapped[str | None] = mapped_column(Text, nullable=True)
    """None: dropped when it arrived; :data:`SUPERSEDED`: kept, then replaced (schema 5)."""


SUPERSEDED = "superseded"
"""``duplicates.kind`` of a page the keep policy replaced by a copy (store/supersede.py)."""


class PageText(Base):
    """The stored main text of an admitted page (``STORE_TEXT``; core/stored_text.py's bytes).

    A table of its own, made on open when missing: a database made before it gains it,
    and the check-and-add tables stay as they are."""

    __tablename__ = "page_texts"

    page_id: Mapped[int] = mapped_column(
        PageId, ForeignKey("pages.id"), primary_key=True, autoincrement=False
    )
    text: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class DropText(Base):
    """The stored main text of a dropped page (it has no ``pages`` row to go with)."""

    __tablename__ = "drop_texts"

    duplicate_id: Mapped[int] = mapped_column(
        PageId, ForeignKey("duplicates.id"), primary_key=True, autoincrement=False
    )
    text: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class UrlRuleRow(Base):
    """A URL rule of one host (simhash_filter.urls.rules): what it maps, where it stands,
    and the evidence for and against it."""

    __tablename__ = "url_rules"
    __table_args__ = (UniqueConstraint("host", "kind", "pattern"),)

    id: Mapped[int] = mapped_column(PageId, primary_key=True, autoincrement=True)
    host: Mapped[str] = mapped_column(Text, nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    pattern: Mapped[str] = mapped_column(Text, nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False, index=True)
    support: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    counterexamples: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    fetches_saved: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    sampled_checks: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class RuleWitnessRow(Base):
    """One distinct thing a rule's supporting pairs showed (the page they map onto, or a
    parameter's value): a rule's support is the number of its witnesses."""

    __tablename__ = "rule_witnesses"
    __table_args__ = (PrimaryKeyConstraint("rule_id", "witness"),)

    rule_id: Mapped[int] = mapped_column(PageId, ForeignKey("url_rules.id"))
    witness: Mapped[str] = mapped_column(Text)


class SkippedRequestRow(Base):
    """A request not fetched because a rule mapped it to a form already seen."""

    __tablename__ = "skipped_requests"
    __table_args__ = (PrimaryKeyConstraint("rule_id", "url"),)

    rule_id: Mapped[int] = mapped_column(PageId, ForeignKey("url_rules.id"))
    url: Mapped[str] = mapped_column(Text)
    skipped_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


meta_table = cast(Table, Meta.__table__)
pages_table = cast(Table, Page.__table__)
keys_table = cast(Table, TableKeyEntry.__table__)
duplicates_table = cast(Table, Duplicate.__table__)
page_texts_table = cast(Table, PageText.__table__)
drop_texts_table = cast(Table, DropText.__table__)
TEXT_TABLES = (page_texts_table, drop_texts_table)
url_rules_table = cast(Table, UrlRuleRow.__table__)
skipped_requests_table = cast(Table, SkippedRequestRow.__table__)
rule_witnesses_table = cast(Table, RuleWitnessRow.__table__)
RULE_TABLES = (url_rules_table, rule_witnesses_table, skipped_requests_table)


def tables_of(dialect_name: str) -> list[Table]:
    """The tables a new database of this back-end has (PostgreSQL: no ``bands``)."""
    tables = [meta_table, pages_table, keys_table, duplicates_table]
    if dialect_name == "postgresql":
        tables.remove(keys_table)
    return tables
