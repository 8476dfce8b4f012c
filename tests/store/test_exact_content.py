"""Exact-content signatures (pages with too little text) through every write path: an exact
copy is a DUPLICATE of the first, a page differing by one word is NEW, and the decision is
the same in Python and in the PostgreSQL function (no new SQL: the key rides in the sketch)."""

from __future__ import annotations

import pytest

from simhash_filter.core.content_key import content_key, exact_signature
from simhash_filter.core.signature import MatchRule, PageSignature
from simhash_filter.store import FingerprintStore, StoreOptions, VerdictKind

SPEC = "test;exact-content"
PAGE = b"<html><body><h1>Gallery</h1><p>Twelve photos of the harbour.</p></body></html>"


@pytest.mark.parametrize(
    ("backend", "write_path"),
    [
        ("sqlite", "sqlalchemy"),
        ("postgresql", "sqlalchemy"),
        ("postgresql", "pg-function"),
        ("postgresql", "pg-pipeline"),
    ],
)
def test_an_exact_copy_is_a_duplicate_on_every_write_path(
    request: pytest.FixtureRequest, backend: str, write_path: str
) -> None:
    url = str(request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url"))
    page = exact_signature(content_key(PAGE))
    other = exact_signature(content_key(PAGE.replace(b"Twelve", b"Eleven")))
    with FingerprintStore.open(
        url, StoreOptions(spec=SPEC, rule=MatchRule.for_distance(64), write_path=write_path)
    ) as store:

        def check(page_url: str, signature: PageSignature) -> VerdictKind:
            return store.check_and_add(
                page_url, signature.fingerprint, text_length=0, sketch=signature.sketch
            ).kind

        assert check("https://x.example/gallery", page) is VerdictKind.NEW
        assert check("https://x.example/gallery?ref=rss", page) is VerdictKind.DUPLICATE
        assert check("https://x.example/other", other) is VerdictKind.NEW
        assert check("https://x.example/gallery", page) is VerdictKind.UNCHANGED
        drops = [(d.url, d.duplicate_of_url, d.similarity) for d in store.duplicates()]
        assert drops == [("https://x.example/gallery?ref=rss", "https://x.example/gallery", 1.0)]


def test_a_database_of_the_previous_extraction_says_what_differs(sqlite_url: str) -> None:
    """The extraction is part of the fingerprint spec: a database whose HTML pages were
    fingerprinted by the extraction before ``extract=`` was named refuses to open, naming it."""
    from simhash_filter import Fingerprinter
    from simhash_filter.store import SchemeMismatchError

    spec = Fingerprinter().spec
    previous = ";".join(part for part in spec.split(";") if not part.startswith("extract="))
    FingerprintStore.open(sqlite_url, StoreOptions(spec=previous)).close()
    with pytest.raises(SchemeMismatchError) as info:
        FingerprintStore.open(sqlite_url, StoreOptions(spec=spec))
    assert "extract=trafilatura-precision-fast" in str(info.value)
    assert "simhash-filter import" in str(info.value)
