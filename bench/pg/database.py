"""Connecting to the bench's PostgreSQL databases, and reading their rows to compare.

The store takes SQLAlchemy URLs (``postgresql+psycopg://``); psycopg and libpq take plain
``postgresql://`` ones.
"""

from __future__ import annotations

import re
from typing import Any

from simhash_filter.store.key_columns import PRESENT_COLUMNS_SQL, key_rows_source

__all__ = ["database_name", "libpq_url", "psycopg_connect", "sqlalchemy_url", "table_contents"]


def sqlalchemy_url(conninfo: str) -> str:
    return conninfo.replace("postgresql://", "postgresql+psycopg://", 1)


def libpq_url(url: str) -> str:
    return re.sub(r"^postgresql\+\w+://", "postgresql://", url)


def database_name(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).database)


def psycopg_connect(url: str, *, autocommit: bool = True) -> Any:
    import psycopg

    return psycopg.connect(libpq_url(url), autocommit=autocommit)


def table_contents(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row that matters, in a stable order (timestamps only as "seen again")."""
    with psycopg_connect(url) as conn:
        bands = key_rows_source("postgresql", len(conn.execute(PRESENT_COLUMNS_SQL).fetchall()))
        return {
            "pages": conn.execute(
                "SELECT id, url, domain, fingerprint, text_length, sketch, "
                "last_seen > first_seen FROM pages ORDER BY id"
            ).fetchall(),
            "bands": conn.execute(
                "SELECT table_no, key, page_id, fingerprint FROM "
                f"{bands} "
                "ORDER BY table_no, key, page_id"
            ).fetchall(),
            "duplicates": conn.execute(
                "SELECT id, url, domain, fingerprint, duplicate_of, distance, similarity "
                "FROM duplicates ORDER BY id"
            ).fetchall(),
        }
