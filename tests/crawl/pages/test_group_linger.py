"""GroupCommit's linger: a transaction waits for the pages on their way, and its verdicts
are those of one check-and-add a page in arrival order. The event loop is driven by hand
(``asyncio.sleep(0)`` yields one step); no test waits on a clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simhash_filter.crawl.pages.group_commit import MAX_BATCH, GroupCommit
from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.records import PageRow, Verdict

FAR = 3600.0  # a bound the tests never reach


class Recording:
    """A real store that records the size of every transaction."""

    def __init__(self, store: FingerprintStore) -> None:
        self.store = store
        self.batches: list[int] = []

    def add_many(self, rows: Iterable[PageRow], *, wait: float | None = None) -> list[Verdict]:
        rows = list(rows)
        self.batches.append(len(rows))
        return self.store.add_many(rows, wait=wait)

    def supersede(self, page: PageRow, kept: Any) -> Any:
        return self.store.supersede(page, kept)

    def mark_canonical(self, page: PageRow, kept: Any) -> bool:
        return self.store.mark_canonical(page, kept)

    def was_seen(self, url: str) -> bool:
        return self.store.was_seen(url)

    def close(self) -> None:
        self.store.close()


def _rows(n: int) -> list[PageRow]:
    # pages 0, 2, 4... share a fingerprint (copies of page 0); odd ones are far from it
    return [
        PageRow(f"https://x.example/{i}", 0 if i % 2 == 0 else (1 << 64) - 1 - i, 100)
        for i in range(n)
    ]


async def _steps(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _store(tmp_path: Path, name: str) -> Recording:
    return Recording(
        FingerprintStore.open(f"sqlite:///{tmp_path / name}", StoreOptions(spec="test"))
    )


def test_a_transaction_waits_while_more_pages_are_coming(tmp_path: Path) -> None:
    store = _store(tmp_path, "a.db")
    coming = [True]
    commits = GroupCommit(lambda: store, linger=FAR, more_coming=lambda: coming[0])
    rows = _rows(3)

    async def crawl() -> list[Verdict]:
        first = asyncio.ensure_future(commits.check_and_add(rows[0]))
        await _steps()
        assert commits.waiting == 1  # lingering: the other pages are on their way
        second = asyncio.ensure_future(commits.check_and_add(rows[1]))
        await _steps()
        assert commits.waiting == 2
        coming[0] = False  # the last page leaves the page work: its check comes now
        third = asyncio.ensure_future(commits.check_and_add(rows[2]))
        return list(await asyncio.gather(first, second, third))

    verdicts = asyncio.run(crawl())
    assert store.batches == [3]
    alone = _store(tmp_path, "b.db")
    assert verdicts == [
        alone.store.check_and_add(r.url, r.fingerprint, text_length=100) for r in rows
    ]
    store.close()
    alone.close()


def test_wake_ends_the_linger_when_no_page_is_coming(tmp_path: Path) -> None:
    store = _store(tmp_path, "a.db")
    coming = [True]
    commits = GroupCommit(lambda: store, linger=FAR, more_coming=lambda: coming[0])

    async def crawl() -> Verdict:
        page = asyncio.ensure_future(commits.check_and_add(_rows(1)[0]))
        await _steps()
        assert commits.waiting == 1
        coming[0] = False  # a page left the page work without a check (no text)
        commits.wake()
        return await page

    asyncio.run(crawl())
    assert store.batches == [1]
    store.close()


def test_a_full_batch_does_not_wait(tmp_path: Path) -> None:
    store = _store(tmp_path, "a.db")
    coming = [True]
    commits = GroupCommit(lambda: store, linger=FAR, more_coming=lambda: coming[0])
    rows = _rows(MAX_BATCH + 1)

    async def crawl() -> None:
        pages = [asyncio.ensure_future(commits.check_and_add(r)) for r in rows]
        await asyncio.wait(pages[:MAX_BATCH])  # the full batch went; the last page lingers
        assert not pages[-1].done()
        assert commits.waiting == 1
        coming[0] = False
        commits.wake()
        await pages[-1]

    asyncio.run(crawl())
    assert store.batches == [MAX_BATCH, 1]
    store.close()


def test_nothing_coming_no_wait(tmp_path: Path) -> None:
    store = _store(tmp_path, "a.db")
    commits = GroupCommit(lambda: store, linger=FAR, more_coming=lambda: False)

    async def crawl() -> None:
        await commits.check_and_add(_rows(1)[0])
        await commits.check_and_add(_rows(2)[1])

    asyncio.run(crawl())
    assert store.batches == [1, 1]
    store.close()
