"""The command line's two kinds of error, and the exit code each gives."""

from __future__ import annotations


class CommandError(Exception):
    """A problem with what was asked (unknown URL, unreadable file): exit 1, one line."""


class UsageError(Exception):
    """The arguments do not fit together: exit 2 with the command's usage."""
