"""A crawl that cannot start (a bad setting, a store that cannot be opened): one error line.

A crawl that cannot check its pages does not start (a full disk, a database made under
another spec, a server down: docs/design.md, Failures). Scrapy stops a crawl whose item
pipeline fails to open and exits with status 1, which is the outcome wanted; it also logs
two records a person does not need: asyncio's "Task exception was never retrieved" with
the whole start-up traceback (Scrapy re-raises the error for asyncio to log), and
``CoreStats``' ``AssertionError`` (Scrapy closes a spider whose ``spider_opened`` never
came). :func:`report_start_failure` logs the error once, as one line that names the
database (without its password) and the reason, and leaves exactly those two records out.
A bad ``SIMHASH_FILTER_*`` value (:func:`crawl_config`) is reported the same way: one line
that names the setting, exit status 1.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from scrapy.extensions.corestats import CoreStats

from simhash_filter.crawl.config import Config, SettingsError
from simhash_filter.store.records import StoreError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["crawl_config", "report_start_failure"]

logger = logging.getLogger(__name__)

_REPORTED = "_simhash_filter_reported"
"""Attribute set on an error once :func:`report_start_failure` has logged it."""


def crawl_config(settings: BaseSettings) -> Config:
    """:meth:`Config.from_settings` for a component of the crawl: a bad setting stops the
    crawl with one ERROR line naming it (not asyncio's "Task exception was never
    retrieved" and a traceback)."""
    try:
        return Config.from_settings(settings)
    except SettingsError as exc:
        report_start_failure(exc)
        raise


def report_start_failure(error: BaseException) -> None:
    """Log ``error``, which stops the crawl at start, once: a :class:`StoreError` or a
    :class:`SettingsError` as one line (its message is meant for a person), anything
    else with its traceback."""
    if getattr(error, _REPORTED, False):
        return
    if isinstance(error, SettingsError):
        logger.error("simhash_filter: the crawl cannot start: %s", error)
    elif isinstance(error, StoreError):
        logger.error("simhash_filter: the crawl cannot start (%s): %s", type(error).__name__, error)
    else:
        logger.error("simhash_filter: the crawl cannot start", exc_info=error)
    setattr(error, _REPORTED, True)
    _add_filter(logging.getLogger("asyncio"), _ReportedError())
    _add_filter(logging.getLogger("scrapy.utils.signal"), _StatsOfUnopenedSpider())


def _add_filter(target: logging.Logger, log_filter: logging.Filter) -> None:
    if not any(type(f) is type(log_filter) for f in target.filters):
        target.addFilter(log_filter)


class _ReportedError(logging.Filter):
    """Leaves out a record of an error :func:`report_start_failure` logged already."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not getattr(error, _REPORTED, False)


class _StatsOfUnopenedSpider(logging.Filter):
    """Leaves out ``CoreStats.spider_closed``'s ``AssertionError`` for a spider it never
    saw opened (its start time is unset)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, AssertionError) or not isinstance(record.args, Mapping):
            return True
        receiver = record.args.get("receiver")
        stats = getattr(receiver, "__self__", None)
        return not (
            isinstance(stats, CoreStats)
            and getattr(receiver, "__name__", None) == "spider_closed"
            and stats.start_time is None
        )
