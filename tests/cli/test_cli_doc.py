"""docs/cli.md stays true (issue 31 item 11): its session is run and compared, and every
option of every command is in its section.

The session's input (``pages.jsonl``) is the doc's own ``jsonl`` block; each ``$
simhash-filter ...`` line is run through ``main()`` in a fresh folder, and what it prints
(stderr, then stdout, then ``[exit N]`` when it is not 0) is compared with the lines under
it, times and the database's size made alike. ``SIMHASH_FILTER_WRITE_DOCS=1`` writes what
was printed into the doc instead (then read the diff before committing it).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli_corpus import run

from simhash_filter.cli.app import commands

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
SESSION_HEADING = "## A session"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
_SIZE = re.compile(r"^(size\s+).*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Step:
    """One ``$`` line of the session and the lines the doc shows under it."""

    command: str
    shown: str


def _session(doc: str) -> tuple[str, str]:
    """The session section's input file and its console block."""
    section = doc[doc.index(SESSION_HEADING) :]
    data = re.search(r"```jsonl\n(.*?)```", section, re.DOTALL)
    console = re.search(r"```console\n(.*?)```", section, re.DOTALL)
    assert data is not None, "the session's pages.jsonl block is missing"
    assert console is not None, "the session's console block is missing"
    return data.group(1), console.group(1)


def steps(console: str) -> list[Step]:
    found: list[Step] = []
    for chunk in re.split(r"^\$ ", console, flags=re.MULTILINE)[1:]:
        command, _, shown = chunk.partition("\n")
        found.append(Step(command, shown.rstrip("\n") + "\n"))
    return found


def normalized(text: str) -> str:
    return _SIZE.sub(r"\1<size>", _TIME.sub("<time>", text))


def printed(capsys: pytest.CaptureFixture[str], command: str) -> str:
    argv = shlex.split(command)
    assert argv[0] == "simhash-filter", f"the session runs simhash-filter only: {command}"
    code, out, err = run(capsys, *argv[1:])
    text = err + out
    if code:
        text += f"[exit {code}]\n"
    return text


def test_the_documented_session_prints_what_the_doc_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = DOC.read_text(encoding="utf-8")
    data, console = _session(doc)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMHASH_FILTER_DATABASE_URL", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe's whole lines, as the doc shows
    (tmp_path / "pages.jsonl").write_text(data, encoding="utf-8")
    session = steps(console)
    assert len(session) >= 10
    actual = [Step(step.command, printed(capsys, step.command)) for step in session]
    if os.environ.get("SIMHASH_FILTER_WRITE_DOCS") == "1":
        block = "".join(f"$ {step.command}\n{step.shown}\n" for step in actual).rstrip("\n")
        DOC.write_text(doc.replace(console, block + "\n"), encoding="utf-8")
        return
    for want, got in zip(session, actual, strict=True):
        expected, seen = normalized(want.shown), normalized(got.shown)
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), seen.splitlines(True), "docs/cli.md", "printed"
            )
        )
        assert seen == expected, f"$ {want.command}\n{diff}(update docs/cli.md's session)"


def _sections(doc: str) -> dict[str, str]:
    """The text of each ``## `command` `` section."""
    parts = re.split(r"^## ", doc, flags=re.MULTILINE)
    found = {}
    for part in parts:
        title = re.match(r"`([a-z]+)`", part)
        if title:
            found[title.group(1)] = part
    return found


def test_every_option_of_every_command_is_documented() -> None:
    doc = DOC.read_text(encoding="utf-8")
    sections = _sections(doc)
    missing = []
    for command in commands():
        assert command.name in sections, f"docs/cli.md has no section for {command.name}"
        flags = [
            flag
            for declared in command.options
            for member in (declared.exclusive or (declared,))
            for flag in member.flags
            if flag.startswith("--")
        ]
        missing += [
            f"{command.name} {flag}" for flag in flags if f"`{flag}" not in sections[command.name]
        ]
        choices = [
            choice
            for declared in command.options
            for choice in declared.keywords.get("choices", ())
            if declared.flags and declared.flags[-1].startswith("--")
        ]
        missing += [
            f"{command.name} choice {choice}"
            for choice in choices
            if choice not in sections[command.name]
        ]
    assert missing == []


def test_the_session_parser_reads_commands_and_what_they_show() -> None:
    console = "$ simhash-filter stats\na  1\n\n$ simhash-filter stats --db x\nerror\n[exit 1]\n"
    assert steps(console) == [
        Step("simhash-filter stats", "a  1\n"),
        Step("simhash-filter stats --db x", "error\n[exit 1]\n"),
    ]
    assert normalized("2026-11-22T22:25:09Z size   56.0 KiB\nsize   1 byte") == (
        "<time> size   56.0 KiB\nsize   <size>"
    )
