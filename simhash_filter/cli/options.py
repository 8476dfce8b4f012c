"""The values of the command line's options: parsed here, so a bad one is a usage error
(exit 2) with a message that says what is wanted, never a traceback."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

COUNT_MAX = 2**31 - 1
"""The largest count an option takes (a --limit beyond it shows all anyway)."""

_WHOLE_NUMBER = re.compile(r"\+?[0-9]+", re.ASCII)
_AGE = re.compile(r"([0-9]+)\s*([smhdw])", re.ASCII)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An option type: a whole number (ASCII digits) in ``minimum..maximum``."""

    def parse(value: str) -> int:
        text = value.strip()
        if not _WHOLE_NUMBER.fullmatch(text.removeprefix("-")):
            raise argparse.ArgumentTypeError(f"not a whole number: {value!r}")
        if len(text) > 20 or not minimum <= int(text) <= maximum:
            wanted = (
                f"{minimum} or more" if maximum == COUNT_MAX else f"between {minimum} and {maximum}"
            )
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text}")
        return int(text)

    parse.__name__ = f"whole number in {minimum}..{maximum}"
    return parse


count = whole_number(0, COUNT_MAX)  # --limit, --domains: 0 means all
positive_count = whole_number(1, COUNT_MAX)  # --min-size, --features
distance = whole_number(0, 64)  # --k of a query (beyond the index's k: a clear error)
max_distance = whole_number(0, 63)  # k of an index (k=64 would match every page)
blocks = whole_number(1, 64)
batch_size = whole_number(1, 1_000_000)
jobs = whole_number(1, 256)


def similarity(value: str) -> float:
    """``--min-similarity``: a number between 0 and 1."""
    try:
        number = float(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0.0 <= number <= 1.0:  # (NaN too)
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value.strip()}")
    return number


def since(value: str) -> datetime:
    """``--since``: an ISO date or time (local unless it has an offset), or an age
    like ``90s``, ``30m``, ``12h``, ``7d``, ``2w``."""
    age = _AGE.fullmatch(value.strip())
    try:
        if age:
            amount, unit = int(age.group(1)), age.group(2)
            if len(age.group(1)) > 15:
                raise OverflowError
            return datetime.now(UTC) - timedelta(seconds=amount * _UNIT_SECONDS[unit])
    except OverflowError:
        raise argparse.ArgumentTypeError(
            f"{value!r} reaches back before the year 1: give a smaller age or a date"
        ) from None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date, time or age: {value!r} (try 2024-05-01, 2024-05-01T12:00, 7d)"
        ) from None
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()  # local time
        return moment.astimezone(UTC)
    except (OverflowError, ValueError, OSError):
        raise argparse.ArgumentTypeError(
            f"{value!r} is out of range: give a date between the years 1 and 9999 that can "
            "be placed in a time zone (e.g. 2024-05-01 or 0001-01-02T00:00+00:00)"
        ) from None


def database(value: str) -> str:
    """``--db`` (or ``$SIMHASH_FILTER_DATABASE_URL``): a SQLAlchemy URL, or a plain path
    meaning a SQLite file. The value is not repeated in the message: it may hold a
    password."""
    if "://" not in value:
        if not value.strip():
            raise argparse.ArgumentTypeError("an empty database path")
        return value
    try:
        make_url(value)
    except (ArgumentError, ValueError, TypeError) as exc:
        reason = "it cannot be parsed" if isinstance(exc, ArgumentError) else str(exc)
        raise argparse.ArgumentTypeError(
            f"not a database URL ({reason}); e.g. sqlite:///dedup.db or "
            "postgresql+psycopg://user@host/dbname"
        ) from None
    return value
