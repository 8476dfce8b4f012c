"""``RepeatedErrors``: log the first error of each kind in full, then count the rest.

A store that fails for every page (a full disk, a database gone) would otherwise log a
chained traceback a page, onto the disk that is full. The first error of each kind (the
exception types along its chain) is logged with its traceback; the later ones are counted
and logged as one line per kind with its count, at most once per ``interval`` seconds and
when the crawl ends (:meth:`RepeatedErrors.flush`); with a ``schedule`` (the event loop's
``call_later``), the count line comes at most ``interval`` seconds after the first error it
counts even when no further error comes to trigger it. Not thread-safe: the crawl logs
from the reactor thread.

Each source of errors has its own instance, so that a count line counts one thing: the pages
that could not be checked, the keep policy's errors, the URL rules' (each with its stat). A
plain fault (:func:`is_plain_fault`: a lock timeout, a server that refused or dropped the
connection) says all in its first line: it is logged as that line, without the traceback of
the three exceptions SQLAlchemy and the driver chain around it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simhash_filter.store.faults import is_lock_timeout, is_outage
from simhash_filter.store.records import StoreBusy, StoreUnavailable

__all__ = [
    "RepeatedErrors",
    "error_kind",
    "fault_kind",
    "first_line",
    "is_plain_fault",
    "plain_fault",
]

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


def _chain(error: BaseException) -> list[BaseException]:
    links: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not link for link in links) and len(links) < 8:
        links.append(current)
        current = current.__cause__ or current.__context__
    return links


def plain_fault(error: BaseException) -> str | None:
    """``"lock timeout"`` or ``"database unreachable"`` when ``error`` (or an exception along
    its chain) is one (its first line says all, a traceback would add nothing), else None."""
    links = _chain(error)
    if any(isinstance(link, StoreBusy) or is_lock_timeout(link) for link in links):
        return "lock timeout"
    if any(isinstance(link, StoreUnavailable) or is_outage(link) for link in links):
        return "database unreachable"
    return None


def is_plain_fault(error: BaseException) -> bool:
    """Whether ``error`` is a lock timeout or an outage (:func:`plain_fault`)."""
    return plain_fault(error) is not None


def fault_kind(error: BaseException) -> str:
    """The kind ``error`` is logged and counted under: for a plain fault its outer type and
    what it is (a refused connection and a pooled connection found dead are one kind), else
    the types along its chain (:func:`error_kind`)."""
    plain = plain_fault(error)
    return f"{type(error).__qualname__}: {plain}" if plain else error_kind(error)


def first_line(error: BaseException) -> str:
    """``Type: the first line of the message``, at most :data:`MAX_LINE` characters."""
    message = str(error).strip().split("\n", 1)[0]
    text = f"{type(error).__qualname__}: {message}" if message else type(error).__qualname__
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def _whole_first_line(error: BaseException) -> str:
    """``Type: the first line of the message``, whole (a lock timeout names its holder)."""
    message = str(error).strip().split("\n", 1)[0]
    return f"{type(error).__qualname__}: {message}" if message else type(error).__qualname__


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
        counted: str = "pages could not be checked",
    ) -> None:
        self._logger = logger
        self._counted = counted  # what a count line counts: "<n> more <counted>"
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
        traceback: bool | None = None,
    ) -> bool:
        """Log (or count) one error; True when it was logged in full (the first of its
        kind: with its traceback, or its first line when ``traceback`` is False; None: a
        traceback unless :func:`is_plain_fault`)."""
        kind = fault_kind(error)
        if kind not in self._seen:
            self._seen.add(kind)
            if traceback is None:
                traceback = not is_plain_fault(error)
            self._logger.log(
                level,
                "%s (the first error of this kind; the next ones are counted, one line per kind)",
                message if traceback else f"{message}: {_whole_first_line(error)}",
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
                "simhash_filter: %d more %s (%s; the last: %s)",
                pending.count,
                self._counted,
                kind,
                pending.last,
            )
        self._pending.clear()
