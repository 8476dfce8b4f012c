"""trafilatura's trailing-title removal in one pass instead of one child count a title.

trafilatura (``main_extractor._extract`` and, in the ``precision`` pass,
``prune_unwanted_sections``) removes a body's trailing titles with
``while len(body) > 0 and body[-1].tag in ...: delete_element(body[-1], keep_tail=False)``.
lxml's ``len`` counts an element's children one by one, so a page ending in n titles costs
n²/2 steps: a 1 MB page of 10,000 headings spent 1.1 s in each of the two loops (bench
``bench_hostile``, kind ``headings``). :func:`drop_trailing` walks the trailing run once from
the end and removes the same elements in the same order. Everything else is trafilatura's
text, line by line, calling its module's own names (so the other replacements, fast_xpath
and link_density, still apply).

That holds for one text of trafilatura: :func:`install` replaces nothing unless
``trafilatura/main_extractor.py`` hashes as reviewed (:data:`REVIEWED_MAIN_EXTRACTOR`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from .reviewed import is_reviewed

__all__ = ["REVIEWED_MAIN_EXTRACTOR", "drop_trailing", "install", "installed", "uninstall"]

logger = logging.getLogger(__name__)

REVIEWED_MAIN_EXTRACTOR = "08371cfa8748062900cc54bc985491be81efc614cef18069ab54ad98a498c620"
"""sha256 of ``trafilatura/main_extractor.py`` as reviewed (trafilatura 2.3.1): the two
functions below are its ``prune_unwanted_sections`` and ``_extract`` with the trailing-title
loops replaced by :func:`drop_trailing`."""


def _main_extractor() -> Any:
    import trafilatura.main_extractor

    return trafilatura.main_extractor


_m = _main_extractor()


def drop_trailing(parent: Any, tags: Collection[str]) -> None:
    """Remove ``parent``'s last children while their tag is in ``tags``, tails and all."""
    run = []
    for child in parent.iterchildren(reversed=True):
        if child.tag not in tags:
            break
        run.append(child)
    for child in run:
        _m.delete_element(child, keep_tail=False)


def prune_unwanted_sections(
    tree: Any, potential_tags: set[str], options: Any, keep_teasers: bool = False
) -> Any:
    """trafilatura's, the trailing titles removed by :func:`drop_trailing`."""
    favor_precision = options.focus == "precision"
    tree = _m.prune_unwanted_nodes(tree, _m.OVERALL_DISCARD_XPATH, with_backup=True)
    if "graphic" not in potential_tags:
        tree = _m.prune_unwanted_nodes(tree, _m.DISCARD_IMAGE_ELEMENTS)
    if options.focus != "recall":
        if not keep_teasers:
            tree = _m.prune_unwanted_nodes(tree, _m.TEASER_DISCARD_XPATH)
        if favor_precision:
            tree = _m.prune_unwanted_nodes(tree, _m.PRECISION_DISCARD_XPATH)
    density = _m.delete_by_link_density
    for _ in range(2):
        tree = density(tree, "div", backtracking=True, favor_precision=favor_precision)
        tree = density(tree, "list", backtracking=False, favor_precision=favor_precision)
        tree = density(tree, "p", backtracking=False, favor_precision=favor_precision)
    if "table" in potential_tags or favor_precision:
        boilerplate_tables = [
            elem for elem in tree.iter("table") if _m.link_density_test_tables(elem) is True
        ]
        for elem in boilerplate_tables:
            _m.delete_element(elem, keep_tail=False)
    if favor_precision:
        drop_trailing(tree, ("head",))
        tree = density(tree, "head", backtracking=False, favor_precision=True)
        tree = density(tree, "quote", backtracking=False, favor_precision=True)
    _m.strip_tags(tree, "span", *(() if "ref" in potential_tags else ("ref",)))
    return tree


def _extract(tree: Any, options: Any) -> tuple[Any, str, set[str]]:
    """trafilatura's, the trailing titles removed by :func:`drop_trailing`."""
    potential_tags = set(_m.TAG_CATALOG)
    if options.tables is True:
        potential_tags.update(["table", "td", "th", "tr"])
    if options.images is True:
        potential_tags.add("graphic")
    if options.links is True:
        potential_tags.add("ref")
    result_body = _m.Element("body")
    for expr in _m.BODY_XPATH:
        subtree = next((s for s in expr(tree) if s is not None), None)
        if subtree is None:
            continue
        subtree = _m.prune_unwanted_sections(subtree, potential_tags, options)
        if len(subtree) == 0:
            continue
        ptest = subtree.xpath("//p//text()")
        factor = 1 if options.focus == "precision" else 3
        if not ptest or len("".join(ptest)) < options.min_extracted_size * factor:
            potential_tags.add("div")
        _m.LOGGER.debug(sorted(potential_tags))
        subelems = subtree.xpath(".//*")
        tags = {e.tag for e in subelems}
        if tags == {"lb"} or (
            subtree.tag == "div"
            and "div" in potential_tags
            and tags <= _m.INLINE_FORMATTABLE | {"lb"}
        ):
            subelems = [subtree]
        lead, start = None, len(result_body)
        if subelems != [subtree] and _m.text_chars_test(subtree.text):
            lead = _m.Element("p")
            lead.text = subtree.text
            lead = _m.process_node(lead, options)
        for elem in subelems:
            if elem.getroottree().getroot() is result_body:
                continue
            tag, tail = elem.tag, elem.tail
            processed_elem = _m.handle_textelem(elem, potential_tags, options)
            if processed_elem is not None:
                result_body.append(processed_elem)
                if elem.getroottree().getroot() is not result_body:
                    elem.tag = "done"
            if (
                tag in _m.REBUILT_BLOCKS
                and _m.text_chars_test(tail)
                and (processed_elem is None or processed_elem.tail is None)
            ):
                tail_elem = _m.Element("p")
                tail_elem.text = tail
                if _m.process_node(tail_elem, options) is not None:
                    result_body.append(tail_elem)
        drop_trailing(result_body, _m.NOT_AT_THE_END)
        if sum(e.tag != "graphic" for e in result_body) > 1:
            _m.LOGGER.debug(_m.trim(str(expr)))
            if lead is not None:
                result_body.insert(start, lead)
            break
    temp_text = " ".join(result_body.itertext()).strip()
    return result_body, temp_text, potential_tags


_REPLACED: tuple[tuple[str, Any], ...] = (
    ("prune_unwanted_sections", prune_unwanted_sections),
    ("_extract", _extract),
)
_ORIGINALS: dict[str, Any] = {name: getattr(_m, name) for name, _ in _REPLACED}


def install() -> bool:
    """Replace the two functions when trafilatura is the reviewed one; True when the
    replacements are in place. Idempotent."""
    if installed():
        return True
    if not is_reviewed(_m, REVIEWED_MAIN_EXTRACTOR):
        logger.debug("trafilatura.main_extractor differs from the reviewed text: kept")
        return False
    for name, replacement in _REPLACED:
        if getattr(_m, name, None) is _ORIGINALS[name]:
            setattr(_m, name, replacement)
    return True


def uninstall() -> None:
    """Put trafilatura's own functions back."""
    for name, replacement in _REPLACED:
        if getattr(_m, name, None) is replacement:
            setattr(_m, name, _ORIGINALS[name])


def installed() -> bool:
    """True when the replacements are in place."""
    return _m._extract is _extract
