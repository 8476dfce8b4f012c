"""trafilatura's link-density tests without the ElementPath calls, giving the same answers.

trafilatura (``htmlprocessing.link_density_test``, ``link_density_test_tables`` and
``is_paragraph_listing``) finds an element's links with ``element.findall(".//ref")`` and
its images with ``element.find(".//graphic")``. lxml runs those through its Python
ElementPath module (``lxml/_elementpath.py``: the path tokenized, a cached selector chain
of generators), whose ``.//tag`` step is by definition ``iterdescendants(tag)`` from the
element (``prepare_descendant``). The tests run for every ``div``, ``list``, ``p``, ``head``
and ``quote`` of the tree, several times a pass (``delete_by_link_density``); the step
called directly is the same list of the same nodes, ~2.5x cheaper a call. Their
``collect_link_info`` reads each link's ``text_content()`` (an XPath ``string()`` a link);
a link with no child node but its text reads it as ``.text`` (:func:`text_content`).
Everything else is trafilatura's text, line by line.

That holds for one text of trafilatura: :func:`install` replaces nothing unless
``trafilatura/htmlprocessing.py`` hashes as reviewed (:data:`REVIEWED_HTMLPROCESSING`); a
new trafilatura keeps its own functions until it is reviewed again.
"""

from __future__ import annotations

import logging
from typing import Any

from lxml.html import HtmlElement

from .reviewed import is_reviewed

__all__ = [
    "REVIEWED_HTMLPROCESSING",
    "collect_link_info",
    "install",
    "installed",
    "is_paragraph_listing",
    "link_density_test",
    "link_density_test_tables",
    "text_content",
    "uninstall",
]

logger = logging.getLogger(__name__)

REVIEWED_HTMLPROCESSING = "321b9f064ef0f27e2a1d6601fe7f150f54a69ad059f016def843d7886e19f100"
"""sha256 of ``trafilatura/htmlprocessing.py`` as reviewed (trafilatura 2.3.1): the four
functions below are its ``collect_link_info``, ``link_density_test``,
``link_density_test_tables`` and ``is_paragraph_listing`` with the ElementPath calls and the
links' ``text_content()`` replaced."""


def _htmlprocessing() -> Any:
    import trafilatura.htmlprocessing

    return trafilatura.htmlprocessing


def _main_extractor() -> Any:
    import trafilatura.main_extractor

    return trafilatura.main_extractor


_hp = _htmlprocessing()


def _links(element: Any) -> list[Any]:
    """``element.findall(".//ref")``: the ``ref`` descendants in document order."""
    return list(element.iterdescendants("ref"))


def text_content(element: Any) -> str:
    """``element.text_content()`` (XPath ``string()``: all the text below it), read as
    ``element.text`` when it has no child node but its text: a link's text, most of the time,
    without an XPath evaluation. Any other element (children, or not an ``HtmlElement``,
    whose ``text_content`` raises) goes to the method."""
    if len(element) == 0 and isinstance(element, HtmlElement):
        return element.text or ""
    return element.text_content()  # type: ignore[no-any-return]


def collect_link_info(links_xpath: list[Any]) -> tuple[int, int, int, list[str]]:
    """trafilatura's ``collect_link_info``: (characters, non-empty links, short ones, texts)."""
    mylist = [e for e in (_hp.trim(text_content(elem)) for elem in links_xpath) if e]
    lengths = list(map(len, mylist))
    # longer strings impact recall in favor of precision
    shortelems = sum(1 for length in lengths if length < 10)
    return sum(lengths), len(mylist), shortelems, mylist


def is_paragraph_listing(links_xpath: list[Any]) -> bool:
    """trafilatura's ``is_paragraph_listing``: every link alone in its paragraph."""
    for link in links_xpath:
        parent = link.getparent()
        if parent is None or parent.tag != "p" or len(_links(parent)) > 1:
            return False
    return True


def link_density_test(element: Any, favor_precision: bool = False) -> tuple[bool, bool]:
    """trafilatura's ``link_density_test``: (boilerplate, short with links)."""
    links_xpath = _links(element)
    if not links_xpath:
        return False, False
    # preserve image containers (``element.find(".//graphic")``)
    if next(element.iterdescendants("graphic"), None) is not None:
        return False, False
    text = _hp.trim(element.text_content())
    # shortcut
    if len(links_xpath) == 1:
        len_threshold = 10 if favor_precision else 100
        link_text = _hp.trim(text_content(links_xpath[0]))
        if len(link_text) > len_threshold and len(link_text) > len(text) * 0.9:
            return True, False
    if element.tag == "p":
        limitlen = 60 if element.getnext() is None else 30
    elif element.getnext() is None:
        limitlen = 300
    else:
        limitlen = 100
    elemlen = len(text)
    if elemlen < limitlen:
        linklen, elemnum, shortelems, _ = collect_link_info(links_xpath)
        if elemnum == 0:
            return True, False
        _hp.LOGGER.debug(
            "list link text/total: %s/%s – short elems/total: %s/%s",
            linklen,
            elemlen,
            shortelems,
            elemnum,
        )
        return linklen > elemlen * 0.8 or (elemnum > 1 and shortelems / elemnum > 0.8), True
    if len(links_xpath) > 4:
        linklen, elemnum, _, _ = collect_link_info(links_xpath)
        if (
            linklen > len(text) * _hp.LINK_FARM_RATIO
            and linklen < 100 * elemnum
            and not is_paragraph_listing(links_xpath)
        ):
            return True, False
    return False, False


def link_density_test_tables(element: Any) -> bool:
    """trafilatura's ``link_density_test_tables``: a table rich in links."""
    links_xpath = _links(element)
    if not links_xpath:
        return False
    elemlen = len(_hp.trim(element.text_content()))
    if elemlen < 200:
        return False
    linklen, _, _, _ = collect_link_info(links_xpath)
    _hp.LOGGER.debug("table link text: %s / total: %s", linklen, elemlen)
    return bool(linklen > 0.8 * elemlen if elemlen < 1000 else linklen > 0.5 * elemlen)


_REPLACED: tuple[tuple[str, Any], ...] = (
    ("collect_link_info", collect_link_info),
    ("link_density_test", link_density_test),
    ("link_density_test_tables", link_density_test_tables),
    ("is_paragraph_listing", is_paragraph_listing),
)
_ORIGINALS: dict[str, Any] = {name: getattr(_hp, name) for name, _ in _REPLACED}


def _modules() -> tuple[Any, Any]:
    return _hp, _main_extractor()


def install() -> bool:
    """Replace the three functions (where trafilatura's modules name them) when trafilatura
    is the reviewed one; True when the replacements are in place. Idempotent."""
    if installed():
        return True
    if not is_reviewed(_hp, REVIEWED_HTMLPROCESSING):
        logger.debug("trafilatura.htmlprocessing differs from the reviewed text: kept")
        return False
    for module in _modules():
        for name, replacement in _REPLACED:
            if getattr(module, name, None) is _ORIGINALS[name]:
                setattr(module, name, replacement)
    return True


def uninstall() -> None:
    """Put trafilatura's own functions back."""
    for module in _modules():
        for name, replacement in _REPLACED:
            if getattr(module, name, None) is replacement:
                setattr(module, name, _ORIGINALS[name])


def installed() -> bool:
    """True when the replacements are in place."""
    return _hp.link_density_test is link_density_test
