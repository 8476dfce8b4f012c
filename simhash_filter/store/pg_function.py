"""check-and-add as one server-side function: the PostgreSQL write path in one round trip.

The PL/pgSQL lives in ``check_function.sql``: the advisory locks, then for each row in
order the page under its URL, the probe, the judgement of each candidate (nearest first,
then by URL) and the writes, all in the one statement that calls it, in autocommit (one
transaction, one round trip). Rows of a batch are decided one after another, so a row sees
the pages earlier rows admitted or changed through the band rows they wrote: what
:func:`~simhash_filter.store.batch.check_batch` decides in Python, written a second time
in SQL (the judge, ``MatchRule.verify``, the index keys of a stored page); the
equivalence tests pin the two.

The match rule and the band scheme travel as parameters, so one function serves every
rule and scheme. The functions' names carry a digest of the SQL as installed
(:data:`FUNCTION_DIGEST`): an edited body can never run under an old name, and crawlers of
two releases sharing one database each call their own. They are installed on first use,
under the schema lock; a server where they cannot be (PostgreSQL before 14, or a role
without CREATE) keeps the two-round-trip path of :mod:`.pg`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from importlib import resources
from typing import Any, NamedTuple

from simhash_filter.bands import FALLBACK_SCHEME, BandScheme, IndexScheme, MinHashLshScheme
from simhash_filter.signature import MatchRule

from .locks import TAKE_LOCKS

MIN_SERVER_VERSION = 140000
"""``bit_count(bit)`` and ``bit_xor`` arrived in PostgreSQL 14."""

_TWO_63 = 1 << 63
_TWO_64 = 1 << 64
_SOURCE = "check_function.sql"
_VERSION_MARK = "__V__"
_LOCKS_MARK = "__TAKE_LOCKS__"


def function_sql(source: str) -> tuple[str, str]:
    """The installable SQL of ``source`` (check_function.sql's text) and the digest that
    names its functions: the digest is taken of the text as installed (with the lock
    clause filled in), so an edit to either gives the functions a new name."""
    body = source.replace(_LOCKS_MARK, TAKE_LOCKS.format(ids="p_locks", shared="p_lock_shared"))
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]
    return body.replace(_VERSION_MARK, f"_{digest}"), digest


def function_source() -> str:
    """check_function.sql, as shipped with the package."""
    return resources.files(__package__).joinpath(_SOURCE).read_text(encoding="utf-8")


FUNCTION_SQL, FUNCTION_DIGEST = function_sql(function_source())
"""The functions' definitions (store/check_function.sql), and the digest in their names."""
CHECK_FUNCTION = f"simhash_filter_check_{FUNCTION_DIGEST}"

CALL_SQL = (
    f"SELECT * FROM {CHECK_FUNCTION}(%s::text[], %s::text[], %s::int8[], %s::int4[], "
    "%s::bytea[], %s::int2[], %s::int8[], %s::int4[], %s::int2[], %s::int8[], %s::int4[], "
    "%s::int4[], %s::int2[], %s::int4[], %s::int8[], %s::int4[], "
    "%s::int8[], %s::bool[], %s::int8, %s::bool, %s::timestamptz, %s::int4, %s::float8[])"
)

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
        left = sum(widths[b] for b in table.blocks) if isinstance(scheme, BandScheme) else 0
        for block in table.blocks:
            left -= widths[block] if isinstance(scheme, BandScheme) else 0
            shift, mask = scheme.block_cuts[block]
            cuts.append(KeyCut(table.table_no, shift, mask, left))
    return cuts


def int_array(values: Iterable[int]) -> str:
    """Ints as the text of an ``int8[]`` literal, an unsigned 64-bit one at or above 2**63
    as the negative ``to_sql_int`` makes of it. Sent as one string and cast on the server, a row's
    hundreds of probe keys cost the client one ``join`` rather than a typed wrapper and
    a quoting check per element."""
    return "{" + ",".join([str(v - _TWO_64 if v >= _TWO_63 else v) for v in values]) + "}"


def bool_array(values: Iterable[bool]) -> str:
    """Booleans as the text of a ``bool[]`` literal (one string, as :func:`int_array`)."""
    return "{" + ",".join(["t" if value else "f" for value in values]) + "}"


def text_array(values: Iterable[str]) -> str:
    """Strings as the text of a ``text[]`` literal: each element double-quoted, its
    backslashes and double quotes escaped (so commas, braces, spaces and the word NULL
    stay text)."""
    quoted = ['"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values]
    return "{" + ",".join(quoted) + "}"


def bytea_array(values: Iterable[bytes | None]) -> str:
    """Byte strings (or None) as the text of a ``bytea[]`` literal, each element in
    bytea's hex form (its one backslash escaped inside the array literal)."""
    return "{" + ",".join(["NULL" if v is None else '"\\\\x' + v.hex() + '"' for v in values]) + "}"


class SchemeArrays(NamedTuple):
    """The function's parameters that depend on the band scheme alone, made once."""

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
    same double, so the server compares with exactly the Python thresholds."""
    if rule is None:
        return None
    values = (
        rule.candidate_distance,
        rule.min_similarity,
        rule.fallback_distance,
        rule.min_page_similarity,
        rule.max_text_share,
    )
    return "{" + ",".join(repr(float(value)) for value in values) + "}"


def server_supports(conn: Any) -> bool:
    """True when the server is new enough for the function (``bit_count``)."""
    return int(conn.info.server_version) >= MIN_SERVER_VERSION
