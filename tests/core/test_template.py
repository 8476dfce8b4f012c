"""Block hashes and the template left out of a main text (core/template.py)."""

from __future__ import annotations

from simhash_filter.core.template import block_hash, main_blocks, strip_template


def test_a_block_hashes_by_its_words() -> None:
    assert block_hash("- Sports") == block_hash("sports") == block_hash("  SPORTS ")
    assert block_hash("Sports") != block_hash("Sport")
    assert block_hash(" - | ") is None


def test_the_template_is_left_out_line_by_line_and_cell_by_cell() -> None:
    text = "Home\n- Sports\nThe match was won late.\n| Page ID | 4242 |"
    assert main_blocks(text) == [
        "Home",
        "- Sports",
        "The match was won late.",
        " Page ID ",
        " 4242 ",
    ]
    template = frozenset(h for h in map(block_hash, ["home", "sports", "page id"]) if h)
    stripped = strip_template(text, template)
    assert stripped.text == "The match was won late.\n 4242 "
    assert stripped.template_chars == len("Home") + len("- Sports") + len("Page ID")
    assert 0 < stripped.share < 1
    assert strip_template(text, frozenset()).text == text
