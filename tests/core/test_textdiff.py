"""Passages are sentences, so a text lines up with itself inside a page whose extraction
broke its lines differently (a post one line a paragraph; an archive page holding the whole
post on one line beside other posts' excerpts)."""

from __future__ import annotations

from simhash_filter.core.textdiff import diff_texts, passages, text_similarity

POST = [
    "The council approved the harbour plan on Tuesday. Work starts in spring.",
    "Residents asked for a footbridge. The engineers said it could be added later.",
    "The budget is nine million. Most of it comes from a regional grant.",
]
OTHERS = " ".join(
    f"Excerpt {n} of another post talks about something else entirely. It ends here."
    for n in range(3)
)


def test_a_post_lines_up_inside_an_archive_line() -> None:
    post = "\n".join(POST)
    archive = OTHERS + " " + " ".join(POST)  # one line, as an archive's extraction gives it
    steps = diff_texts(post, archive)
    in_both = [p for step in steps if step.op == "equal" for p in step.a]
    assert in_both == passages(post)  # every sentence of the post is found in the archive
    # 6 sentences of the post in both, 6 of the others only in the archive: 2*6 / (6 + 12)
    assert text_similarity(steps) == 2 * 6 / (6 + 12)


def test_chinese_sentences_are_passages() -> None:
    text = "垃圾分类实施三年。居民习惯悄然改变！社区志愿者每天值守？"
    assert passages(text) == ["垃圾分类实施三年。", "居民习惯悄然改变！", "社区志愿者每天值守？"]
    assert text_similarity(diff_texts(text, "\n".join(passages(text)))) == 1.0
