"""The README's settings table and docs/settings.md name exactly the settings the code reads
(issue 44 item 6: ``SIMHASH_FILTER_FORM_FIRST`` was missing from the README's table)."""

from __future__ import annotations

import re
from pathlib import Path

from simhash_filter.crawl.config import SETTING_NAMES

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_table_lists_every_setting_the_code_reads() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| \[`(SIMHASH_FILTER_[A-Z_]+)`\]\(docs/settings\.md#([a-z_]+)\)", readme, re.M
    )
    assert {name for name, _ in rows} == SETTING_NAMES
    assert len(rows) == len(SETTING_NAMES)  # each once
    assert all(anchor == name.lower() for name, anchor in rows)


def test_settings_md_has_a_section_for_every_setting() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^### `(SIMHASH_FILTER_[A-Z_]+)`$", doc, re.M)) == SETTING_NAMES


def test_the_documented_defaults_of_switches_are_the_codes() -> None:
    # the commit that made VIEWS_WAIT a default wrote it under VARIANTS_LAST's section
    from simhash_filter.crawl.config import Config

    defaults = Config()
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    documented = re.findall(
        r"^### `SIMHASH_FILTER_([A-Z_]+)`\n\nType `bool`, default `(\w+)`", doc, re.M
    )
    in_readme = dict(
        re.findall(r"^\| \[`SIMHASH_FILTER_([A-Z_]+)`\]\([^)]*\) \| `(True|False)`", readme, re.M)
    )
    switches = {
        name for name in SETTING_NAMES
        if isinstance(getattr(defaults, name.removeprefix("SIMHASH_FILTER_").lower(), None), bool)
    }  # fmt: skip
    assert {f"SIMHASH_FILTER_{name}" for name, _ in documented} == switches
    for name, default in documented:
        code = str(getattr(defaults, name.lower()))
        assert (default, in_readme[name]) == (code, code), name
