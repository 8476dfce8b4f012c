"""The command line's two errors: ``CommandError`` (exit 1) and ``UsageError`` (exit 2).

A module of their own, so the output can raise them as the commands do without importing
the commands' shared code (:mod:`simhash_filter.cli.common`, which re-exports them)."""

from __future__ import annotations

__all__ = ["CommandError", "UsageError"]


class CommandError(Exception):
    """A problem with what was asked (unknown URL, unreadable file): exit 1, one line."""


class UsageError(Exception):
    """The arguments do not fit together: exit 2 with the command's usage."""
