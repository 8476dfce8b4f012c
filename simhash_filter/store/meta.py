"""The database's own description: making the tables, the ``meta`` rows, and checking
that a database fits the spec and index scheme it is opened with.

``meta`` holds ``schema_version``, ``spec``, ``bits``, ``max_distance``, ``blocks``,
``index`` (the scheme's kind), ``rule`` (the match rule's ``describe()``, empty for the
simhash distance alone) and ``created_at``. A database whose schema version, spec,
scheme or rule differs from what the caller asks for is never opened silently: the
error says what differs and how to move (re-index, export the stored texts and import them
into a new database, or re-crawl).
"""

from __future__ import annotations

import logging
import shlex
from datetime import UTC, datetime
from pathlib import PurePath
from typing import NamedTuple

from sqlalchemy import Engine, delete, insert, select, text
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from simhash_filter.core.fingerprint import spec_options
from simhash_filter.core.signature import MatchRule
from simhash_filter.index.defaults import IndexSettings, reindex_choice
from simhash_filter.index.schemes import (
    MINHASH_LSH,
    PERMUTED,
    IndexScheme,
    MinHashLshScheme,
    make_scheme,
)

from . import key_columns as key_columns
from .engine import WRITE_OPTION, display_url, error_reason, has_table
from .locks import SCHEMA_LOCK
from .records import (
    DatabaseNotFoundError,
    SchemeMismatchError,
    StoreError,
)
from .schema import (
    ADDITIVE_SINCE,
    SCHEMA_VERSION,
    SQLITE_SAME_AS,
    duplicates_table,
    keys_table,
    meta_table,
    metadata,
    pages_table,
    tables_of,
)

log = logging.getLogger(__name__)

MIN_CONVERTIBLE_VERSION = 2
"""The oldest schema ``reindex`` converts in place (its tables are this version's)."""

_REQUIRED = ("schema_version", "spec", "bits", "max_distance", "blocks", "index", "rule")
_MOVE = "make a new database and re-crawl (or re-import the corpus) into it"


_CHANGES = {
    2: "a candidate index whose cost does not grow with the database",
    3: "on PostgreSQL a page's table keys are columns of its row, half the bytes a page",
}
"""What a database of each convertible older version gains by ``reindex``."""


class Settings(NamedTuple):
    """What a database was made with: the fingerprint spec, the index scheme, and the
    match rule (None: a page within the scheme's max_distance is a duplicate)."""

    spec: str
    scheme: IndexScheme
    rule: MatchRule | None


def spec_difference(old: str, new: str) -> str:
    """What differs between two spec strings, item by item (they are ';'-joined)."""
    old_items, new_items = old.split(";"), new.split(";")
    only_old = [item for item in old_items if item not in new_items]
    only_new = [item for item in new_items if item not in old_items]
    if not only_old and not only_new:  # same items, other order
        return f"stored {old!r}, requested {new!r}"
    parts = []
    if only_old:
        parts.append(f"stored spec has {';'.join(only_old)!r}")
    if only_new:
        parts.append(f"requested spec has {';'.join(only_new)!r}")
    return ", ".join(parts)


def init_schema(
    engine: Engine,
    url: URL,
    *,
    settings: Settings | None,
    create: bool,
    convert: bool = False,
) -> Settings:
    """Make the tables and meta rows if needed (race-safe), return the stored settings."""
    where = display_url(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: create})
            with conn.begin():
                if engine.dialect.name == "postgresql" and create:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:g)"), {"g": SCHEMA_LOCK})
                if not has_table(conn, meta_table.name):
                    if not create:
                        raise DatabaseNotFoundError(
                            f"{where} holds no simhash-filter index (no meta table)"
                        )
                    present = [
                        t.name
                        for t in (pages_table, keys_table, duplicates_table)
                        if has_table(conn, t.name)
                    ]
                    if present:
                        raise StoreError(
                            f"{where} has table(s) {', '.join(present)} but no meta table: "
                            "not a simhash-filter database, or a damaged one"
                        )
                    assert settings is not None
                    dialect = engine.dialect.name
                    metadata.create_all(conn, tables=tables_of(dialect), checkfirst=True)
                    if dialect == "postgresql":
                        key_columns.add_columns(conn, settings.scheme.n_tables)
                        key_columns.add_indexes(conn, settings.scheme.n_tables)
                    conn.execute(
                        insert(meta_table),
                        [
                            {"key": key, "value": value}
                            for key, value in meta_values(settings).items()
                        ],
                    )
                    log.info("created fingerprint index %s (%s)", where, settings.scheme.in_words())
                    return settings
                meta = read_meta(conn)
    except StoreError:
        raise
    except DBAPIError as exc:
        reason = error_reason(exc)
        if "does not exist" in reason and "database" in reason:
            raise DatabaseNotFoundError(f"no database at {where}: {reason}") from None
        if "not a database" in reason or "malformed" in reason:
            raise StoreError(f"{where} is not a usable SQLite database: {reason}") from None
        raise StoreError(f"cannot open {where}: {reason}") from None
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {where}: {error_reason(exc)}") from None
    return parse_meta(where, meta, convert=convert, dialect=engine.dialect.name)


def read_meta(conn: Connection) -> dict[str, str]:
    """Every meta row, as a dict."""
    # not dict(result): a Result has .keys(), so dict() would take it for a mapping
    return {key: value for key, value in conn.execute(select(meta_table.c.key, meta_table.c.value))}


def meta_values(settings: Settings) -> dict[str, str]:
    """The meta rows of a new database."""
    return {
        "schema_version": str(SCHEMA_VERSION),
        "spec": settings.spec,
        **scheme_values(settings.scheme, settings.rule),
        "created_at": datetime.now(UTC).isoformat(),
    }


def scheme_values(scheme: IndexScheme, rule: MatchRule | None) -> dict[str, str]:
    """The meta rows that describe the index scheme and match rule (``reindex`` rewrites
    them)."""
    return {
        "bits": str(scheme.bits),
        "max_distance": str(scheme.max_distance),
        "blocks": str(scheme.n_blocks),
        "rows": str(scheme.rows) if isinstance(scheme, MinHashLshScheme) else "",
        "index": scheme.kind,
        "rule": "" if rule is None else rule.describe(),
    }


def write_scheme(conn: Connection, scheme: IndexScheme, rule: MatchRule | None) -> None:
    """Record a new index scheme and rule in meta, and the schema version this code writes
    (``reindex`` converts an older database), in the caller's transaction."""
    values = {"schema_version": str(SCHEMA_VERSION), **scheme_values(scheme, rule)}
    conn.execute(delete(meta_table).where(meta_table.c.key.in_(list(values))))
    conn.execute(insert(meta_table), [{"key": k, "value": v} for k, v in values.items()])


def parse_meta(
    where: str, meta: dict[str, str], *, dialect: str, convert: bool = False
) -> Settings:
    """The settings of a database's meta rows, or a StoreError saying what is wrong.
    ``convert``: a database of an older schema that ``reindex`` converts is read too. A
    database of :data:`ADDITIVE_SINCE` or later (on SQLite also :data:`SQLITE_SAME_AS`,
    whose tables are 4's there) is read as the current version: upgrade.py adds what it
    lacks when it opens."""
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise StoreError(f"{where}: meta table lacks schema_version (damaged database?)") from None
    if dialect == "sqlite" and version == SQLITE_SAME_AS:
        version = ADDITIVE_SINCE
    if ADDITIVE_SINCE <= version < SCHEMA_VERSION:
        version = SCHEMA_VERSION
    if version < MIN_CONVERTIBLE_VERSION or version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} has schema version {version}; this simhash-filter reads version "
            f"{SCHEMA_VERSION} (pages now carry a second signature): {_MOVE}."
        )
    if version != SCHEMA_VERSION and not convert:
        raise StoreError(
            f"{where} has schema version {version}; this simhash-filter reads version "
            f"{SCHEMA_VERSION} ({_CHANGES[version]}). Convert "
            f"it in place, keeping every page: `simhash-filter --db {shlex.quote(where)} reindex "
            f"--index {MINHASH_LSH}`."
        )
    missing = [k for k in _REQUIRED if k not in meta]
    if missing:
        raise StoreError(f"{where}: meta table lacks {', '.join(missing)} (damaged database?)")
    try:
        scheme = make_scheme(
            meta["index"] or PERMUTED,
            bits=int(meta["bits"]),
            max_distance=int(meta["max_distance"]),
            blocks=int(meta["blocks"]),
            rows=int(meta["rows"]) if meta.get("rows") else None,
        )
        rule = MatchRule.parse(meta["rule"]) if meta["rule"] else None
    except ValueError as exc:
        raise StoreError(f"{where}: unreadable meta table: {exc}") from None
    return Settings(meta["spec"], scheme, rule)


def compare(
    url: URL,
    stored_settings: Settings,
    requested_settings: Settings,
    *,
    blocks_given: bool,
    index_given: bool,
    rule_given: bool,
) -> None:
    """Raise SchemeMismatchError when the stored spec, scheme or rule is not the requested
    one (blocks, index kind and rule only when the caller named them). A rule asking for
    the same candidates with other thresholds is no difference: the stored sketches answer
    it (``MatchRule.same_candidates``). The error names the ``reindex`` that mends it."""
    where = display_url(url)
    stored_spec, stored = stored_settings.spec, stored_settings.scheme
    spec, requested = requested_settings.spec, requested_settings.scheme
    if stored_spec != spec:
        raise SchemeMismatchError(
            f"{where} holds fingerprints made with another spec "
            f"({spec_difference(stored_spec, spec)}). Fingerprints of different specs "
            f"cannot be compared: {refingerprint_advice(url, spec)}"
        )
    if stored.bits != requested.bits:
        raise SchemeMismatchError(
            f"{where} holds {stored.bits}-bit fingerprints, requested {requested.bits}-bit: "
            "use a new database and re-crawl into it."
        )
    differences = []
    if stored.max_distance != requested.max_distance:
        differences.append(
            f"max_distance: stored {stored.max_distance}, requested {requested.max_distance}"
        )
    if index_given and stored.kind != requested.kind:
        differences.append(f"index: stored {stored.kind}, requested {requested.kind}")
    if (blocks_given or (index_given and stored.kind != requested.kind)) and (
        stored.blocks != requested.blocks
    ):
        differences.append(f"blocks: stored {stored.blocks}, requested {requested.blocks}")
    stored_rule, rule = stored_settings.rule, requested_settings.rule
    if rule_given and not _same_candidates(stored_rule, rule):
        differences.append(f"rule: stored {_rule_text(stored_rule)}, requested {_rule_text(rule)}")
    if differences:
        raise SchemeMismatchError(
            f"{where} was indexed with another index scheme ({'; '.join(differences)}). "
            f"{_how_to_move(where, stored_settings, requested_settings, rule_given=rule_given)}"
        )


def _same_candidates(stored: MatchRule | None, requested: MatchRule | None) -> bool:
    if stored is None or requested is None:
        return stored is requested
    return stored.same_candidates(requested)


def _how_to_move(where: str, stored: Settings, requested: Settings, *, rule_given: bool) -> str:
    """The sentence that says how to open the database with the requested settings: the
    ``reindex`` command that gets there (found and checked by ``reindex_choice``)."""
    wanted = IndexSettings(requested.scheme, requested.rule if rule_given else stored.rule)
    choice = reindex_choice(IndexSettings(stored.scheme, stored.rule), wanted)
    if choice is None:
        return f"Open it with the stored settings, or {_MOVE}."
    options = [
        ("--blocks", choice.blocks),
        ("--max-distance", choice.max_distance),
        ("--index", choice.index),
        ("--min-similarity", choice.min_similarity),
    ]
    shown = " ".join(f"{name} {value}" for name, value in options if value is not None)
    return (
        f"Re-index it with `simhash-filter reindex {shown} --db {shlex.quote(where)}`, "
        "or open it with the stored settings."
    )


REFINGERPRINTED = "-refingerprinted"
"""The suffix of the new SQLite file :func:`refingerprint_advice` names."""


def refingerprint_advice(url: URL, spec: str) -> str:
    """How to get a database of ``spec`` with the pages of the one at ``url``: the stored
    texts (``STORE_TEXT``) exported and imported into a new database with the options that
    make ``spec`` (a test runs both commands as printed); a re-crawl when no option of
    ``import`` makes that spec."""
    options = spec_options(spec)
    if options is None:
        return "use a new database and re-crawl into it."
    where = display_url(url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        path = PurePath(url.database or "")
        new = shlex.quote(str(path.with_name(path.stem + REFINGERPRINTED + path.suffix)))
    else:
        new = "NEW_DATABASE_URL"  # an empty database the user makes on the server
    flags = "".join(f" --{key.replace('_', '-')} {value}" for key, value in options.items())
    return (
        "use a new database and re-crawl into it, or re-fingerprint the stored texts "
        f"(STORE_TEXT) into one: `simhash-filter export --texts --db {shlex.quote(where)} "
        f"-o texts.jsonl`, then `simhash-filter import texts.jsonl --store-text{flags} "
        f"--db {new}`, and crawl with that database."
    )


def _rule_text(rule: MatchRule | None) -> str:
    if rule is None:
        return "none (simhash distance alone)"
    return (
        f"candidates within {rule.candidate_distance} bits ({rule.fallback_distance} without "
        f"a sketch) confirmed at similarity {rule.min_similarity:g}"
    )
