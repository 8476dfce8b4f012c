"""Short outages are ridden out: a write that meets a PostgreSQL server stopped or
restarting retries with backoff (``outage_retry``) and gets its verdict when the server is
back; past the retry it fails (``StoreUnavailable``), and the writes after it try once each
until one gets through. On a server of the test's own (tests/support/pgserver.py): the
shared one is never stopped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support.pgserver import PrivateServer

from crawler.services import create_pg_database
from simhash_filter.store import FingerprintStore, StoreOptions, StoreUnavailable, VerdictKind
from simhash_filter.store.faults import WaitBounds

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SPEC = "outage-retry-test"
PATHS = ["pg-function", "pg-pipeline", "sqlalchemy"]


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivateServer]:
    with PrivateServer() as server:
        yield server


class Retrying(logging.Handler):
    """Set when the store says it retries a lost or refused connection."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in record.getMessage() and "connection" in record.getMessage():
            self.seen.set()


@pytest.fixture
def retrying() -> Iterator[Retrying]:
    handler = Retrying()
    logger = logging.getLogger("simhash_filter.store")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("write_path", PATHS)
def test_a_restart_the_retry_covers_passes_no_page_unchecked(
    private_pg: PrivateServer, retrying: Retrying, write_path: str
) -> None:
    url = create_pg_database("sf_test", private_pg.url())
    store = FingerprintStore.open(
        url, StoreOptions(spec=SPEC, write_path=write_path, bounds=WaitBounds(5, 60))
    )
    try:
        assert store.check_and_add("https://x.example/before", 0x1234).kind is VerdictKind.NEW
        private_pg.stop()  # every session ends; new ones are refused
        try:
            thread, outcome = in_thread(
                lambda: store.check_and_add("https://x.example/during", 0xFEDC << 40)
            )
            assert retrying.seen.wait(60), "the write did not retry the refused connection"
            assert thread.is_alive()  # ...and is still retrying: the server is down
        finally:
            private_pg.start()
        thread.join(60)
        assert not thread.is_alive()
        assert not isinstance(outcome[0], BaseException), outcome[0]
        assert outcome[0].kind is VerdictKind.NEW  # checked, not passed unchecked
        assert store.lookup("https://x.example/during") is not None
    finally:
        store.close()


def test_past_the_retry_a_write_fails_and_the_next_ones_fail_fast(
    private_pg: PrivateServer, retrying: Retrying
) -> None:
    url = create_pg_database("sf_test", private_pg.url())
    store = FingerprintStore.open(url, StoreOptions(spec=SPEC, bounds=WaitBounds(5, 0.5)))
    try:
        store.check_and_add("https://x.example/before", 0x1234)
        private_pg.stop()
        try:
            with pytest.raises(StoreUnavailable, match="SIMHASH_FILTER_OUTAGE_RETRY"):
                store.check_and_add("https://x.example/1", 0x5678 << 30)
            retrying.seen.clear()
            with pytest.raises(StoreUnavailable):  # the outage goes on: one attempt, no retry
                store.check_and_add("https://x.example/2", 0x9ABC << 30)
            assert not retrying.seen.is_set()
        finally:
            private_pg.start()
        assert store.check_and_add("https://x.example/3", 0xDEF0 << 30).kind is VerdictKind.NEW
        private_pg.stop()  # a new outage: the full retry again (the server was back between)
        try:
            thread, outcome = in_thread(
                lambda: store.check_and_add("https://x.example/4", 0x1357 << 30)
            )
            thread.join(30)
            assert isinstance(outcome[0], StoreUnavailable)
            assert retrying.seen.is_set()
        finally:
            private_pg.start()
    finally:
        store.close()
