"""A crawl learns its hosts' templates and never drops a page for one (issue 43).

The pages are tests/support/template_site.py's: newspaper stories whose extraction is the
site's SECTIONS list, beside stories whose extraction is right (what the template is learned
from). ``drain`` waits for the background write of the blocks learned, so the next page sees
them (a real crawl sees them a little later)."""

from __future__ import annotations

from typing import Any

from support.helpers import filter_stats, make_pipeline, run
from support.template_site import filler_story, story

from simhash_filter.crawl.pages.pipeline import NearDuplicate

HOST = "http://news.example"
MIN_PAGES = 3


def _feed(pipeline: Any, pages: list[tuple[str, str]]) -> list[str]:
    """Process the pages in order; the outcome of each: "kept" or "dropped"."""
    outcomes = []
    for url, html in pages:
        try:
            run(pipeline.process_item({"url": url, "html": html}))
            outcomes.append("kept")
        except NearDuplicate:
            outcomes.append("dropped")
        pipeline.filter.templates.drain()
    return outcomes


def _fillers(site: str, first: int, n: int = MIN_PAGES) -> list[tuple[str, str]]:
    return [
        (f"{HOST}/{site}/filler-{i}", filler_story(site, f"Filler {i}", i))
        for i in range(first, first + n)
    ]


def _stories(site: str, *seeds: int) -> list[tuple[str, str]]:
    return [(f"{HOST}/{site}/story-{s}", story(site, f"Story {s}", s)) for s in seeds]


def test_two_stories_whose_extraction_is_the_menu_are_kept_once_it_is_learned(
    sqlite_url: str,
) -> None:
    pipeline = make_pipeline(sqlite_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    try:
        assert _feed(pipeline, _fillers("Courier", 0)) == ["kept"] * MIN_PAGES
        assert _feed(pipeline, _stories("Courier", 1, 2)) == ["kept", "kept"]
        assert _feed(pipeline, _stories("Courier", 1)) == ["kept"]  # its URL again: unchanged
        stats = filter_stats(pipeline)
        assert stats["template/only"] == 3  # signed by their bytes: passed as "no_text"
        assert "dropped" not in stats
    finally:
        run(pipeline.close_spider())


def test_without_templates_the_second_story_is_dropped(sqlite_url: str) -> None:
    """What the crawl did before (the same pages, templates off)."""
    pipeline = make_pipeline(sqlite_url, TEMPLATE_MIN_PAGES=0)
    try:
        _feed(pipeline, _fillers("Courier", 0))
        assert _feed(pipeline, _stories("Courier", 1, 2)) == ["kept", "dropped"]
    finally:
        run(pipeline.close_spider())


def test_a_young_hosts_stories_are_kept_before_its_template_is_known(sqlite_url: str) -> None:
    pipeline = make_pipeline(sqlite_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    try:
        assert _feed(pipeline, _stories("Courier", 1, 2)) == ["kept", "kept"]
        assert filter_stats(pipeline)["boilerplate"] == 1
    finally:
        run(pipeline.close_spider())


def test_a_host_whose_template_changes_mid_crawl(sqlite_url: str) -> None:
    """The old template learned; the new one's first stories are judged as a young host's
    (the old template covers little of them), then the new one is learned too."""
    pipeline = make_pipeline(sqlite_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    try:
        _feed(pipeline, _fillers("Courier", 0))
        assert _feed(pipeline, _stories("Courier 2025", 1, 2)) == ["kept", "kept"]
        assert filter_stats(pipeline)["boilerplate"] == 1
        _feed(pipeline, _fillers("Courier 2025", 10))
        assert _feed(pipeline, _stories("Courier 2025", 3, 4)) == ["kept", "kept"]
        assert filter_stats(pipeline)["template/only"] == 2
    finally:
        run(pipeline.close_spider())


def test_two_crawlers_on_postgresql_learn_one_template(pg_url: str) -> None:
    """What one crawler learned, the other uses: its stories are left the template out."""
    first = make_pipeline(pg_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    second = make_pipeline(pg_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    try:
        _feed(first, _fillers("Courier", 0))
        assert _feed(second, _stories("Courier", 1, 2)) == ["kept", "kept"]
        assert filter_stats(second)["template/only"] == 2
        assert "template/only" not in filter_stats(first)
    finally:
        run(first.close_spider())
        run(second.close_spider())


def _story_beside_menu(site: str, seed: int) -> str:
    """A story whose extraction is right but holds the site's SECTIONS list too (inside the
    ``<article>``): signed with the list while the template is not known, without it after."""
    page = filler_story(site, f"Story {seed}", seed)
    page = page.replace('</article>\n<div class="sections">', '<div class="sections">')
    return page.replace("</ul></div>\n<footer>", "</ul></div></article>\n<footer>")


def _copy_across_learning(url: str) -> None:
    """Issue 42: the page kept while its host was young was signed with the menu, its copy
    met after the template was learned without it (20 simhash bits apart on the aliasing
    site): the copy is judged as signed then, and dropped. (The crawl that kept the page
    signs it again once the template is known; one that did not, or forgot it, cannot.)"""
    pipeline = make_pipeline(url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    pipeline.filter.young.max_chars = 0  # kept by another crawler: not remembered here
    page = _story_beside_menu("Courier", 7)
    assert "SECTIONS" in page.split("</article>")[0]
    try:
        assert _feed(pipeline, [(f"{HOST}/Courier/story-7", page)]) == ["kept"]
        _feed(pipeline, _fillers("Courier", 0))
        copy = [(f"{HOST}/amp/Courier/story-7", page)]
        assert _feed(pipeline, copy) == ["dropped"]
        stats = filter_stats(pipeline)
        assert stats["template/unstripped"] == 1
        assert stats["template/stripped"] >= 1
    finally:
        run(pipeline.close_spider())


def test_a_copy_of_a_page_kept_before_the_template_was_known_is_dropped(
    sqlite_url: str,
) -> None:
    _copy_across_learning(sqlite_url)


def test_a_copy_across_the_templates_learning_on_postgresql(pg_url: str) -> None:
    _copy_across_learning(pg_url)


def test_a_story_beside_the_menu_is_not_a_copy_of_another(sqlite_url: str) -> None:
    """The unstripped check finds copies, not pages of one template: another story beside
    the same menu, met after the template was learned, is kept."""
    pipeline = make_pipeline(sqlite_url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    try:
        assert _feed(pipeline, [(f"{HOST}/Courier/story-7", _story_beside_menu("Courier", 7))])
        _feed(pipeline, _fillers("Courier", 0))
        other = [(f"{HOST}/Courier/story-8", _story_beside_menu("Courier", 8))]
        assert _feed(pipeline, other) == ["kept"]
        assert "template/unstripped" not in filter_stats(pipeline)
    finally:
        run(pipeline.close_spider())


def _view_after_its_copy(url: str) -> None:
    """Issue 42: a view of a page kept while its host was young (its text without the menu:
    another chrome), met after a copy was dropped by the page as signed then, is a copy too:
    the kept page is signed again as its copy was, without the host's template."""
    pipeline = make_pipeline(url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    pipeline.filter.young.max_chars = 0  # kept by another crawler: not remembered here
    page = _story_beside_menu("Courier", 7)
    view = filler_story("Courier", "Story 7", 7).replace(
        '<div class="sections">', '<div class="amp-sidebar">'
    )
    try:
        assert _feed(pipeline, [(f"{HOST}/Courier/story-7", page)]) == ["kept"]
        _feed(pipeline, _fillers("Courier", 0))
        assert _feed(pipeline, [(f"{HOST}/courier/story-7", page)]) == ["dropped"]
        assert _feed(pipeline, [(f"{HOST}/courier/story-7/amp", view)]) == ["dropped"]
        stats = filter_stats(pipeline)
        assert stats["template/unstripped"] == 1
        assert stats["template/signed_again"] == 1
    finally:
        run(pipeline.close_spider())


def test_a_view_met_after_a_copy_across_the_templates_learning_is_dropped(
    sqlite_url: str,
) -> None:
    _view_after_its_copy(sqlite_url)


def test_a_view_after_a_copy_across_the_templates_learning_on_postgresql(pg_url: str) -> None:
    _view_after_its_copy(pg_url)


def _view_of_a_young_page(url: str) -> None:
    """Issue 42: a view of a page kept while its host was young, met after the template is
    known and before any copy: the kept page was signed again by its remembered text without
    the template once it was known, so the view finds it."""
    pipeline = make_pipeline(url, TEMPLATE_MIN_PAGES=MIN_PAGES)
    page = _story_beside_menu("Courier", 7)
    view = filler_story("Courier", "Story 7", 7).replace(
        '<div class="sections">', '<div class="amp-sidebar">'
    )
    try:
        assert _feed(pipeline, [(f"{HOST}/Courier/story-7", page)]) == ["kept"]
        assert pipeline.filter.young.chars > 0  # its text, remembered
        _feed(pipeline, _fillers("Courier", 0))
        assert _feed(pipeline, [(f"{HOST}/Courier/story-7/amp", view)]) == ["dropped"]
        stats = filter_stats(pipeline)
        assert stats["template/signed_again"] >= 1
        assert "template/unstripped" not in stats
        assert pipeline.filter.young.chars == 0  # signed again once, then forgotten
    finally:
        run(pipeline.close_spider())


def test_a_view_of_a_page_kept_while_its_host_was_young_is_dropped(sqlite_url: str) -> None:
    _view_of_a_young_page(sqlite_url)


def test_a_view_of_a_young_page_on_postgresql(pg_url: str) -> None:
    _view_of_a_young_page(pg_url)
