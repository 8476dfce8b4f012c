"""trafilatura's element-selecting XPaths evaluated in Python, giving the same node lists.

trafilatura finds the article and the boilerplate with module-level lists of XPath objects
(``trafilatura.xpaths``) such as ``.//*[self::div or self::section][re:test(@id, '...') or
contains(@class, '...')]``. libxml2 evaluates each ``self::`` test as a node set and lxml runs
every EXSLT ``re:test`` as a call back into Python, for each candidate element: most of an
extraction's CPU. The same selection is one walk of the tree in Python (lxml picks the tags
in C), with the same regular expressions compiled the way lxml compiles them, each one's
answer kept per attribute value (:class:`Matches`: a page repeats its class strings).

:func:`compile_xpath` reads an expression's text and translates the dialect trafilatura
writes (``.//`` steps, ``self::``, attribute tests, ``contains``, ``starts-with``,
``translate``, ``re:test``, ``not``, ``[1]``, unions) into a Python function; anything else
raises :class:`Unsupported`, and :func:`install` then keeps the real XPath. An attribute union
(``@id|@class``) reads the attribute written first in the page, as XPath's document order
does. :func:`install` replaces, in place, the entries it can translate in trafilatura's lists
(every trafilatura module shares them) and the baseline's cleaning XPath (:data:`SINGLES`);
:func:`uninstall` puts the originals back.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

__all__ = [
    "SINGLES",
    "FastXPath",
    "Matches",
    "Unsupported",
    "compile_xpath",
    "install",
    "installed",
    "uninstall",
]

REGEXP_NS = "http://exslt.org/regular-expressions"
"""The EXSLT regular-expression namespace trafilatura binds to the ``re`` prefix."""

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>'[^']*'|"[^"]*")
    | (?P<number>\d+)
    | (?P<punct>\.//|//|::|!=|[()\[\],|=*.])
    | (?P<attr>@[A-Za-z_][\w.\-]*)
    | (?P<name>[A-Za-z_][\w.\-]*(?::[A-Za-z_][\w.\-]*)?)
    )""",
    re.VERBOSE,
)


class Unsupported(ValueError):
    """The expression uses XPath this module does not translate."""


def _tokenize(path: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(path):
        if path[position:].isspace():
            break
        match = _TOKEN.match(path, position)
        if match is None or match.lastgroup is None:
            raise Unsupported(f"unexpected text at {position}: {path[position : position + 20]!r}")
        tokens.append((match.lastgroup, match.group(match.lastgroup)))
        position = match.end()
    return tokens


@dataclass
class _Step:
    """``.//tag[predicates]``: the Python condition on ``el`` and the tags to walk."""

    tags: tuple[str, ...]
    conditions: list[str] = field(default_factory=list)
    first_child: bool = False
    """``[1]`` after the predicates: only the first such child of each parent."""


@dataclass
class _Path:
    step: _Step
    first: bool = False
    """``(path)[1]``: only the first node in document order."""


class _Parser:
    """Recursive descent over the tokens; conditions come out as Python expressions on
    ``el`` and the local attribute values (``_a0``...), with constants in ``names``."""

    def __init__(self, path: str) -> None:
        self.tokens = _tokenize(path)
        self.position = 0
        self.names: dict[str, Any] = {}
        self.literals: dict[str, str] = {}
        self.attributes: dict[str, str] = {}

    # tokens
    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        token_kind, token = self.peek()
        if (value is not None and token != value) or (kind is not None and token_kind != kind):
            raise Unsupported(f"expected {value or kind}, found {token!r}")
        self.position += 1
        return token

    def at(self, value: str) -> bool:
        return self.peek()[1] == value and self.peek()[0] != "string"

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.names)}"
        self.names[name] = value
        return name

    def attribute(self, name: str) -> str:
        return self.attributes.setdefault(name, f"_a{len(self.attributes)}")

    # paths
    def union(self) -> list[_Path]:
        paths = [self.path_expression()]
        while self.at("|"):
            self.take("|")
            paths.append(self.path_expression())
        if self.peek()[0] != "end":
            raise Unsupported(f"trailing {self.peek()[1]!r}")
        return paths

    def path_expression(self) -> _Path:
        if not self.at("("):
            return _Path(self.step())
        self.take("(")
        step = self.step()
        self.take(")")
        self.take("[")
        self.take("1", kind="number")
        self.take("]")
        return _Path(step, first=True)

    def step(self) -> _Step:
        self.take(".//")
        kind, tag = self.peek()
        if tag != "*" and kind != "name":
            raise Unsupported(f"step {tag!r}")
        self.take()
        step = _Step(() if tag == "*" else (tag,))
        while self.at("["):
            if step.first_child:
                raise Unsupported("a predicate after [1]")
            self.take("[")
            if self.peek()[0] == "number":
                self.take("1", kind="number")
                step.first_child = True
            elif not step.tags and not step.conditions and (tags := self.self_tests()):
                step.tags = tags
            else:
                step.conditions.append(self.boolean(self.or_expression()))
            self.take("]")
        return step

    def self_tests(self) -> tuple[str, ...]:
        """``self::a or self::b ...`` filling a whole predicate: the tags, else ()."""
        start, tags = self.position, []
        while self.peek()[1] == "self" and self.peek(1)[1] == "::":
            self.position += 2
            tags.append(self.take(kind="name"))
            if not self.at("or"):
                break
            self.take("or")
        if tags and self.at("]"):
            return tuple(tags)
        self.position = start
        return ()

    # predicates: (python expression, type) with type "bool", "str" or "attrs"
    def or_expression(self) -> tuple[str, str]:
        return self.joined("or", self.and_expression)

    def and_expression(self) -> tuple[str, str]:
        return self.joined("and", self.comparison)

    def joined(self, operator: str, term: Callable[[], tuple[str, str]]) -> tuple[str, str]:
        """``term`` (``operator`` ``term``)*: one term as it is, more as a boolean of them."""
        terms = [term()]
        while self.at(operator):
            self.take(operator)
            terms.append(term())
        if len(terms) == 1:
            return terms[0]
        return "(" + f" {operator} ".join(self.boolean(t) for t in terms) + ")", "bool"

    def comparison(self) -> tuple[str, str]:
        left = self.primary()
        if not self.at("="):
            return left
        self.take("=")
        literal = self.literal(self.primary())
        code, kind = left
        if kind == "str":
            return f"({code} == {self.constant(literal)})", "bool"
        if kind != "attrs" or "," in code:  # a node set of one attribute: it exists and equals
            raise Unsupported("a comparison other than @attribute or a string = 'literal'")
        return f"({self.attribute(code)} == {self.constant(literal)})", "bool"

    def primary(self) -> tuple[str, str]:
        kind, token = self.peek()
        if kind == "string":
            self.take()
            code = self.constant(token[1:-1])
            self.literals[code] = token[1:-1]
            return code, "str"
        if kind == "attr":
            names = [self.take()[1:]]
            while self.at("|") and self.peek(1)[0] == "attr":
                self.take("|")
                names.append(self.take()[1:])
            return ",".join(names), "attrs"
        if token == "(":
            self.take("(")
            inner = self.or_expression()
            self.take(")")
            return inner
        if token == ".//":
            self.take(".//")
            tag = self.take(kind="name")
            return f"(next(el.iterdescendants({tag!r}), None) is not None)", "bool"
        if token == "self" and self.peek(1)[1] == "::":
            self.position += 2
            return f"(el.tag == {self.take(kind='name')!r})", "bool"
        if kind == "name" and self.peek(1)[1] == "(":
            return self.function(token)
        raise Unsupported(f"unexpected {token!r}")

    def arguments(self) -> list[tuple[str, str]]:
        self.take("(")
        arguments = [self.or_expression()]
        while self.at(","):
            self.take(",")
            arguments.append(self.or_expression())
        self.take(")")
        return arguments

    def function(self, name: str) -> tuple[str, str]:
        self.take()
        arguments = self.arguments()
        if name == "not" and len(arguments) == 1:
            return f"(not {self.boolean(arguments[0])})", "bool"
        if name in ("contains", "starts-with") and len(arguments) == 2:
            text, part = (self.string(argument) for argument in arguments)
            if name == "contains":
                return f"({part} in {text})", "bool"
            return f"{text}.startswith({part})", "bool"
        if name == "translate" and len(arguments) == 3:
            table = _translation(self.literal(arguments[1]), self.literal(arguments[2]))
            return f"{self.string(arguments[0])}.translate({self.constant(table)})", "str"
        if name == "re:test" and len(arguments) in (2, 3):
            flags = self.literal(arguments[2]) if len(arguments) == 3 else ""
            # as lxml's EXSLT module compiles it (lxml/extensions.pxi, _ExsltRegExp._compile)
            pattern = re.compile(
                self.literal(arguments[1]), re.UNICODE | (re.IGNORECASE if "i" in flags else 0)
            )
            matches = self.constant(_matches(pattern))  # matches[value]: pattern.search(value)
            code, kind = arguments[0]
            if kind == "attrs" and "," not in code:  # an absent attribute reads "": known now
                value, absent = self.attribute(code), pattern.search("") is not None
                return f"({absent} if {value} is None else {matches}[{value}])", "bool"
            return f"{matches}[{self.string(arguments[0])}]", "bool"
        raise Unsupported(f"function {name}() with {len(arguments)} arguments")

    # conversions, as XPath 1.0's boolean() and string()
    def boolean(self, term: tuple[str, str]) -> str:
        code, kind = term
        if kind == "bool":
            return code
        if kind == "str":
            return f"(len({code}) > 0)"
        names = code.split(",")
        return "(" + " or ".join(f"{self.attribute(n)} is not None" for n in names) + ")"

    def string(self, term: tuple[str, str]) -> str:
        code, kind = term
        if kind == "str":
            return code
        if kind != "attrs":
            raise Unsupported("string() of a boolean")
        names = code.split(",")
        if len(names) == 1:
            return f"({self.attribute(names[0])} or '')"
        values = [self.attribute(n) for n in names]
        both = f"_first_written(el, {tuple(names)!r}, ({', '.join(values)},))"
        if len(names) > 2:
            return both
        first, second = values
        return f"(({first} or '') if {second} is None else {second} if {first} is None else {both})"

    def literal(self, term: tuple[str, str]) -> str:
        if term[0] not in self.literals:
            raise Unsupported("a non-literal argument where a literal is expected")
        return self.literals[term[0]]


MEMO_ENTRIES = 4096
"""Values whose match :class:`Matches` keeps a pattern at most (then it starts afresh)."""
MEMO_CHARS = 256
"""Values longer than this are searched each time, not kept (a hostile page's megabyte-long
class must not stay in memory)."""


class Matches(dict[str, bool]):
    """``pattern.search(value) is not None`` by value, each value searched once: the class
    and id strings a page repeats (a template's ``class="item"`` on every entry), read by
    every expression and every pass, are most of the ``re:test`` calls, and the searches of
    trafilatura's long alternations are most of a selection's CPU. A hit is one dict lookup
    in C; a miss searches (``__missing__``). Bounded by :data:`MEMO_ENTRIES` and
    :data:`MEMO_CHARS`; the answer is the search's, whatever the cache holds."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: re.Pattern[str]) -> None:
        super().__init__()
        self.pattern = pattern

    def __missing__(self, value: str) -> bool:
        found = self.pattern.search(value) is not None
        if len(value) <= MEMO_CHARS:
            if len(self) >= MEMO_ENTRIES:
                self.clear()
            self[value] = found
        return found


_MATCHES: dict[tuple[str, int], Matches] = {}
"""One :class:`Matches` a regular expression (pattern and flags), shared by the expressions
that test it."""


def _matches(pattern: re.Pattern[str]) -> Matches:
    return _MATCHES.setdefault((pattern.pattern, pattern.flags), Matches(pattern))


def _translation(source: str, target: str) -> dict[int, int | None]:
    """XPath ``translate``: the first occurrence of a character wins; characters past the
    end of ``target`` are removed."""
    table: dict[int, int | None] = {}
    for index, char in enumerate(source):
        table.setdefault(ord(char), ord(target[index]) if index < len(target) else None)
    return table


def _first_written(element: Any, names: tuple[str, ...], values: tuple[str | None, ...]) -> str:
    """The string value of ``@a|@b``: the first of the attributes in document order, i.e. as
    written in the page; "" when it has none of them."""
    present = [value for value in values if value is not None]
    if len(present) < 2:
        return present[0] if present else ""
    for key in element.attrib:
        if key in names:
            return str(element.get(key))
    return ""  # pragma: no cover (a present attribute is among the keys)


def _document_order(context: Any, nodes: list[Any]) -> list[Any]:
    """``nodes`` (descendants of ``context``, no duplicates) sorted in document order."""

    def key(node: Any) -> list[int]:
        path = []
        while node is not context and (parent := node.getparent()) is not None:
            path.append(parent.index(node))
            node = parent
        return path[::-1]

    return sorted(nodes, key=key)


def _step_source(step: _Step, first: bool, attributes: dict[str, str]) -> list[str]:
    """The body of a function selecting ``step`` under ``context``."""
    tags = ", ".join(repr(tag) for tag in step.tags) or "'*'"
    lines = [
        "_out = []",
        "_seen = set()" if step.first_child else "",
        f"for el in context.iterdescendants({tags}):",
    ]
    lines += [f"    {variable} = el.get({name!r})" for name, variable in attributes.items()]
    if step.conditions:
        lines.append(f"    if not ({' and '.join(step.conditions)}):")
        lines.append("        continue")
    if step.first_child:
        lines += [
            "    _parent = el.getparent()",
            "    if _parent in _seen:",
            "        continue",
            "    _seen.add(_parent)",
        ]
    lines.append("    return [el]" if first else "    _out.append(el)")
    lines.append("return _out")
    return [line for line in lines if line]


Selector = Callable[[Any], list[Any]]


def compile_xpath(path: str) -> Selector:
    """A Python function giving what ``XPath(path)`` gives on an element (with ``re`` bound
    to EXSLT's regular expressions), or :class:`Unsupported`."""
    parser = _Parser(path)
    paths = parser.union()
    functions: list[Selector] = []
    for index, compiled in enumerate(paths):
        body = _step_source(compiled.step, compiled.first, parser.attributes)
        source = f"def _select{index}(context):\n" + "\n".join("    " + line for line in body)
        namespace: dict[str, Any] = {**parser.names, "_first_written": _first_written}
        exec(compile(source, f"<xpath {path.strip()[:60]}>", "exec"), namespace)
        functions.append(namespace[f"_select{index}"])
    if len(functions) == 1:
        return functions[0]
    if all(not p.first and not p.step.conditions and not p.step.first_child for p in paths):
        tags = tuple(tag for p in paths for tag in p.step.tags)  # .//a|.//b: one walk
        if all(p.step.tags for p in paths):
            return lambda context: list(context.iterdescendants(*tags))

    def union(context: Any) -> list[Any]:
        found = list(dict.fromkeys(node for select in functions for node in select(context)))
        return _document_order(context, found) if len(found) > 1 else found

    return union


class FastXPath:
    """A drop-in for one ``lxml.etree.XPath`` of trafilatura: called on an element it runs
    the Python translation; anything else (an ElementTree, XPath variables) goes to the
    original."""

    def __init__(self, original: etree.XPath, select: Selector) -> None:
        self.original = original
        self.path = original.path
        self._select = select

    def __call__(self, context: Any, **variables: Any) -> Any:
        if variables or not isinstance(context, etree._Element):
            return self.original(context, **variables)
        return self._select(context)

    def __str__(self) -> str:
        return str(self.original)

    def __repr__(self) -> str:
        return f"FastXPath({self.path!r})"


def _xpath_lists(module: Any) -> Iterable[tuple[str, list[Any]]]:
    for name, value in vars(module).items():
        if (
            name.isupper()
            and isinstance(value, list)
            and value
            and all(isinstance(item, (etree.XPath, FastXPath)) for item in value)
        ):
            yield name, value


SINGLES = ("BASIC_CLEAN_XPATH",)
"""trafilatura's XPaths that stand alone (not in a list), in ``trafilatura.settings`` and
the modules that import them by name (:func:`_single_holders`): the baseline's cleaning,
which the balanced pass runs on the whole page (``html2txt``, ``baseline``). Each counts as
a list of one in :func:`install` and :func:`installed`."""


def _single_holders() -> list[Any]:
    # by module name: the package's ``trafilatura.baseline`` attribute is its function
    return [importlib.import_module(f"trafilatura.{name}") for name in ("settings", "baseline")]


def _install_singles() -> dict[str, list[int]]:
    replaced: dict[str, list[int]] = {}
    holders = _single_holders()
    for name in SINGLES:
        original = getattr(holders[0], name, None)
        if isinstance(original, FastXPath):
            replaced[name] = [0]
            continue
        if not isinstance(original, etree.XPath):
            continue
        try:
            fast = FastXPath(original, compile_xpath(original.path))
        except (Unsupported, re.error):
            continue
        for holder in holders:
            if getattr(holder, name, None) is original:
                setattr(holder, name, fast)
        replaced[name] = [0]
    return replaced


def install(module: Any = None) -> dict[str, list[int]]:
    """Replace the XPaths of trafilatura's lists (``trafilatura.xpaths`` by default, and then
    the :data:`SINGLES` too) that :func:`compile_xpath` translates, in place; the others stay.
    Idempotent. Returns the indices replaced in each list, by list name."""
    singles = module is None
    module = _trafilatura_xpaths() if module is None else module
    if getattr(module, "REGEXP_NS", REGEXP_NS) != REGEXP_NS:
        return {}
    replaced: dict[str, list[int]] = _install_singles() if singles else {}
    for name, expressions in _xpath_lists(module):
        for index, expression in enumerate(expressions):
            if isinstance(expression, FastXPath):
                replaced.setdefault(name, []).append(index)
                continue
            try:
                select = compile_xpath(expression.path)
            except (Unsupported, re.error):
                continue
            expressions[index] = FastXPath(expression, select)
            replaced.setdefault(name, []).append(index)
    return replaced


def uninstall(module: Any = None) -> None:
    """Put trafilatura's own XPaths back."""
    if module is None:
        for holder in _single_holders():
            for name in SINGLES:
                if isinstance(expression := getattr(holder, name, None), FastXPath):
                    setattr(holder, name, expression.original)
    module = _trafilatura_xpaths() if module is None else module
    for _, expressions in _xpath_lists(module):
        for index, expression in enumerate(expressions):
            if isinstance(expression, FastXPath):
                expressions[index] = expression.original


def installed(module: Any = None) -> dict[str, list[int]]:
    """The indices of each list that run in Python now (a single as ``[0]``)."""
    found = {}
    if module is None:
        holders = _single_holders()
        found = {
            name: [0]
            for name in SINGLES
            if all(isinstance(getattr(holder, name, None), FastXPath) for holder in holders)
        }
    module = _trafilatura_xpaths() if module is None else module
    found |= {
        name: [i for i, expression in enumerate(expressions) if isinstance(expression, FastXPath)]
        for name, expressions in _xpath_lists(module)
    }
    return {name: indices for name, indices in found.items() if indices}


def _trafilatura_xpaths() -> Any:
    import trafilatura.xpaths

    return trafilatura.xpaths
