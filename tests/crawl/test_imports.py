"""What the crawl process imports: the page workers extract and sign, so it never loads
trafilatura nor NumPy (12 MiB of its memory: issue 45)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support import SiteServer, build_site, run_scrapy
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


def test_the_crawl_side_does_not_import_numpy(tmp_path: Path) -> None:
    # what the crawl process runs on a page's signature: the store's check-and-add of a
    # sketch (band keys), the match rule's verify against a stored copy, an exact signature
    code = (
        "import sys\n"
        "from simhash_filter import Addon, NearDuplicatePipeline\n"
        "from simhash_filter.core.content_key import content_key, exact_signature\n"
        "from simhash_filter.core.signature import MatchRule\n"
        "from simhash_filter.store import FingerprintStore, StoreOptions\n"
        "import simhash_filter.crawl.pages.filter, simhash_filter.crawl.pages.middleware\n"
        "import simhash_filter.crawl.requests.request_filter, simhash_filter.page.pool\n"
        "import simhash_filter.crawl.heap_trim, simhash_filter.crawl.pages.canonical_first\n"
        "from simhash_filter import Fingerprinter\n"
        "signature = exact_signature(content_key(b'<p>a page</p>'))\n"
        "MatchRule().verify(signature.sketch, signature.sketch)\n"
        f"url = 'sqlite:///{tmp_path / 'dedup.db'}'\n"
        "store = FingerprintStore.open(url, StoreOptions(spec=Fingerprinter().spec))\n"
        "fingerprint, sketch = signature.fingerprint, signature.sketch\n"
        "store.check_and_add('https://a.example/', fingerprint, sketch=sketch)\n"
        "verdict = store.check_and_add('https://b.example/', fingerprint, sketch=sketch)\n"
        "assert not verdict.admitted\n"
        "store.close()\n"
        "print('numpy' in sys.modules)\n"
    )
    assert python_prints(code) == "False"


def test_a_crawl_process_never_loads_numpy_nor_trafilatura(tmp_path: Path) -> None:
    # the pages are signed in the workers, whose replies carry no NumPy object
    extensions = {"crawler.extensions.StatsFile": 500, "support.loaded_modules.LoadedModules": 0}
    with SiteServer(build_site()) as site:
        result = run_scrapy(
            ["crawl", "site", "-a", f"start_url={site.url('/')}"],
            cwd=tmp_path,
            settings={
                "SIMHASH_FILTER_DATABASE_URL": f"sqlite:///{tmp_path / 'dedup.db'}",
                "DOWNLOAD_DELAY": 0,
                "EXTENSIONS": json.dumps(extensions),
            },
            pythonpath=[Path(__file__).parents[1]],
        )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["simhash_filter/dropped"] > 0, result.log[-3000:]  # copies verified
    assert result.stats["test/loaded/numpy"] == 0
    assert result.stats["test/loaded/trafilatura"] == 0


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
