"""The aliasing site of issue 29 (crawler/testsite/aliasing.py): its ground truth holds.

The benchmark's figures (duplicate fetches, lost pages, kept canonicals) are only as good as
the site's ground truth, so these check that every linked URL is served and names its content,
that aliases show one content and content parameters another, that some pages can only be
reached through a content parameter, and that the canonical hints (right and wrong) are sent.
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter

import pytest

from crawler.testsite import Page, SiteServer
from crawler.testsite.aliasing import AliasingSite, GroundTruth, generated_corpus


@pytest.fixture(scope="module")
def site() -> AliasingSite:
    return AliasingSite(generated_corpus(40, notes=3, docs=3, translations=4))


@pytest.fixture(scope="module")
def truth(site: AliasingSite) -> GroundTruth:
    return site.ground_truth()


def _targets(truth: GroundTruth, content: str) -> set[str]:
    return {url for url, cid in truth.urls.items() if cid == content}


def test_every_content_is_reachable_and_every_link_served(
    site: AliasingSite, truth: GroundTruth
) -> None:
    assert truth.reachable == set(site.contents)
    assert set(truth.canonical) == set(site.contents)
    for url in truth.urls:
        assert site.page(url) is not None, url
    for cid, canonical in truth.canonical.items():
        assert truth.urls[canonical] == cid  # the canonical URL is itself linked
    assert len(truth.urls) > 3 * len(truth.reachable)  # mostly aliases


def test_each_alias_kind_shows_the_article(site: AliasingSite) -> None:
    plan = site.plans[0]  # index 0 has print by path, AMP suffix, replies, mirror, gclid
    url = f"/news/{plan.slug}/"
    aliases = [
        url.rstrip("/"),
        url + "index.html",
        url.replace("/news/", "/News/").upper(),
        url + "?utm_source=x&utm_medium=y&utm_campaign=z",
        url + "?fbclid=abc",
        url + "?gclid=abc",
        url + "?sid=abc",
        url + "?PHPSESSID=abc",
        url + ";jsessionid=ABC",
        url + "?replytocom=3",
        url + "?print=1",
        "/print" + url,
        "/amp" + url,
        url + "amp/",
        "/mirror" + url,
        url + "?lang=en",
    ]
    for alias in aliases:
        assert site.content_of(alias) == "article/0", alias
    assert site.content_of("/?utm_source=newsletter") == "home"
    assert site.content_of("/index.html") == "home"
    assert site.content_of("/blog/?page=1") == "listing/1"


def test_content_parameters_choose_other_content(site: AliasingSite) -> None:
    translated = next(p for p in site.plans if p.translation is not None)
    url = f"/news/{translated.slug}/"
    assert site.content_of(url + "?lang=de") == f"article/{translated.index}/de"
    notes = {site.content_of(f"/?p={site.note_id(n)}") for n in range(3)}
    assert notes == {"note/0", "note/1", "note/2"}
    assert site.content_of("/blog/?page=2") == "listing/2"
    assert {site.content_of(f"/view.php?id={n}") for n in (1, 2, 3)} == {"doc/0", "doc/1", "doc/2"}
    for missing in ("/?p=1", "/blog/?page=99", "/view.php?id=99", "/news/nope/"):
        assert site.content_of(missing) is None
    german = site.page(url + "?lang=de")
    english = site.page(url)
    assert german is not None
    assert english is not None
    assert german.body != english.body


def test_some_pages_only_behind_a_content_parameter(truth: GroundTruth) -> None:
    """Dropping ``p``, ``id`` or ``page`` from every URL would lose these pages."""
    for cid, parameter in (("note/0", "p="), ("doc/0", "id="), ("listing/2", "page=")):
        targets = _targets(truth, cid)
        assert targets
        assert all(parameter in target for target in targets), (cid, targets)


def test_links_carry_every_alias_kind(truth: GroundTruth) -> None:
    text = "\n".join(truth.urls)
    for marker in (
        "utm_source=",
        "fbclid=",
        "gclid=",
        "?sid=",
        "PHPSESSID=",
        ";jsessionid=",
        "replytocom=",
        "print=1",
        "/print/",
        "/amp/",
        "/mirror/news/",
        "/News/",
        "index.html",
        "lang=de",
        "lang=en",
        "?page=",
        "/?p=",
        "view.php?id=",
    ):
        assert marker in text, marker
    assert any(re.fullmatch(r"/news/[^/?;]+", url) for url in truth.urls)  # no trailing slash


def test_canonical_hints_right_and_wrong(site: AliasingSite) -> None:
    hints = Counter(c.hint for c in site.contents.values())
    assert {"link", "header", "og", "none"} <= set(hints)
    articles = [c for cid, c in site.contents.items() if cid.startswith("article/")]
    to_home = [c for c in articles if c.declared == "/"]
    to_other = [
        c
        for c in articles
        if c.declared not in {None, "/", c.canonical} and not c.id.endswith("/de")
    ]
    to_english = [c for c in articles if c.id.endswith("/de") and c.declared != c.canonical]
    assert to_home
    assert to_other
    assert to_english
    assert sum(c.declared == c.canonical for c in articles) > len(articles) // 2


def test_served_over_loopback_with_link_headers(site: AliasingSite) -> None:
    header_article = next(c for c in site.contents.values() if c.hint == "header")
    og_article = next(c for c in site.contents.values() if c.hint == "og")
    server = site.serve()
    try:
        with urllib.request.urlopen(server.url(header_article.canonical)) as response:
            assert response.headers["Link"] == (
                f'<{server.base_url}{header_article.declared}>; rel="canonical"'
            )
            assert b'rel="canonical"' not in response.read()
        with urllib.request.urlopen(server.url(og_article.canonical + "?utm_source=x")) as r:
            assert f'property="og:url" content="{server.base_url}'.encode() in r.read()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url("/view.php?id=999"))
        assert missing.value.code == 404
    finally:
        server.stop()
    assert server.requested[-1] == "/view.php?id=999"


def test_mapping_sites_still_ignore_the_query() -> None:
    with SiteServer({"/a.html": Page(b"<html>a</html>")}) as server:
        response = urllib.request.urlopen(server.url("/a.html?utm_source=x"))
        assert response.read() == b"<html>a</html>"
        response.close()
