"""``simhash-filter``: the commands collected into one parser, and the error → exit code rules.

Each command is declared beside its handler (:mod:`simhash_filter.cli.command`); this module
imports every module of the package so their commands register, and adds the options every
command takes. Exit codes: 0 ok, 1 runtime or database error (one line on stderr; the
traceback only with ``--debug``), 2 usage error (argparse's own message).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from simhash_filter import __version__
from simhash_filter.cli import options
from simhash_filter.cli.command import COMMANDS, Command
from simhash_filter.cli.common import UsageError, database_url, describe_error
from simhash_filter.cli.output import Mode, Output
from simhash_filter.store.urls import DEFAULT_DATABASE_URL, redact

PROG = "simhash-filter"
DATABASE_ENV = "SIMHASH_FILTER_DATABASE_URL"


def commands() -> list[Command]:
    """Every command of the package's modules, by name (as ``--help`` lists them)."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__package__}.{module.name}")
    return sorted(COMMANDS.values(), key=lambda c: c.name)


def _program_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--db``, ``--debug``, ``--json``/``--nl``: accepted before or after the command
    name. ``suppress``: a command's copy, which must not reset a value given before it."""
    unset = argparse.SUPPRESS
    default_db = os.environ.get(DATABASE_ENV) or DEFAULT_DATABASE_URL
    parser.add_argument(
        "--db",
        metavar="URL",
        type=options.database,
        default=unset if suppress else default_db,
        help=f"database URL (default: ${DATABASE_ENV} or {DEFAULT_DATABASE_URL}); "
        "a plain file path means a SQLite file",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=unset if suppress else False,
        help="show the traceback of an error",
    )
    group = parser.add_mutually_exclusive_group()
    mode = unset if suppress else Mode.TABLE
    for flag, const, text in (
        ("--json", Mode.JSON, "print one JSON document"),
        ("--nl", Mode.NL, "print one JSON object per line"),
    ):
        group.add_argument(
            flag, dest="mode", action="store_const", const=const, default=mode, help=text
        )


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the program's options, then one sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Query, inspect and maintain a simhash-filter near-duplicate database.",
    )
    _program_options(parser, suppress=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    shared = argparse.ArgumentParser(add_help=False)
    _program_options(shared, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for found in commands():
        p = sub.add_parser(
            found.name,
            parents=[shared],
            help=found.summary,
            description=found.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for declared in found.options:
            declared.add_to(p)
        p.set_defaults(handler=found.handler, parser=p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (``simhash-filter`` calls ``sys.exit`` with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else 2
    out = Output(args.mode)
    try:
        return int(args.handler(args, out))
    except UsageError as exc:
        args.parser.print_usage(sys.stderr)
        out.note(f"{args.parser.prog}: error: {exc}")
        return 2
    except KeyboardInterrupt:
        out.note(f"{PROG}: interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep Python from
        # complaining again while flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        message = describe_error(exc, args.db)
        if args.debug:  # the traceback too, without the database's credentials
            out.note(redact(traceback.format_exc().rstrip(), database_url(args.db)))
        out.note(f"{PROG}: error: {message}")
        return 1
