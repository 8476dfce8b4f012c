"""Paths and links named in the code and the docs exist.

A moved module or test leaves its old path behind in docstrings and docs; these tests read the
text (no import, no network) and fail on a `tests/…`, `simhash_filter/….py` or `store/….py`
path, a dotted `simhash_filter.pkg.module` name, or a relative markdown link (to a file and its
heading) that does not resolve.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simhash_filter"

# Stats keys share the prefix (`simhash_filter/dropped`, `simhash_filter/capped/<kind>`): only a
# name with a file extension is a path; under `tests/` every name is.
_SLASH_PATH = re.compile(r"(?<![\w./-])((?:tests|simhash_filter)/[\w./*-]*\w)")
# A module named from inside the package (`store/batch.py`, `crawl/pages/filter.py`).
_PACKAGE_PATH = re.compile(
    r"(?<![\w./-])((?:cli|core|crawl|index|page|store|urls)/[\w/]+\.(?:py|sql))"
)
_DOTTED = re.compile(r"(?<![\w./-])simhash_filter((?:\.\w+){2,})")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _texts() -> Iterator[tuple[Path, str]]:
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
    files += [ROOT / "README.md", ROOT / "bench" / "README.md"]
    for path in sorted(files):
        yield path, path.read_text(encoding="utf-8")


def _is_file_path(name: str) -> bool:
    return name.startswith("tests/") or re.search(r"\.\w+$", name) is not None


def _slash_path_exists(name: str) -> bool:
    name = name.split("::")[0]
    if "*" in name:
        return any(ROOT.glob(name))
    return (ROOT / name).exists()


def _defines(module: Path, name: str) -> bool:
    """The module defines, imports or lists `name` (not merely says the word)."""
    pattern = (
        rf"^\s*(?:async\s+def|def|class)\s+{name}\b|^{name}\s*[:=]"
        rf"|^from\s.*\bimport\s.*\b{name}\b|^\s+{name},?\s*$|[\"']{name}[\"']"
    )
    return re.search(pattern, module.read_text(encoding="utf-8"), re.MULTILINE) is not None


def _dotted_exists(parts: list[str]) -> bool:
    """`simhash_filter.a.b.C`: packages then a module, then a name its source defines."""
    where = PACKAGE
    for i, part in enumerate(parts):
        if (where / part / "__init__.py").exists():
            where = where / part
            continue
        module = where / f"{part}.py"
        if module.exists():
            rest = parts[i + 1 : i + 2]
            return not rest or _defines(module, rest[0])
        # a name the package itself exports (only below the top level: see _DOTTED)
        return i > 0 and _defines(where / "__init__.py", part)
    return True


def test_named_paths_exist() -> None:
    missing = []
    for path, text in _texts():
        for match in _SLASH_PATH.finditer(text):
            name = match.group(1).rstrip(".")
            if _is_file_path(name) and not _slash_path_exists(name):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
        for match in _PACKAGE_PATH.finditer(text):
            if not (PACKAGE / match.group(1)).exists():
                missing.append(f"{path.relative_to(ROOT)}: {match.group(1)}")
        for match in _DOTTED.finditer(text):
            parts = match.group(1).strip(".").split(".")
            if not _dotted_exists(parts):
                missing.append(f"{path.relative_to(ROOT)}: simhash_filter.{'.'.join(parts)}")
    assert not missing, "named but not found:\n" + "\n".join(sorted(set(missing)))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a markdown heading: lower case, punctuation gone, spaces → '-'."""
    kept = [
        ch for ch in heading.strip().lower() if ch in " -_" or unicodedata.category(ch)[0] in "LN"
    ]
    return "".join(kept).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = None if in_code else re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = github_anchor(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def test_markdown_links_resolve() -> None:
    """Every relative link of the docs and the bench pages reaches its file and heading."""
    broken = []
    bench = ROOT / "bench"
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), bench / "README.md"]
    for page in [*pages, *sorted((bench / "history").glob("*.md"))]:
        for match in _MD_LINK.finditer(page.read_text(encoding="utf-8")):
            link = match.group(1)
            if re.match(r"\w+:", link):
                continue
            file_part, _, anchor = link.partition("#")
            target = (page.parent / file_part).resolve() if file_part else page
            missing = not target.exists()
            if missing or (anchor and target.suffix == ".md" and anchor not in _anchors(target)):
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_todays_figures_rows() -> None:
    """bench/README.md's "Today's figures": one figure a row, linked to a dated history entry
    whose heading carries the link's date."""
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    table = text.split("## Today's figures", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows, "no rows under Today's figures"
    bad = []
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        link = re.fullmatch(r"\[(\d{4}-\d\d-\d\d)\]\(history/(\w+\.md)#(\1[\w-]*)\)", cells[-1])
        entry = link and ROOT / "bench" / "history" / link.group(2)
        if len(cells) != 4 or not link or not entry or link.group(3) not in _anchors(entry):
            bad.append(row)
    assert not bad, "rows without one figure and a dated entry link:\n" + "\n".join(bad)
