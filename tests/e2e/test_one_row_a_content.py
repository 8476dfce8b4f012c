"""Issue 42 on the aliasing site (crawler/testsite/aliasing.py, a small generated corpus): the
``-O`` feed of a default ``scrapy crawl site`` holds each content once, none lost, with the
pipeline alone and with the middleware, the request filter on and off."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from support.crawl import run_scrapy

from crawler.testsite import SiteServer
from crawler.testsite.aliasing import AliasingSite, GroundTruth, generated_corpus

pytestmark = pytest.mark.slow  # real `scrapy crawl` subprocesses


def target_of(url: str) -> str:
    """Path and query of ``url``, percent-escapes decoded (the ground truth's form)."""
    split = urlsplit(url)
    target = unquote(split.path or "/")
    return f"{target}?{unquote(split.query)}" if split.query else target


@pytest.fixture(scope="module")
def site() -> AliasingSite:
    return AliasingSite(generated_corpus(8, notes=1, docs=1, translations=2))


@pytest.fixture(scope="module")
def truth(site: AliasingSite) -> GroundTruth:
    return site.ground_truth()


@pytest.fixture
def server(site: AliasingSite) -> Iterator[SiteServer]:
    served = site.serve()
    try:
        yield served
    finally:
        served.stop()


@pytest.mark.parametrize("middleware", [False, True], ids=["pipeline", "middleware"])
@pytest.mark.parametrize("requests", [True, False], ids=["request-filter", "no-request-filter"])
def test_the_feed_has_one_row_a_content_and_loses_none(
    site: AliasingSite,
    truth: GroundTruth,
    server: SiteServer,
    tmp_path: Path,
    middleware: bool,
    requests: bool,
) -> None:
    result = run_scrapy(
        ["crawl", "site", "-a", f"start_url={server.url('/')}"],
        cwd=tmp_path,
        settings={
            "DOWNLOAD_DELAY": 0,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'dedup.db'}",
            "SIMHASH_FILTER_MIDDLEWARE": middleware,
            "SIMHASH_FILTER_REQUEST_FILTER": requests,
        },
    )
    assert result.returncode == 0, result.log[-5000:]
    assert result.stats.get("finish_reason") == "finished", result.log[-5000:]
    rows = Counter(site.content_of(target_of(item["url"])) for item in result.items)
    assert None not in rows
    twice = {content: n for content, n in rows.items() if n > 1}
    assert twice == {}, twice
    assert set(rows) == set(truth.reachable)  # none lost
    assert result.stats.get("simhash_filter/superseded", 0) == 0
