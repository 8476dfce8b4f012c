"""What the crawl process imports: the page workers extract, so it never loads trafilatura."""

from __future__ import annotations

import subprocess
import sys


def test_the_crawl_side_does_not_import_the_extraction() -> None:
    code = (
        "import sys\n"
        "import simhash_filter\n"
        "from simhash_filter import Addon, NearDuplicatePipeline\n"
        "import simhash_filter.crawl.filter, simhash_filter.crawl.middleware\n"
        "import simhash_filter.crawl.request_filter, simhash_filter.page.pool\n"
        "print(' '.join(m for m in ('trafilatura', 'simhash_filter.page.extract')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == ""


def test_the_thread_path_imports_the_extraction_when_it_extracts() -> None:
    from simhash_filter import Fingerprinter
    from simhash_filter.page.limits import DEFAULT_MAX_BYTES
    from simhash_filter.page.work import work_page

    html = "<html><body><article><p>" + "A page of words to sign here. " * 30 + "</p></article>"
    work = work_page(Fingerprinter(), "https://a.example/", None, html, max_bytes=DEFAULT_MAX_BYTES)
    assert work.signature is not None
    assert "simhash_filter.page.extract" in sys.modules
