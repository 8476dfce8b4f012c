"""How the command line prints: a readable table, one JSON document, or JSON lines.

Commands build plain records (JSON-ready values: fingerprints as 16-digit hex strings,
times as ISO 8601) and hand them to :class:`Output`, which renders them in the mode the
user asked for. Data goes to stdout; notes and progress go to stderr.
"""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from simhash_filter.cli.errors import CommandError

Record = Mapping[str, Any]


class Mode(enum.Enum):
    """The output format chosen on the command line."""

    TABLE = "table"
    JSON = "json"  # one document
    NL = "nl"  # one JSON object per line


def hex64(fingerprint: int) -> str:
    """A 64-bit fingerprint as exactly 16 lowercase hex digits."""
    return f"{fingerprint:016x}"


def iso_time(moment: datetime) -> str:
    """A stored time as ISO 8601 in UTC (naive times from SQLite are UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def json_line(value: object) -> str:
    """``value`` as compact JSON on one line (the ``--nl`` and JSON Lines form)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: the record key, its header and its alignment."""

    key: str
    header: str
    right: bool = False  # numbers align right
    optional: bool = False  # left out of a table in which no row has a value for it


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table inside a document's readable form."""

    columns: Sequence[Column]
    rows: Sequence[Record]
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Fields:
    """``label  value`` lines inside a document's readable form."""

    items: Sequence[tuple[str, object]]
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Lines:
    """Lines printed as they are (a page's text, a diff) inside a document's readable form."""

    lines: Sequence[str]
    title: str | None = None


Section = Table | Fields | Lines


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


MIN_SHRUNK = 24
"""The narrowest a URL column is cut to when a table is fitted to the terminal."""
URL_KEYS = frozenset({"url", "duplicate_of", "maps_to", "kept_url", "canonical"})
"""Columns of URLs: the ones cut in the middle to fit a table in the terminal."""


def terminal_width(stream: TextIO | None) -> int | None:
    """The width tables are fitted to: ``$COLUMNS`` when set, else the terminal's when
    ``stream`` is one; None (no limit) for a pipe or a file, which keep whole values."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream is not None and stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        pass
    return None


def elide(value: str, width: int) -> str:
    """``value`` cut to ``width`` characters in the middle (``https://a.example/…/page``)."""
    if len(value) <= width:
        return value
    head = (width - 1) // 2
    return value[:head] + "…" + value[len(value) - (width - 1 - head) :]


def _fit(widths: list[int], columns: Sequence[Column], width: int) -> list[int] | None:
    """Column widths whose table fits in ``width``, the widest URL columns narrowed first,
    none below :data:`MIN_SHRUNK`; None when that is not enough (records then)."""
    fitted = list(widths)
    excess = sum(fitted) + 2 * (len(fitted) - 1) - width
    while excess > 0:
        shrinkable = [
            i
            for i, column in enumerate(columns)
            if column.key in URL_KEYS and fitted[i] > MIN_SHRUNK
        ]
        if not shrinkable:
            return None
        widest = max(shrinkable, key=fitted.__getitem__)
        runner_up = max((fitted[i] for i in shrinkable if i != widest), default=0)
        cut = min(excess, fitted[widest] - max(runner_up, MIN_SHRUNK) or 1)
        fitted[widest] -= cut
        excess -= cut
    return fitted


def _records(columns: Sequence[Column], cells: list[list[str]], width: int) -> list[str]:
    """A table too wide for the terminal as one ``label  value`` block a row (as psql's
    expanded display), values cut in the middle to the width."""
    label = max(len(column.header) for column in columns)
    room = max(MIN_SHRUNK, width - label - 2)
    lines: list[str] = []
    for n, line in enumerate(cells):
        if n:
            lines.append("")
        lines += [
            f"{column.header.ljust(label)}  {elide(value, room)}".rstrip()
            for column, value in zip(columns, line, strict=True)
        ]
    return lines


def render_table(
    columns: Sequence[Column], rows: Iterable[Record], width: int | None = None
) -> list[str]:
    """Rows under a header and a dashed rule, columns two spaces apart. With ``width``
    (the terminal's), URL columns are cut in the middle (``…``) so a line fits; a table
    that does not fit even so is printed as one block of ``label  value`` lines a row."""
    rows = list(rows)
    columns = [
        column
        for column in columns
        if not column.optional or any(row.get(column.key) is not None for row in rows)
    ]
    cells = [[_cell(row.get(column.key)) for column in columns] for row in rows]
    widths = [
        max([len(column.header), *(len(line[i]) for line in cells)])
        for i, column in enumerate(columns)
    ]
    if width is not None:
        fitted = _fit(widths, columns, width)
        if fitted is None:
            return _records(columns, cells, width)
        widths = fitted
        cells = [[elide(value, w) for value, w in zip(line, widths, strict=True)] for line in cells]

    def line(values: Sequence[str]) -> str:
        padded = [
            value.rjust(width) if column.right else value.ljust(width)
            for value, width, column in zip(values, widths, columns, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return [
        line([column.header for column in columns]),
        line(["-" * width for width in widths]),
        *(line(values) for values in cells),
    ]


def render_fields(items: Sequence[tuple[str, object]]) -> list[str]:
    """Aligned ``label  value`` lines."""
    width = max((len(label) for label, _ in items), default=0)
    return [f"{label.ljust(width)}  {_cell(value)}".rstrip() for label, value in items]


class Output:
    """Writes a command's result in the chosen mode."""

    def __init__(
        self, mode: Mode = Mode.TABLE, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.mode = mode
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self.width = terminal_width(self.stdout)

    def _print(self, line: str) -> None:
        self.writable_stdout().write(line + "\n")

    def writable_stdout(self) -> TextIO:
        """stdout, or a CommandError when the command was started with it closed (Python
        then has no ``sys.stdout`` at all)."""
        if self.stdout is None:
            raise CommandError("stdout is closed: nothing can be written to it (use -o FILE)")
        return self.stdout

    def _json(self, value: object, *, indent: int | None) -> str:
        if indent is None:
            return json_line(value)
        return json.dumps(value, indent=indent, ensure_ascii=False)

    def note(self, message: str) -> None:
        """A diagnostic for the person at the terminal, on stderr."""
        self.stderr.write(message + "\n")

    def rows(
        self,
        columns: Sequence[Column],
        rows: Iterable[Record],
        *,
        empty: str,
        sections: Callable[[list[Record]], Sequence[Section]] | None = None,
    ) -> int:
        """A list of records: a table, a JSON array, or one object per line.

        ``empty`` is the note printed on stderr when there is nothing to show (the table
        and JSON lines forms print nothing on stdout then; JSON prints ``[]``).
        ``sections`` renders nested records readably instead of one table.
        Returns how many rows were written.
        """
        count = 0
        if self.mode is Mode.NL:
            for row in rows:
                self._print(self._json(row, indent=None))
                count += 1
        elif self.mode is Mode.JSON:
            collected = list(rows)
            count = len(collected)
            self._print(self._json(collected, indent=2))
        else:
            collected = list(rows)
            count = len(collected)
            if collected and sections is not None:
                self._sections(sections(collected))
            elif collected:
                for line in render_table(columns, collected, self.width):
                    self._print(line)
        if count == 0:
            self.note(empty)
        return count

    def document(self, document: Record, sections: Sequence[Section]) -> None:
        """One result: ``sections`` in table mode, else ``document`` as JSON."""
        if self.mode is Mode.NL:
            self._print(self._json(document, indent=None))
            return
        if self.mode is Mode.JSON:
            self._print(self._json(document, indent=2))
            return
        self._sections(sections)

    def _sections(self, sections: Sequence[Section]) -> None:
        first = True
        for section in sections:
            if isinstance(section, Table) and not section.rows:
                continue
            if not first:
                self._print("")
            first = False
            if section.title:
                self._print(section.title)
            if isinstance(section, Table):
                lines = render_table(section.columns, section.rows, self.width)
            elif isinstance(section, Lines):
                lines = list(section.lines)
            else:
                lines = render_fields(section.items)
            for line in lines:
                self._print(line)
