"""The page work's input cap, apart from :mod:`.extract` so that the crawl process reads it
without importing trafilatura (the page workers extract; the crawl process never does)."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
"""Bytes handed to trafilatura at most (2 MiB): parsing time grows with the page, and
the main text of a real page sits well within its first two megabytes."""
