"""The package's shape: its folders are its layers, with no import running back up.

- ``core``: nothing else of the package; of the rest, the stdlib, jieba, mmh3 and numpy.
- ``index`` (the index kinds): the core only.
- ``page`` (the page work): the core only (and trafilatura, lxml).
- ``urls`` (URL rules): nothing else of the package (and w3lib).
- ``store``: the core, the index kinds and the URL rules (and SQLAlchemy, psycopg); never Scrapy.
- ``cli``: anything but the Scrapy side (``crawl``).
- ``crawl`` is two rooms: ``crawl.pages`` (the page check) never imports ``crawl.requests``
  (the request side), which may use the page room's results; the modules at the top of
  ``crawl`` (config, signals, start-up) import neither room, only the add-on takes both.
- no import cycle between modules, no module over 600 lines, no function over 80 lines.

The import graph is read from the source (``ast``): every ``import`` and ``from ... import``
of a package module, wherever it stands (at the top, in a function, under
``TYPE_CHECKING``), is an edge. A package's ``__init__`` running before its submodules is
not one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "simhash_filter"
MAX_LINES = 600
MAX_FUNCTION_LINES = 80

LAYERS = ("core", "index", "page", "urls", "store", "crawl", "cli")
MAY_IMPORT = {
    "core": set(),
    "index": {"core"},
    "page": {"core"},
    "urls": set(),
    "store": {"core", "index", "urls"},
    "crawl": {"core", "index", "page", "urls", "store"},
    "cli": {"core", "index", "page", "urls", "store"},
}
"""The package's layers each layer may import, besides itself."""

THIRD_PARTY = {
    "core": {"jieba", "mmh3", "numpy", "rjieba"},
    "index": set(),
    "page": {"trafilatura", "lxml", "lxml_html_clean", "charset_normalizer", "w3lib"},
    "urls": {"w3lib"},
}
"""The outside packages a pure layer may import (the stdlib always)."""

PENDING: set[str | tuple[str, str]] = set()
"""What the move into folders found and the house issue (28) mended: long functions and
imports that broke a layer's rule, by name. Empty, and kept so (test_nothing_is_pending)."""


FORBIDDEN_EVERYWHERE_BELOW_CRAWL = {"scrapy", "twisted", "itemadapter"}


def _modules(package: str = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                targets.add(submodule if submodule in modules else origin)
    return {target for target in targets if target in modules and target != name}


def import_graph(package: str = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph()
    assert "simhash_filter.store.write_path" in graph["simhash_filter.store.fingerprint_store"]
    assert cycles(graph) == []


def test_no_import_cycle_in_the_benchmarks() -> None:
    graph = import_graph("bench")
    assert "bench.store_common" in graph["bench.store_study"]
    assert cycles(graph) == []


def test_no_module_over_600_lines() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in _modules().items()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _outside_imports(path: Path) -> set[str]:
    """The top-level names of the packages outside this one that ``path`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {PACKAGE}


def test_the_layers_are_folders() -> None:
    modules = _modules()
    top = {name for name in modules if name.count(".") == 1 and _layer(name) is None}
    assert top <= {f"{PACKAGE}.__main__"}, top
    assert {_layer(name) for name in modules} - {None} == set(LAYERS)


def test_each_layer_imports_only_the_layers_below_it() -> None:
    graph = import_graph()
    wrong = {
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if (layer := _layer(name)) is not None
        and (other := _layer(target)) is not None
        and other != layer
        and other not in MAY_IMPORT[layer]
    }
    # the package's own __init__ (lazy names) is no layer's to import
    wrong |= {
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if _layer(name) is not None and target == PACKAGE and _layer(name) != "cli"
    }
    assert wrong - PENDING == set()


def test_the_pure_layers_import_no_framework() -> None:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    wrong = {}
    for name, path in _modules().items():
        layer = _layer(name)
        outside = _outside_imports(path) - stdlib
        if layer in THIRD_PARTY:
            extra = outside - THIRD_PARTY[layer]
        elif layer in {"store", "cli"}:
            extra = outside & FORBIDDEN_EVERYWHERE_BELOW_CRAWL
        else:
            continue
        if extra:
            wrong[name] = sorted(extra)
    assert wrong == {}


def test_no_function_over_80_lines() -> None:
    long = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{name}.{node.name}"] = lines
    assert set(long) - PENDING == set(), long


CRAWL_ROOMS = ("pages", "requests")
CRAWL_TOP_MAY_IMPORT_ROOMS = {f"{PACKAGE}.crawl.addon"}
"""The one module at the top of ``crawl`` that takes both rooms: the add-on wires them."""


def _crawl_room(module: str) -> str | None:
    """``pages``, ``requests``, ``top`` (a module at the top of ``crawl``) or None (elsewhere)."""
    parts = module.split(".")
    if parts[:2] != [PACKAGE, "crawl"]:
        return None
    return parts[2] if len(parts) > 3 and parts[2] in CRAWL_ROOMS else "top"


def test_the_crawl_rooms_are_folders() -> None:
    rooms = {_crawl_room(name) for name in _modules()} - {None}
    assert rooms == {"top", *CRAWL_ROOMS}


def test_the_page_room_never_imports_the_request_room() -> None:
    graph = import_graph()
    wrong = set()
    for name, targets in graph.items():
        room = _crawl_room(name)
        for target in targets:
            other = _crawl_room(target)
            if (room == "pages" and other == "requests") or (
                room == "top" and other in CRAWL_ROOMS and name not in CRAWL_TOP_MAY_IMPORT_ROOMS
            ):
                wrong.add((name, target))
    assert wrong == set()


def test_the_rule_of_the_rooms_finds_a_wrong_import() -> None:
    assert _crawl_room(f"{PACKAGE}.crawl.pages.filter") == "pages"
    assert _crawl_room(f"{PACKAGE}.crawl.requests.rule_book") == "requests"
    assert _crawl_room(f"{PACKAGE}.crawl.config") == "top"
    assert _crawl_room(f"{PACKAGE}.crawl.pages") == "top"  # the room's own __init__
    assert _crawl_room(f"{PACKAGE}.store.schema") is None


def test_nothing_is_pending() -> None:
    assert set() == PENDING
