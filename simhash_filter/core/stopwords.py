"""Bundled stopword lists (English and Chinese), as immutable sets.

They are part of the fingerprint spec: :func:`digest` names a list by content, so
editing a list changes the spec string and old databases refuse to mix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

ENGLISH: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've
    if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off
    on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's will with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves also just may might must shall us
    """.split()
)

CHINESE: frozenset[str] = frozenset(
    """
    的 地 得 了 着 过 是 在 和 与 及 或 而 也 都 就 又 还 把 被 让 给 对 从 向 以 为 于 之 其 这 那
    这个 那个 这些 那些 这样 那样 一个 一些 一种 我 你 他 她 它 我们 你们 他们 她们 它们 自己
    吗 呢 吧 啊 呀 哦 嘛 啦 么 个 们 中 上 下 里 等 但 但是 如果 因为 所以 虽然 然而 并 并且
    而且 或者 以及 及其 已 已经 将 会 能 可 可以 要 没有 不 没 很 更 最 太 该 此 各 每 某 则 即
    便 如 若 由 由于 通过 对于 关于 根据 按照 除了 之后 之前 以后 以前 之间 其中 其他 另外
    """.split()
)

DEFAULT: frozenset[str] = ENGLISH | CHINESE


def digest(words: Iterable[str]) -> str:
    """A short, stable name for a stopword list's content (for the fingerprint spec)."""
    joined = "\n".join(sorted(set(words))).encode("utf-8")
    return hashlib.sha256(joined).hexdigest()[:12]
