"""How values cross into SQL: the one place that converts and encodes them.

Python holds fingerprints and table keys as unsigned 64-bit ints; SQL's BIGINT is signed,
so :func:`to_sql_int` / :func:`from_sql_int` (two's complement) convert them both ways
(schema.py's ``UInt64`` column type, the store's hand-compiled statements and the
PostgreSQL paths all call these two).

The PostgreSQL paths send arrays as the text of an array literal, one string a parameter,
cast on the server (``%s::int8[]``): a row's hundreds of probe keys cost the client one
``join`` rather than a typed wrapper and a quoting check per element, and the statement
is prepared once whatever the values. :class:`PgTypes` wraps single values in psycopg's
typed ints, so every parameter has one type whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_TWO_63 = 1 << 63
_TWO_64 = 1 << 64


def to_sql_int(value: int) -> int:
    """An unsigned 64-bit int as the signed BIGINT that stores it (two's complement)."""
    if not 0 <= value < _TWO_64:
        raise ValueError(f"not an unsigned 64-bit int: {value!r}")
    return value - _TWO_64 if value >= _TWO_63 else value


def from_sql_int(value: Any) -> int:
    """A stored signed BIGINT back as the unsigned 64-bit int it holds."""
    number = int(value)
    return number + _TWO_64 if number < 0 else number


def int_array(values: Iterable[int]) -> str:
    """Ints as the text of an ``int8[]`` literal: an unsigned 64-bit one at or above 2**63
    as the negative :func:`to_sql_int` makes of it, a negative one (a lock id) as it is."""
    return "{" + ",".join([str(v - _TWO_64 if v >= _TWO_63 else v) for v in values]) + "}"


def bool_array(values: Iterable[bool]) -> str:
    """Booleans as the text of a ``bool[]`` literal."""
    return "{" + ",".join(["t" if value else "f" for value in values]) + "}"


def float_array(values: Iterable[float]) -> str:
    """Floats as the text of a ``float8[]`` literal. ``repr`` of a float is the shortest
    text that reads back as the same double, so the server sees exactly these values."""
    return "{" + ",".join(repr(float(value)) for value in values) + "}"


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


class PgTypes:
    """psycopg's typed int wrappers (psycopg would otherwise send an int as int2, int4 or
    int8 by its size), imported when the first PostgreSQL store opens: psycopg is an
    optional dependency."""

    def __init__(self) -> None:
        from psycopg.types.numeric import Int2, Int4, Int8

        self.int2: Callable[[int], Any] = Int2
        self.int4: Callable[[int], Any] = Int4
        self.int8: Callable[[int], Any] = Int8

    def int8s(self, values: Sequence[int]) -> list[Any]:
        """Unsigned 64-bit values as an ``int8[]`` parameter (their signed SQL form)."""
        return [self.int8(to_sql_int(value)) for value in values]

    def ids(self, values: Sequence[int | None]) -> list[Any]:
        """Row ids (or None) as an ``int8[]`` parameter."""
        return [None if value is None else self.int8(value) for value in values]
