"""How a command is declared: its options as decorators right above its handler, its
``--help`` text the handler's docstring (as sqlite-utils does with click, here on argparse).

::

    @command("lookup")
    @option("url", metavar="URL")
    def lookup(args: argparse.Namespace, out: Output) -> int:
        \"\"\"is a URL in the database, and what is known about it\"\"\"

The docstring's first paragraph is the line in ``simhash-filter --help``; the whole of it
is the command's own ``--help``. A new command is one module in ``simhash_filter/cli``
with such a handler: :func:`simhash_filter.cli.app.main` finds every module of the
package and builds the parser from what :func:`command` registered.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simhash_filter.cli import options
from simhash_filter.cli.output import Output

__all__ = ["COMMANDS", "Command", "Handler", "command", "domains", "exclusive", "limit", "option"]

Handler = Callable[[argparse.Namespace, Output], int]
_OPTIONS_ATTRIBUTE = "__cli_options__"


@dataclass(frozen=True, slots=True)
class Option:
    """One ``add_argument`` call: its names and keywords, or several in a group of which
    at most one may be given (``exclusive``)."""

    flags: tuple[str, ...]
    keywords: dict[str, Any] = field(default_factory=dict)
    exclusive: tuple[Option, ...] = ()

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.exclusive:
            group = parser.add_mutually_exclusive_group()
            for member in self.exclusive:
                group.add_argument(*member.flags, **member.keywords)
            return
        parser.add_argument(*self.flags, **self.keywords)


@dataclass(frozen=True, slots=True)
class Command:
    """A command: its name, its handler, and its options in the order they read."""

    name: str
    handler: Handler
    options: tuple[Option, ...]

    @property
    def summary(self) -> str:
        """The docstring's first paragraph, on one line: the command's line in the list."""
        return " ".join(self.description.split("\n\n")[0].split())

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.handler.__doc__ or self.name)


COMMANDS: dict[str, Command] = {}
"""Every command declared, by name (filled as the command modules are imported)."""


def option(*flags: str, **keywords: Any) -> Callable[[Handler], Handler]:
    """Declare an option (``argparse``'s ``add_argument``) of the handler below it."""
    return _options(Option(flags, keywords))


def _options(*declared: Option) -> Callable[[Handler], Handler]:
    def attach(handler: Handler) -> Handler:
        found: tuple[Option, ...] = getattr(handler, _OPTIONS_ATTRIBUTE, ())
        # decorators run bottom-up: prepend, so options keep the order they are written in
        setattr(handler, _OPTIONS_ATTRIBUTE, (*declared, *found))
        return handler

    return attach


def exclusive(*members: Option) -> Callable[[Handler], Handler]:
    """Options of which at most one may be given."""
    return _options(Option((), {}, members))


def command(name: str) -> Callable[[Handler], Handler]:
    """Register the handler below as the command ``name`` with the options declared under
    this line; ValueError when the name is taken twice."""

    def register(handler: Handler) -> Handler:
        if name in COMMANDS and COMMANDS[name].handler is not handler:
            raise ValueError(f"two commands named {name!r}")
        COMMANDS[name] = Command(name, handler, getattr(handler, _OPTIONS_ATTRIBUTE, ()))
        return handler

    return register


def limit(default: int) -> Callable[[Handler], Handler]:
    """``--limit N``: at most N rows (0: all)."""
    return option(
        "--limit",
        type=options.count,
        default=default,
        metavar="N",
        help=f"at most N (0: all; default {default})",
    )


def domains(default: int) -> Callable[[Handler], Handler]:
    """``--domains N``: the N domains with the most dropped pages."""
    return option(
        "--domains",
        type=options.count,
        default=default,
        metavar="N",
        help=f"show the N domains with the most dropped pages (0: all; default {default})",
    )
