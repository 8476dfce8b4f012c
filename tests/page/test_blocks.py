"""The blocks a page is learned from (page/blocks.py): a text node a reader sees, and the whole
line of a paragraph, item or cell that holds inline markup, hashed as the extracted lines are."""

from __future__ import annotations

from itertools import chain
from typing import Any

from simhash_filter.core.template import block_hash
from simhash_filter.page.blocks import MIXED_TAGS, page_blocks
from simhash_filter.page.extract import _visible_nodes, parse_bounded

PAGE = """<html><head><title>T</title><script>var menu = "Sports";</script></head><body>
<nav><ul><li><a href="/s">Sports</a></li><li><a href="/w">World &amp; Nation</a></li>
<li>Books <b>and <i>Arts</i></b> tail</li></ul></nav>
<!-- a comment -->
<div class="sidebar"><p>Read <a href="/b">our book list</a> &mdash; updated weekly.<br>New
titles <em>every</em> Monday.</p>
<table><tr><td>Cell <span>one</span></td><th>Head<sup>2</sup></th><td>plain</td></tr></table>
<dl><dt>Term <code>x</code></dt><dd>Def <q>quoted</q> end</dd></dl>
<h2>Section <small>note</small></h2><blockquote>Quote <cite>who</cite></blockquote>
<figure><img src="a.png"><figcaption>Caption <a href="#">link</a></figcaption></figure>
<p>Un café <span>très</span> noir, 中文 <b>内容</b>。</p></div>
<div><p>Lead <b>in</b></p>Loose text after the paragraph</div>
<main><p>The article's own paragraph, with no markup at all, long enough to matter.</p></main>
</body></html>"""


def _reference(nodes: list[str], tree: Any) -> tuple[int, ...]:
    """What page_blocks gave with ``text_content`` for each mixed element."""
    mixed = (e.text_content() for e in tree.iter(*MIXED_TAGS) if len(e))
    seen: set[int] = set()
    hashes = []
    for node in chain(nodes, mixed):
        if len(node) < 2 or len(node) > 1000 or node.isspace():
            continue
        value = block_hash(node)
        if value is not None and value not in seen:
            seen.add(value)
            hashes.append(value)
    return tuple(hashes)


def _blocks(html: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    tree = parse_bounded(html)
    nodes = _visible_nodes(tree)
    assert nodes is not None
    return page_blocks(nodes, tree), _reference(nodes, tree)


def test_a_mixed_lines_text_is_its_text_content() -> None:
    blocks, reference = _blocks(PAGE)
    assert blocks == reference
    for line in (
        "Books and Arts tail",
        "Read our book list \u2014 updated weekly.New titles every Monday.",
        "Cell one",
        "Head2",
        "Term x",
        "Def quoted end",
        "Section note",
        "Quote who",
        "Caption link",
        "Un café très noir, 中文 内容。",
        "Lead in",  # its tail is a text node of its own
    ):
        assert block_hash(line) in blocks, line
    assert block_hash("Sports") in blocks  # a text node
    assert block_hash('var menu = "Sports";') not in blocks  # a script is not seen


def test_pages_of_many_shapes_give_what_text_content_gives() -> None:
    for n in range(30):
        items = "".join(
            f"<li>Item {i} <a href='/{i}'>link {i}</a>{' tail' * (i % 3)}</li>" for i in range(n)
        )
        cells = "".join(f"<td>c{i}<b>{'x' * i}</b>&lt;{i}&gt;</td>" for i in range(n % 7))
        html = (
            f"<html><body><ul>{items}</ul><table><tr>{cells}</tr></table>"
            f"<p>Para {n} <i>one</i> <i>two</i><!-- gone --> three</p></body></html>"
        )
        blocks, reference = _blocks(html)
        assert blocks == reference
