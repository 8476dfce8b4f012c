"""What the crawl process imports: the page workers extract, so it never loads trafilatura."""

from __future__ import annotations

import sys
from pathlib import Path

from support.helpers import python_prints


def test_the_crawl_side_does_not_import_the_extraction() -> None:
    code = (
        "import sys\n"
        "import simhash_filter\n"
        "from simhash_filter import Addon, NearDuplicatePipeline\n"
        "import simhash_filter.crawl.pages.filter, simhash_filter.crawl.pages.middleware\n"
        "import simhash_filter.crawl.requests.request_filter, simhash_filter.page.pool\n"
        "print(' '.join(m for m in ('trafilatura', 'simhash_filter.page.extract')"
        " if m in sys.modules))\n"
    )
    assert python_prints(code) == ""


def test_the_thread_path_imports_the_extraction_when_it_extracts() -> None:
    from simhash_filter import Fingerprinter
    from simhash_filter.page.limits import DEFAULT_MAX_BYTES
    from simhash_filter.page.work import work_page

    html = "<html><body><article><p>" + "A page of words to sign here. " * 30 + "</p></article>"
    work = work_page(Fingerprinter(), "https://a.example/", None, html, max_bytes=DEFAULT_MAX_BYTES)
    assert work.signature is not None
    assert "simhash_filter.page.extract" in sys.modules


def test_a_sqlite_store_loads_neither_the_orm_nor_postgresqls_dialect(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from simhash_filter import Fingerprinter\n"
        "from simhash_filter.store import FingerprintStore, StoreOptions\n"
        "import simhash_filter.crawl.pages.filter, simhash_filter.crawl.requests.request_filter\n"
        "fp = Fingerprinter()\n"
        "signature = fp.sign('words of a page to check and add here ' * 10)\n"
        f"url = 'sqlite:///{tmp_path / 'dedup.db'}'\n"
        "store = FingerprintStore.open(url, StoreOptions(spec=fp.spec))\n"
        "store.check_and_add('https://a.example/', signature.fingerprint)\n"
        "store.close()\n"
        "print(' '.join(m for m in sys.modules"
        " if m.startswith(('sqlalchemy.orm', 'sqlalchemy.dialects.postgresql'))))\n"
    )
    assert python_prints(code) == ""
