"""The ``simhash-filter`` command line (``python -m simhash_filter`` runs it too)."""

from __future__ import annotations

from simhash_filter.cli.app import main

__all__ = ["main"]
