"""fast_xpath: each of trafilatura's XPaths translated to Python gives exactly the XPath's node
list (same nodes, same order) on pages built here from the expressions' own vocabulary."""

from __future__ import annotations

import hashlib
import importlib
import re
import re._constants as C
import re._parser as P
import types
from typing import Any

import pytest
import trafilatura.settings
import trafilatura.xpaths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree, html

import simhash_filter.page.extract  # noqa: F401 (installs the translations, as the workers do)
from simhash_filter.page import fast_xpath
from simhash_filter.page.extract import extract_text
from simhash_filter.page.fast_xpath import FastXPath, Unsupported, compile_xpath

EXTRACTION_XPATHS = {
    "BODY_XPATH": [0, 1, 2, 3, 4],
    "COMMENTS_XPATH": [0, 1, 2, 3],
    "REMOVE_COMMENTS_XPATH": [0],
    "REMOVE_COMMENTS_AND_LISTS_XPATH": [0],
    "RAW_TREE_PRUNE_XPATH": [0, 1],
    "OVERALL_DISCARD_XPATH": [0, 1],
    "TEASER_DISCARD_XPATH": [0],
    "PRECISION_DISCARD_XPATH": [0, 1],
    "DISCARD_IMAGE_ELEMENTS": [0],
    "COMMENTS_DISCARD_XPATH": [0, 1, 2],
    "BASIC_CLEAN_XPATH": [0],
}
"""The lists trafilatura's main-text extraction runs, every entry translated (the baseline's
cleaning, a single XPath, as a list of one)."""

REVIEWED_DIGEST = "9f0e3da5e0a611f0c260c14fbd39305af5e544140fa88747e7ac56099fc8048d"
"""sha256 of the translated expressions' texts (``NAME[i]`` and the path, in order; the
singles last, by name) as last reviewed with trafilatura 2.3.1."""

NS = {"re": fast_xpath.REGEXP_NS}


def _translated() -> list[tuple[str, FastXPath]]:
    singles = [(name, getattr(trafilatura.settings, name)) for name in fast_xpath.SINGLES]
    return [
        (f"{name}[{i}]", expression)
        for name, expressions in fast_xpath._xpath_lists(trafilatura.xpaths)
        for i, expression in enumerate(expressions)
        if isinstance(expression, FastXPath)
    ] + [(name, expression) for name, expression in singles if isinstance(expression, FastXPath)]


TRANSLATED = _translated()
IDS = [name for name, _ in TRANSLATED]


def test_every_extraction_xpath_runs_in_python() -> None:
    installed = fast_xpath.installed()
    for name, indices in EXTRACTION_XPATHS.items():
        assert set(indices) <= set(installed.get(name, [])), name


def test_the_translated_texts_are_the_reviewed_ones() -> None:
    """A new trafilatura that changes an expression must be reviewed here: its translation
    is re-derived from the text (or it falls back to the XPath), and the differential tests
    below build their pages from the new text; update the digest once they pass."""
    digest = hashlib.sha256(
        "\n".join(f"{name}\n{x.path}" for name, x in TRANSLATED).encode()
    ).hexdigest()
    assert digest == REVIEWED_DIGEST


def _sample(items: Any, k: int) -> str:
    """The ``k``-th string a parsed regex describes (alternatives and classes by ``k``)."""
    out = []
    for op, av in items:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op is C.IN:
            chars = [chr(a) for o, a in av if o is C.LITERAL] or [" "]
            out.append(chars[k % len(chars)])
        elif op is C.BRANCH:
            out.append(_sample(av[1][k % len(av[1])], k // len(av[1])))
        elif op is C.SUBPATTERN:
            out.append(_sample(av[3], k))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, high, inner = av
            out.append(_sample(inner, k) * (low if k % 2 == 0 or high == low else low + 1))
        elif op is C.CATEGORY:
            out.append(" ")
        elif op is C.NOT_LITERAL or op is C.ANY:
            out.append("#")
    return "".join(out)  # anchors and lookarounds: zero width


def _samples(pattern: str) -> set[str]:
    """Strings the regex finds, one for each of its alternatives (and each class member)."""
    found = {_sample(P.parse(pattern), k) for k in range(64)}
    return {text for text in found if re.search(pattern, text)}


# The vocabulary of the expressions: tags, attribute names, literals and regexes.
_PATHS = [x.path for _, x in TRANSLATED]
CONTAINERS = sorted(
    {t for p in _PATHS for t in re.findall(r"(?:self::|\.//)([a-z0-9]+)", p)} | {"p", "span"}
)
TAGS = [*CONTAINERS, "a", "li", "h1", "b"]
ATTRIBUTES = sorted({a for p in _PATHS for a in re.findall(r"@([\w-]+)", p)} | {"title"})
LITERALS = sorted({s for p in _PATHS for s in re.findall(r"'([^']*)'", p)} - {"", "i"})
REGEXES = sorted({m for p in _PATHS for m in re.findall(r"re:test\([^,]+,\s*'([^']*)'", p)})
FRAGMENTS = sorted({w for text in LITERALS for w in re.findall(r"[A-Za-z_-]{3,}", text)})
VALUES = sorted(set(LITERALS) | set(FRAGMENTS) | {s for rx in REGEXES for s in _samples(rx)})


def _variants(value: str) -> list[str]:
    """Near misses of a value: other cases, inside a class list, letters after it."""
    return [value.upper(), value.capitalize(), f"x {value} y", f"{value}ary", f"{value}s"]


def _pinned_page() -> Any:
    """Every literal, regex sample and fragment of the expressions in every attribute (in
    id and class on every tag), its near misses in id and class, each with a nested match;
    some with an h1 inside; attribute pairs in both orders."""
    root = html.fromstring("<html><body></body></html>")
    body, count = root[0], 0

    def add(tag: str, attribute: str, value: str) -> None:
        nonlocal count
        count += 1
        outer = etree.SubElement(body, tag)
        outer.set(attribute, value)
        inner = etree.SubElement(outer, TAGS[count % len(TAGS)])
        inner.set(attribute, value)
        if count % 3 < 2:  # an h1 as a child, or a grandchild, of the outer element
            etree.SubElement(inner if count % 3 else outer, "h1").text = "title"

    for value in VALUES:
        for attribute in ATTRIBUTES:
            tags = CONTAINERS if attribute in ("id", "class") else [TAGS[count % len(TAGS)]]
            for tag in tags:
                add(tag, attribute, value)
        for variant in _variants(value):
            for attribute in ("id", "class"):
                add(CONTAINERS[count % len(CONTAINERS)], attribute, variant)
    for first, second in [("id", "class"), ("class", "id"), ("id", "style"), ("style", "id")]:
        for value in ("hidden", "comment-list", "reply-x", "x bottom", "link", "cookie"):
            for tag in ("div", "section", "span", "p", "ol", "ul", "list"):
                for pair in ((value, "plain"), ("plain", value)):
                    element = etree.SubElement(body, tag)
                    element.set(first, pair[0])
                    element.set(second, pair[1])
    return root


PINNED = _pinned_page()


def _assert_same(name: str, expression: FastXPath, root: Any, contexts: int = 8) -> None:
    elements = list(root.iter("*"))
    for context in [root, *elements[1 :: max(1, len(elements) // contexts)]]:
        expected = expression.original(context)
        assert expression(context) == expected, (name, context.tag, len(expected))


@pytest.mark.parametrize(("name", "expression"), TRANSLATED, ids=IDS)
def test_the_pinned_page_gives_the_xpath_nodes(name: str, expression: FastXPath) -> None:
    assert expression.original(PINNED), f"{name} selects nothing on the pinned page"
    _assert_same(name, expression, PINNED)


def _all_nodes(path: str) -> str:
    """``path`` without its positional ``[1]``s: every node they choose from."""
    return re.sub(r"\(\s*(\.//.*?)\)\[1\]", r"\1", path, flags=re.S).replace("][1]", "]")


@pytest.mark.parametrize(
    ("name", "expression"), [(n, x) for n, x in TRANSLATED if "[1]" in x.path], ids=lambda v: str(v)
)
def test_positional_expressions_choose_from_the_same_nodes(
    name: str, expression: FastXPath
) -> None:
    path = _all_nodes(expression.path)
    assert "[1]" not in path
    _assert_same(name, FastXPath(etree.XPath(path, namespaces=NS), compile_xpath(path)), PINNED)


@pytest.mark.parametrize(
    "path",
    [
        ".//*[contains(translate(@class, 'eeo', 'ABC'), 'A')]",
        ".//*[translate(@id, 'abcdefghijklmnopqrstuvwxyz-', '')]",
        ".//*[contains(translate(@id, 'COMENT', 'coment'), 'comment')]",
        ".//*[translate(@id, 'abcdefghijklmnopqrstuvwxyz', '') = '-']",
        ".//*[contains('comment-list-x', @class)]",
        ".//*[starts-with(@style|@id, 'hid')]",
        ".//*[@role and not(@id)]",
        ".//*[(@id or @class) and not(self::div)]",
        ".//*[re:test(@class, 'BOTTOM|Link', 'i')]",
        ".//*[self::div or @id='comments']",
        ".//div[@class][1]",
        "(.//*[@id])[1]|.//h1|(.//ol)[1]",
        ".//*[not(.//h1) and @class]",
    ],
)
def test_other_constructs_give_the_xpath_nodes(path: str) -> None:
    _assert_same(path, FastXPath(etree.XPath(path, namespaces=NS), compile_xpath(path)), PINNED)


_VALUES = st.one_of(
    st.sampled_from(VALUES).flatmap(lambda v: st.sampled_from([v, *_variants(v)])),
    st.sampled_from(REGEXES).flatmap(
        lambda rx: st.from_regex(
            rx,
            alphabet=st.characters(
                min_codepoint=32, max_codepoint=0x17F, exclude_categories=("Cc", "Cs")
            ),
        )
    ),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map(" ".join),
)
_NODE = st.tuples(
    st.sampled_from(TAGS),
    st.lists(st.tuples(st.sampled_from(ATTRIBUTES), _VALUES), max_size=3),
)


@st.composite
def _pages(draw: st.DrawFn) -> Any:
    root = html.fromstring("<html><body></body></html>")
    elements = [root[0]]
    for tag, attributes in draw(st.lists(_NODE, min_size=1, max_size=40)):
        parent = elements[draw(st.integers(0, len(elements) - 1))]
        element = etree.SubElement(parent, tag)
        for attribute, value in attributes:
            if attribute not in element.attrib:
                element.set(attribute, value)
        elements.append(element)
    return root


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pages())
def test_generated_pages_give_the_xpath_nodes(page: Any) -> None:
    for name, expression in TRANSLATED:
        _assert_same(name, expression, page)


def test_an_element_tree_and_xpath_variables_go_to_the_xpath() -> None:
    _, expression = TRANSLATED[0]
    document = etree.ElementTree(PINNED)
    assert expression(document) == expression.original(document)


@pytest.mark.parametrize(
    "path",
    [
        "//div",
        ".//div[position()=2]",
        ".//*[2]",
        ".//div[@id!='x']",
        ".//div[count(p) > 1]",
        ".//div/p",
        ".//*[contains(., 'x')]",
        ".//div[re:replace(@id, 'a', 'g', 'b')]",
        ".//div[1][@id]",
        ".//div[re:test(@id, $pattern)]",
    ],
)
def test_what_is_not_translated_is_refused(path: str) -> None:
    with pytest.raises(Unsupported):
        compile_xpath(path)


def test_the_baseline_s_cleaning_runs_in_python_where_it_is_read() -> None:
    baseline = importlib.import_module("trafilatura.baseline")  # trafilatura.baseline: a function
    expression = baseline.BASIC_CLEAN_XPATH
    assert isinstance(expression, FastXPath)
    assert expression is trafilatura.settings.BASIC_CLEAN_XPATH
    fast_xpath.uninstall()
    try:
        assert isinstance(baseline.BASIC_CLEAN_XPATH, etree.XPath)
        assert "BASIC_CLEAN_XPATH" not in fast_xpath.installed()
    finally:
        fast_xpath.install()
    assert fast_xpath.installed()["BASIC_CLEAN_XPATH"] == [0]


def test_install_keeps_what_it_cannot_translate_and_uninstall_restores() -> None:
    kept = etree.XPath(".//div[count(p) > 1]")
    translated = etree.XPath(".//div[re:test(@id, '^a')]", namespaces=NS)
    module = types.SimpleNamespace(REGEXP_NS=fast_xpath.REGEXP_NS, SOME_XPATH=[kept, translated])
    assert fast_xpath.install(module) == {"SOME_XPATH": [1]}
    assert fast_xpath.install(module) == {"SOME_XPATH": [1]}  # idempotent
    assert module.SOME_XPATH[0] is kept
    assert isinstance(module.SOME_XPATH[1], FastXPath)
    assert module.SOME_XPATH[1].original is translated
    fast_xpath.uninstall(module)
    assert [kept, translated] == module.SOME_XPATH


def test_another_regex_namespace_is_left_alone() -> None:
    module = types.SimpleNamespace(
        REGEXP_NS="urn:other", SOME_XPATH=[etree.XPath(".//div[@id='a']")]
    )
    assert fast_xpath.install(module) == {}


def test_extraction_is_the_same_with_and_without_the_translations() -> None:
    from crawler.articles import HARBOUR_BRIDGE, WASTE_SORTING_ZH
    from crawler.testsite import blog_template, news_template, portal_template, zh_news_template

    pages = [
        news_template(HARBOUR_BRIDGE, date="12 March 2024"),
        blog_template(HARBOUR_BRIDGE, date="x", comments=True),
        portal_template(None, date="6 April 2024"),
        zh_news_template(WASTE_SORTING_ZH, date="2024年3月12日", charset="utf-8"),
    ]
    fast = [extract_text(page) for page in pages]
    fast_xpath.uninstall()
    try:
        slow = [extract_text(page) for page in pages]
    finally:
        fast_xpath.install()
    assert fast == slow
    assert all(text for text in fast[:2])


_PATTERNS = [re.compile(rx, re.UNICODE) for rx in REGEXES] + [re.compile("BOTTOM|Link", re.I)]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(_PATTERNS),
    st.lists(st.one_of(_VALUES, st.text(max_size=8)), min_size=1, max_size=12),
)
def test_a_memo_answers_as_the_search_does(pattern: re.Pattern[str], values: list[str]) -> None:
    """Each value asked twice (a miss, then a hit), and once more after the memo started
    afresh: always the search's answer."""
    matches = fast_xpath.Matches(pattern)
    for value in values + values:
        assert matches[value] is (pattern.search(value) is not None)
    matches.clear()
    assert [matches[v] for v in values] == [pattern.search(v) is not None for v in values]


def test_a_memo_is_bounded_and_keeps_no_long_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_xpath, "MEMO_ENTRIES", 8)
    matches = fast_xpath.Matches(re.compile("menu"))
    long = "x " * fast_xpath.MEMO_CHARS + "menu"
    assert matches[long] is True
    assert long not in matches
    for n in range(20):
        assert matches[f"menu-{n}" if n % 2 else f"item-{n}"] is bool(n % 2)
        assert len(matches) <= 8


def test_expressions_testing_one_regex_share_its_memo() -> None:
    memos = {
        id(v) for _, x in TRANSLATED for v in _constants(x) if isinstance(v, fast_xpath.Matches)
    }
    patterns = {
        (v.pattern.pattern, v.pattern.flags)
        for _, x in TRANSLATED
        for v in _constants(x)
        if isinstance(v, fast_xpath.Matches)
    }
    assert len(memos) == len(patterns) > 1


def _constants(expression: FastXPath) -> list[Any]:
    """The constants the translation's functions read (``_c0``...)."""
    select = expression._select
    functions = [select, *(c.cell_contents for c in select.__closure__ or ())]
    found = []
    for function in functions:
        if isinstance(function, list):
            functions.extend(function)
        elif isinstance(function, types.FunctionType):
            found += [v for k, v in function.__globals__.items() if k.startswith("_c")]
    return found
