"""The request side's memory at scale (issue 45): what a long crawl keeps per URL is bounded,
and small."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from scrapy import Request
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler

from simhash_filter.crawl.heap_trim import ARENA_MAX
from simhash_filter.crawl.requests import held
from simhash_filter.crawl.requests.fingerprinter import RuleFingerprinter
from simhash_filter.crawl.requests.held import HeldRequests
from simhash_filter.crawl.requests.request_filter import RequestFilter
from simhash_filter.urls.sampling import is_sampled

H = "site.example"


def _unsampled(template: str, rate: int = 20) -> str:
    return next(template.format(k) for k in range(100) if not is_sampled(template.format(k), rate))


def _callback(response: object) -> None:
    """A spider callback a held request keeps."""


def test_skipped_requests_are_held_whole_up_to_a_bound_then_by_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(held, "WHOLE_REQUESTS", 3)
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    crawler.stats.open_spider()  # type: ignore[union-attr]
    extension = RequestFilter.from_crawler(crawler)
    dupefilter = RuleFingerprinter(extension.book, RequestFingerprinter())
    owns = []
    for k in range(10):  # ten tracking variants skipped (their forms were seen)
        request = Request(
            _unsampled(f"http://{H}/p/{k}?utm_source=x{{}}"), callback=_callback, meta={"k": k}
        )
        extension.request_scheduled(request)  # as the engine and the scheduler do
        dupefilter.fingerprint(request)
        extension.request_dropped(request)
        owns.append(extension.book.form_of(request).form.own)
    assert len(extension._held) == 10
    assert extension._held.whole_held == 3
    first = extension._held.pop(owns[0])
    assert first is not None
    assert first.callback is _callback
    assert first.meta["k"] == 0
    last = extension._held.pop(owns[9])  # held by its URL: made again from it
    assert last is not None
    assert last.url == owns[9]
    assert last.callback is None
    assert extension._held.pop(owns[9]) is None  # no longer held


def test_the_held_requests_are_bounded() -> None:
    requests = HeldRequests(limit=5, whole=2)
    taken = [requests.hold(f"http://{H}/p/{k}", Request(f"http://{H}/p/{k}")) for k in range(8)]
    assert taken == [True] * 5 + [False] * 3
    assert len(requests) == 5
    assert requests.whole_held == 2
    assert requests.pop(f"http://{H}/p/0") is not None
    assert requests.whole_held == 1
    assert requests.hold(f"http://{H}/p/9", Request(f"http://{H}/p/9"))  # room again: whole
    assert requests.whole_held == 2


def test_the_add_on_adds_the_heap_trim() -> None:
    from scrapy.settings import Settings

    from simhash_filter import Addon
    from simhash_filter.crawl.heap_trim import HeapTrim

    settings = Settings()
    Addon().update_settings(settings)
    assert "simhash_filter.crawl.heap_trim.HeapTrim" in settings.getdict("EXTENSIONS")
    off = Settings({"SIMHASH_FILTER_ENABLED": False})
    Addon().update_settings(off)
    assert HeapTrim.__name__ not in str(off.getdict("EXTENSIONS"))


def test_the_add_on_lowers_the_items_per_response_unless_the_project_sets_them() -> None:
    """Scrapy makes CONCURRENT_ITEMS tasks a response, alive while its item waits in the
    filter's pipeline: the add-on lowers the default, never a project's own value."""
    from scrapy.settings import Settings

    from simhash_filter import Addon
    from simhash_filter.crawl.addon import ITEMS_PER_RESPONSE

    default = Settings()
    assert default.getint("CONCURRENT_ITEMS") > ITEMS_PER_RESPONSE
    Addon().update_settings(default)
    assert default.getint("CONCURRENT_ITEMS") == ITEMS_PER_RESPONSE
    project = Settings()
    project.set("CONCURRENT_ITEMS", 200, priority="project")
    Addon().update_settings(project)
    assert project.getint("CONCURRENT_ITEMS") == 200
    off = Settings({"SIMHASH_FILTER_ENABLED": False})
    Addon().update_settings(off)
    assert off.getint("CONCURRENT_ITEMS") == Settings().getint("CONCURRENT_ITEMS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_heap_is_trimmed_every_interval_while_the_spider_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from twisted.internet import defer, task, threads

    from simhash_filter.crawl import heap_trim

    assert heap_trim.malloc_trim() is not None  # glibc: the call exists and runs
    calls: list[object] = []
    monkeypatch.setattr(
        threads, "deferToThread", lambda job: calls.append(job) or defer.succeed(None)
    )
    crawler = get_crawler(settings_dict={"SIMHASH_FILTER_DATABASE_URL": "sqlite:///unused.db"})
    crawler.stats.open_spider()  # type: ignore[union-attr]
    clock = task.Clock()
    extension = heap_trim.HeapTrim(crawler, interval=30.0, clock=clock)
    extension.spider_opened()
    assert calls == []  # not at once
    clock.advance(30.0)
    clock.advance(30.0)
    assert calls == [heap_trim.malloc_trim, heap_trim.malloc_trim]
    assert crawler.stats.get_value("simhash_filter/memory/trims") == 2  # type: ignore[union-attr]
    extension.spider_closed()
    clock.advance(90.0)
    assert len(calls) == 2


_ARENAS_OF_EIGHT_THREADS = """
import ctypes, os, sys, threading
from simhash_filter.crawl.heap_trim import cap_arenas
capped = cap_arenas() if sys.argv[1] == "cap" else False
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
barrier = threading.Barrier(9)
def allocate() -> None:
    libc.malloc(1000)  # the thread's arena, made at its first allocation
    barrier.wait()
    barrier.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads:
    t.start()
barrier.wait()  # all eight alive, each allocated
libc.malloc_stats()  # one "Arena N:" block an arena, on stderr
barrier.wait()
for t in threads:
    t.join()
print(capped)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("how", "most"), [("cap", ARENA_MAX), ("free", 9)])
def test_the_crawl_process_allocates_from_few_arenas(how: str, most: int) -> None:
    """Eight threads allocating at once: glibc gives each an arena of its own, unless capped
    (``cap_arenas``, which the heap trim calls when the crawl's extensions are made)."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS_OF_EIGHT_THREADS, how],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    arenas = done.stderr.count("Arena ")
    assert done.stdout.strip() == str(how == "cap")
    assert arenas == most if how == "cap" else arenas > ARENA_MAX
