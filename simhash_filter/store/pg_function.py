"""The "pg-function" write path: check-and-add as one server-side function, one round trip.

The PL/pgSQL lives in ``decide_function.sql``: the advisory locks, then for each row in
order the page under its URL, the probe, the judgement of each candidate (nearest first,
then by URL) and the writes, all in the one statement that calls it, in autocommit (one
transaction, one round trip). Rows of a batch are decided one after another, so a row sees
the pages earlier rows admitted or changed through the key rows they wrote: what
:func:`~simhash_filter.store.batch.decide_batch` decides in Python, written a second time
in SQL (the judge, ``MatchRule.verify``, the index keys of a stored page); the
equivalence tests pin the two.

The match rule and the index scheme travel as parameters, so one function serves every
rule and scheme of a table count (the statements name the page row's key columns,
key_columns.py). The functions' names carry a digest of the SQL as installed
(:func:`decide_function`): an edited body can never run under an old name, and crawlers of
two releases sharing one database each call their own. The store's first write installs
them, under the schema lock; the store takes this path only where the server has
``bit_count`` (PostgreSQL 14) and the functions are there or the role may create them
(write_path.py).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from typing import Any, NamedTuple

from sqlalchemy import Engine

from simhash_filter.core.signature import MatchRule
from simhash_filter.index.schemes import (
    FALLBACK_SCHEME,
    IndexScheme,
    MinHashLshScheme,
    PermutedScheme,
)

from . import key_columns as key_columns
from .batch import Judge, RowToCheck
from .encoding import bool_array, bytea_array, float_array, from_sql_int, int_array, text_array
from .faults import OutageRetry
from .locks import GLOBAL_LOCK, SCHEMA_LOCK, TAKE_LOCKS, WriteLocks
from .pg import PgWritePath
from .records import Match, Verdict, VerdictKind

log = logging.getLogger(__name__)

_SOURCE = "decide_function.sql"
_VERSION_MARK = "__V__"
_LOCKS_MARK = "__TAKE_LOCKS__"
_COLUMNS_MARK = "__BAND_COLUMNS__"
_HITS_MARK = "__BAND_HITS__"
_TABLES_MARK = "__TABLES__"
_TABLE_KEYS_MARK = "__TABLE_KEYS__"
_HIT_COLUMNS = "id, url, fingerprint, sketch"  # what the probe reads of a candidate


def function_sql(source: str, n_tables: int) -> tuple[str, str]:
    """The installable SQL of ``source`` (decide_function.sql's text) for a scheme of
    ``n_tables`` tables, and the digest that names its functions: the digest is taken of
    the text as installed (the lock clause and the key columns filled in), so an edit to
    any of them, or another table count, gives the functions a new name."""
    body = (
        source.replace(_LOCKS_MARK, TAKE_LOCKS.format(ids="p_locks", shared="p_lock_shared"))
        .replace(_COLUMNS_MARK, ", ".join(key_columns.column_names(n_tables)))
        .replace(_HITS_MARK, key_columns.table_hits_sql(n_tables, _probe_keys, _HIT_COLUMNS))
        .replace(_TABLES_MARK, str(n_tables))
        .replace(_TABLE_KEYS_MARK, key_columns.table_keys_sql(n_tables, "k.t", "k.key"))
    )
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]
    return body.replace(_VERSION_MARK, f"_{digest}"), digest


def _probe_keys(table_no: int) -> str:
    """The function's array of a row's probe keys in table ``table_no``."""
    return (
        f"p_probe_keys[coalesce(p_probe_ends[probe_base + {table_no}], 0) + 1 : "
        f"p_probe_ends[probe_base + {table_no + 1}]]"
    )


def function_source() -> str:
    """decide_function.sql, as shipped with the package."""
    return resources.files(__package__).joinpath(_SOURCE).read_text(encoding="utf-8")


class DecideFunction(NamedTuple):
    """The functions of one table count, as installed."""

    sql: str  # their definitions
    digest: str  # the digest in their names
    name: str  # the check function's name
    call: str  # the statement that calls it


@functools.lru_cache(maxsize=8)
def decide_function(n_tables: int) -> DecideFunction:
    """The :class:`DecideFunction` of a scheme of ``n_tables`` tables."""
    sql, digest = function_sql(function_source(), n_tables)
    name = f"simhash_filter_check_{digest}"
    call = (
        f"SELECT * FROM {name}(%s::text[], %s::text[], %s::int8[], %s::int4[], "
        "%s::bytea[], %s::int2[], %s::int8[], %s::int4[], %s::int8[], %s::int4[], "
        "%s::int4[], %s::int2[], %s::int4[], %s::int8[], %s::int4[], "
        "%s::int8[], %s::bool[], %s::int8, %s::bool, %s::timestamptz, %s::int4, %s::float8[])"
    )
    return DecideFunction(sql, digest, name, call)


INSTALLED_SQL = (
    "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE p.proname = %s AND n.nspname = current_schema()"
)


class KeyCut(NamedTuple):
    """One block's part of a table's key: ``((fp >> shift) & mask) << left``."""

    table_no: int
    shift: int
    mask: int
    left: int


def key_cuts(scheme: IndexScheme) -> list[KeyCut]:
    """How ``scheme.index_items`` cuts each table's key out of a fingerprint (for a
    minhash-lsh scheme: its fallback tables'), as rows the function's ``p_cut_*``
    parameters carry (checked against ``index_items`` by the tests)."""
    if isinstance(scheme, MinHashLshScheme):
        first = scheme.n_blocks
        return [cut._replace(table_no=first + cut.table_no) for cut in key_cuts(FALLBACK_SCHEME)]
    widths = scheme.block_widths
    cuts = []
    for table in scheme.tables:
        # a permuted table's key joins its blocks, the first one highest; a multi-index
        # table's key is its one block
        left = sum(widths[b] for b in table.blocks) if isinstance(scheme, PermutedScheme) else 0
        for block in table.blocks:
            left -= widths[block] if isinstance(scheme, PermutedScheme) else 0
            shift, mask = scheme.block_cuts[block]
            cuts.append(KeyCut(table.table_no, shift, mask, left))
    return cuts


class SchemeArrays(NamedTuple):
    """The function's parameters that depend on the index scheme alone, made once."""

    lsh: str
    cut_tables: str
    cut_shifts: str
    cut_masks: str
    cut_lefts: str


@functools.lru_cache(maxsize=8)
def scheme_arrays(scheme: IndexScheme) -> SchemeArrays:
    """:class:`SchemeArrays` of ``scheme``: ``{bands, rows}`` of a minhash-lsh scheme
    (``{0, 0}`` for the simhash schemes) and :func:`key_cuts`."""
    cuts = key_cuts(scheme)
    lsh = (scheme.n_blocks, scheme.rows) if isinstance(scheme, MinHashLshScheme) else (0, 0)
    return SchemeArrays(
        int_array(lsh),
        int_array(cut.table_no for cut in cuts),
        int_array(cut.shift for cut in cuts),
        int_array(cut.mask for cut in cuts),
        int_array(cut.left for cut in cuts),
    )


@functools.lru_cache(maxsize=8)
def rule_parameter(rule: MatchRule | None) -> str | None:
    """The match rule as the function's ``p_rule``, a ``float8[]`` literal (None: judged
    by distance alone). ``repr`` of a float is the shortest text that reads back as the
    same double (encoding.float_array), so the server compares with exactly the Python
    thresholds."""
    if rule is None:
        return None
    values = (
        rule.candidate_distance,
        rule.min_similarity,
        rule.fallback_distance,
        rule.min_page_similarity,
        rule.max_text_share,
    )
    return float_array(values)


def function_installable(conn: Any, n_tables: int) -> bool:
    """Whether the function of ``n_tables`` tables is installed in the current schema, or
    the role may create it there (the server's version is checked apart:
    pg.server_supports)."""
    (present,) = conn.execute(INSTALLED_SQL, (decide_function(n_tables).name,)).fetchone()
    if present:
        return True
    (may_create,) = conn.execute(
        "SELECT coalesce(has_schema_privilege(current_schema(), 'CREATE'), false)"
    ).fetchone()
    return bool(may_create)


class PgFunctionPath(PgWritePath):
    """The "pg-function" write path: each write one call of the function (installed by
    the store's first write); ``near()`` as pg.py's."""

    name = "pg-function"

    def __init__(
        self,
        engine: Engine,
        *,
        display_url: str,
        durable: bool | None,
        bit_count: bool,
        outage: OutageRetry | None = None,
    ) -> None:
        super().__init__(
            engine, display_url=display_url, durable=durable, bit_count=bit_count, outage=outage
        )
        self._installed: set[str] = set()

    def _install(self, conn: Any, function: DecideFunction) -> None:
        """Install the function unless it is there, under the schema lock (so concurrent
        first writers do not race)."""
        conn.autocommit = True
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._types.int8(SCHEMA_LOCK),))
            (present,) = conn.execute(INSTALLED_SQL, (function.name,)).fetchone()
            if not present:
                conn.execute(function.sql)
                log.info("installed %s on %s", function.name, self._display_url)
        self._installed.add(function.name)

    def _write(
        self,
        conn: Any,
        rows: Sequence[RowToCheck],
        locks: WriteLocks | None,
        *,
        judge: Judge,
        scheme: IndexScheme,
        now: datetime,
    ) -> list[Verdict]:
        """One call of the function in autocommit: one round trip (the first write of
        the store installs the function first)."""
        function = decide_function(scheme.n_tables)
        if function.name not in self._installed:
            self._install(conn, function)
        if not rows:
            return []
        t = self._types
        arrays = scheme_arrays(scheme)
        conn.autocommit = True
        result = conn.execute(
            function.call,
            (
                text_array([row.url for row in rows]),
                text_array([row.domain for row in rows]),
                int_array([row.fingerprint for row in rows]),
                int_array([row.text_length for row in rows]),
                bytea_array([row.sketch for row in rows]),
                int_array([t for row in rows for t, _ in row.index_keys]),
                int_array([key for row in rows for _, key in row.index_keys]),
                int_array(itertools.accumulate(len(row.index_keys) for row in rows)),
                *probe_arrays(rows, scheme.n_tables),
                arrays.lsh,
                arrays.cut_tables,
                arrays.cut_shifts,
                arrays.cut_masks,
                arrays.cut_lefts,
                None if locks is None else int_array(locks.ids),
                None if locks is None else bool_array(locks.shared),
                t.int8(GLOBAL_LOCK),
                self._async,
                now,
                t.int4(judge.radius),
                rule_parameter(judge.rule),
            ),
            prepare=True,
        ).fetchall()
        return [_verdict(row, result_row) for row, result_row in zip(rows, result, strict=True)]


def probe_arrays(rows: Sequence[RowToCheck], n_tables: int) -> tuple[str, str]:
    """The function's ``p_probe_keys`` and ``p_probe_ends``: each row's probe keys a table
    at a time, and where each row's table ends in them (``n_tables`` ends a row)."""
    keys: list[int] = []
    ends: list[int] = []
    for row in rows:
        by_table: list[list[int]] = [[] for _ in range(n_tables)]
        for t, key in row.probe_keys:
            by_table[t].append(key)
        for table_keys in by_table:
            keys.extend(table_keys)
            ends.append(len(keys))
    return int_array(keys), int_array(ends)


def _verdict(row: RowToCheck, result: Sequence[Any]) -> Verdict:
    """A row's verdict from the function's result row (kind, previous fingerprint, the
    match's, the boilerplate match's and the listing match's id, URL, fingerprint, distance,
    similarity)."""
    kind, previous = result[0], result[1]
    return Verdict(
        kind=VerdictKind(kind),
        url=row.url,
        fingerprint=row.fingerprint,
        duplicate_of=_match(result[2:7]),
        previous_fingerprint=None if previous is None else from_sql_int(previous),
        boilerplate_of=_match(result[7:12]),
        listing_of=_match(result[12:17]),
    )


def _match(columns: Sequence[Any]) -> Match | None:
    page_id, url, fingerprint, distance, similarity = columns
    if page_id is None:
        return None
    return Match(url, from_sql_int(fingerprint), distance, page_id, similarity)
