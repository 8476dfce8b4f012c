"""``RepeatedErrors``: log the first error of each kind in full, then count the rest.

A store that fails for every page (a full disk, a database gone) would otherwise log a
chained traceback a page, onto the disk that is full. The first error of each kind (the
exception types along its chain) is logged with its traceback; the later ones are counted
and logged as one line per kind with its count, at most once per ``interval`` seconds and
when the crawl ends (:meth:`RepeatedErrors.flush`); with a ``schedule`` (the event loop's
``call_later``), the count line comes at most ``interval`` seconds after the first error it
counts even when no further error comes to trigger it. Not thread-safe: the crawl logs
from the reactor thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RepeatedErrors", "error_kind", "first_line"]

MAX_LINE = 200
"""Characters of an error's message kept in a summary line or a drop reason."""


def error_kind(error: BaseException) -> str:
    """The exception types along ``error``'s chain (its causes and contexts), outermost
    first: ``OperationalError < OperationalError``."""
    names: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(names) < 8:
        seen.add(id(current))
        names.append(type(current).__qualname__)
        current = current.__cause__ or current.__context__
    return " < ".join(names)


def first_line(error: BaseException) -> str:
    """``Type: the first line of the message``, at most :data:`MAX_LINE` characters."""
    message = str(error).strip().split("\n", 1)[0]
    text = f"{type(error).__qualname__}: {message}" if message else type(error).__qualname__
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


@dataclass
class _Kind:
    count: int = 0
    last: str = ""


class RepeatedErrors:
    """Logs errors to ``logger``: the first of each kind with its traceback, the others as
    one summary line per kind and interval."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        schedule: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._schedule = schedule
        self._timer: Any = None
        self._seen: set[str] = set()
        self._pending: dict[str, _Kind] = {}
        self._flushed_at = clock()

    def error(
        self,
        message: str,
        error: BaseException,
        *,
        level: int = logging.WARNING,
        traceback: bool = True,
    ) -> bool:
        """Log (or count) one error; True when it was logged in full (the first of its
        kind: with its traceback, or, ``traceback=False``, its first line)."""
        kind = error_kind(error)
        if kind not in self._seen:
            self._seen.add(kind)
            self._logger.log(
                level,
                "%s (the first error of this kind; the next ones are counted, one line per kind)",
                message if traceback else f"{message}: {type(error).__qualname__}: {error}",
                exc_info=error if traceback else None,
            )
            return True
        pending = self._pending.setdefault(kind, _Kind())
        pending.count += 1
        pending.last = first_line(error)
        due = self._interval - (self._clock() - self._flushed_at)
        if due <= 0:
            self.flush()
        elif self._schedule is not None and self._timer is None:
            self._timer = self._schedule(due, self._flush_when_due)
        return False

    def _flush_when_due(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Log one line per kind counted since the last flush."""
        timer, self._timer = self._timer, None
        if timer is not None and hasattr(timer, "cancel"):
            timer.cancel()
        self._flushed_at = self._clock()
        for kind, pending in self._pending.items():
            self._logger.warning(
                "simhash_filter: %d more pages could not be checked (%s; the last: %s)",
                pending.count,
                kind,
                pending.last,
            )
        self._pending.clear()
