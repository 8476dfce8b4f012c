"""Text normalization and script-aware tokenization (pure; no I/O of its own).

Runs of Han characters are segmented into words (:mod:`simhash_filter.core.segment`: jieba by
default); Japanese kana and Korean hangul become character bigrams; every other script is
split into words by a regular expression.

Two steps are quadratic in the length of a run, so runs are bounded before them: NFKC sorts
each run of combining marks (an insertion sort), so a run longer than
:data:`MAX_NON_STARTERS` is cut to that length first (Unicode's stream-safe text format,
UAX #15, sets the same bound of 30); jieba's HMM is quadratic in a run of Han characters
that form no dictionary word, so a Han run is segmented in pieces of at most
:data:`MAX_HAN_RUN` characters. Neither cap changes the tokens of ordinary text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache
from typing import Literal, NamedTuple, cast

from .nfkc import replace_compatibility
from .segment import check_segmenter, jieba_tokenizer, segment_function

__all__ = [
    "HAN",
    "KANA_HANGUL",
    "MAX_HAN_RUN",
    "MAX_NON_STARTERS",
    "Tokenizer",
    "cap_non_starters",
    "collapse_white_space",
    "fold",
    "jieba_tokenizer",  # re-exported from simhash_filter.core.segment, where it lives
    "long_runs",
    "may_hold_non_starter_run",
    "non_starter_run_re",
    "non_starters",
    "normalize",
    "strip_machine_text",
]

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
KANA_HANGUL = "\u3040-\u30ff\u31f0-\u31ff\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"


def _combining_marks() -> str:
    """Regex class ranges of the combining marks (Unicode categories M*) of the BMP.

    ``\\w`` does not match them: without them a Devanagari word, Arabic with vowel
    signs, or a case-folded Turkish "İ" (i + U+0307) would break at every mark.
    (Marks beyond the BMP, in historic and minority scripts, are left out: ``re``
    tests those by a linear scan, which would slow down every word.)
    """
    marks = [c for c in range(0x10000) if unicodedata.category(chr(c)).startswith("M")]
    return _class_ranges(marks, "\\u{:04x}")


def _class_ranges(codes: list[int], escape: str) -> str:
    """Regex class ranges (``a-b`` a run of consecutive code points) of sorted ``codes``,
    each code point written with ``escape`` (``"\\u{:04x}"``)."""
    ranges: list[str] = []
    start = previous = codes[0]
    for c in [*codes[1:], -1]:
        if c != previous + 1:
            ranges.append(f"{escape.format(start)}-{escape.format(previous)}")
            start = c
        previous = c
    return "".join(ranges)


MARKS = _combining_marks()


def _word(letter: str) -> str:
    """Letters or digits, with marks inside, and inner apostrophes (``keeper's``)."""
    run = f"{letter}+(?:[{MARKS}]+{letter}*)*"
    return f"{run}(?:'{run})*"


_LETTER = r"[^\W_]"  # a letter or digit (\w without the underscore)
_NON_CJK_LETTER = rf"[^\W_{HAN}{KANA_HANGUL}]"
_TOKEN_RE = re.compile(
    rf"(?P<han>[{HAN}]+)"
    rf"|(?P<bigram>[{KANA_HANGUL}]+)"
    rf"|(?P<word>{_word(_NON_CJK_LETTER)})"
)
_CJK_RE = re.compile(f"[{HAN}{KANA_HANGUL}]")
_WORD_RE = re.compile(_word(_LETTER))  # the fast path, for text with no CJK


_URL_CHARS = r"[^\s<>()\[\]{}\"'`]"


class _MachinePattern(NamedTuple):
    """One kind of machine text: ``found`` starts with a literal (so ``re`` finds it fast);
    ``before``, when given, must match right before it and is removed too (a URL's scheme,
    an address's local part)."""

    found: re.Pattern[str]
    before: re.Pattern[str] | None = None


_MACHINE_TEXT = (
    _MachinePattern(
        re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+[\"'][^\"']*[\"'])?\)")
    ),
    _MachinePattern(re.compile(rf"://{_URL_CHARS}+"), re.compile(r"[A-Za-z][A-Za-z0-9+.-]*$")),
    _MachinePattern(re.compile(rf"www\.{_URL_CHARS}+")),
    _MachinePattern(re.compile(r"@[\w-]+(?:\.[\w-]+)+"), re.compile(r"[\w.+-]+$")),
    _MachinePattern(re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")),
)
_LOOK_BACK = 64


def strip_machine_text(text: str) -> str:
    """``text`` without the text a person does not read: URLs, e-mail addresses, Markdown
    link and image targets (the link text stays) and HTML tags (their content stays).

    Such strings are long, unique and change when a site moves hosts, so as features
    they would outweigh the prose. Each becomes a space (a link target becomes ``]``),
    so words stay apart. Linear in the text: every pattern starts with a literal.
    """
    spans: list[tuple[int, int, str]] = []
    for pattern, before in _MACHINE_TEXT:
        for m in pattern.finditer(text):
            begin = m.start()
            if before is not None:
                head = before.search(text, max(0, begin - _LOOK_BACK), begin)
                if head is None:
                    continue  # "://" or "@" with nothing before it: not a URL or address
                begin = head.start()
            spans.append((begin, m.end(), "]" if m.group().startswith("]") else " "))
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    at = 0
    for begin, end, replacement in spans:
        if end <= at:
            continue  # inside a span already removed
        out.append(text[at:begin] if begin > at else "")
        out.append(replacement)
        at = end
    out.append(text[at:])
    return "".join(out)


MAX_NON_STARTERS = 30
"""Combining marks (non-starters) in a row kept at most before NFKC (UAX #15's stream-safe
bound); the rest of a longer run is dropped."""
MAX_HAN_RUN = 2_000
"""Han characters segmented at once at most (the longest run in the public data: 1,277)."""


@cache
def non_starters() -> tuple[int, ...]:
    """The non-starters: code points of a non-zero canonical combining class, or whose
    decomposition starts with one (U+0F73, U+FF9E, ...). Found on first use (a scan of every
    code point, ~0.1 s); a memo of a constant."""
    combining, decomposition = unicodedata.combining, unicodedata.decomposition
    return tuple(
        c
        for c in range(0x110000)
        if combining(ch := chr(c))
        or (decomposition(ch) and combining(unicodedata.normalize("NFKD", ch)[0]))
    )


@cache
def non_starter_run_re() -> re.Pattern[str]:
    """A run of more than :data:`MAX_NON_STARTERS` non-starters (:func:`non_starters`)."""
    ranges = _class_ranges(list(non_starters()), "\\U{:08x}")
    return re.compile(f"[{ranges}]{{{MAX_NON_STARTERS + 1},}}")


@cache
def possible_non_starter_run_re() -> re.Pattern[str]:
    """A run as long of the BMP's non-starters or any character beyond the BMP: a superset
    of :func:`non_starter_run_re`'s runs that ``re`` scans ~10x faster (a class of BMP
    ranges is one table lookup a character; the astral ranges are a list walked at each
    one), so a text without such a run is known to hold no run of marks."""
    bmp = [c for c in non_starters() if c <= 0xFFFF]
    ranges = _class_ranges(bmp, "\\u{:04x}")
    return re.compile(f"[{ranges}\\U00010000-\\U0010ffff]{{{MAX_NON_STARTERS + 1},}}")


def may_hold_non_starter_run(text: str) -> bool:
    """False when ``text`` surely holds no run of more than :data:`MAX_NON_STARTERS`
    non-starters (:func:`possible_non_starter_run_re`); True when it may."""
    return possible_non_starter_run_re().search(text) is not None


def cap_non_starters(text: str, form: Literal["NFC", "NFKC"] = "NFKC") -> str:
    """``text`` with every run of combining marks cut to :data:`MAX_NON_STARTERS`, so that
    normalizing it to ``form`` (whose canonical reordering is quadratic in a run out of order)
    stays linear. A text already in ``form`` is returned as it is, without a scan: its runs are
    in order and cost no reordering (``is_normalized`` is ~30x faster than the scan)."""
    if (
        text.isascii()
        or unicodedata.is_normalized(form, text)
        or not may_hold_non_starter_run(text)
    ):
        return text
    return non_starter_run_re().sub(lambda m: m.group()[:MAX_NON_STARTERS], text)


_LONG_HAN_RE = re.compile(f"[{HAN}]{{{MAX_HAN_RUN + 1}}}")


def long_runs(text: str) -> tuple[str, ...]:
    """Which run caps ``text`` meets: ``marks`` (:data:`MAX_NON_STARTERS`), ``han``
    (:data:`MAX_HAN_RUN`); for counting them."""
    found = []
    if cap_non_starters(text) != text:
        found.append("marks")
    if _LONG_HAN_RE.search(text):
        found.append("han")
    return tuple(found)


def fold(text: str) -> str:
    """Unicode NFKC (runs of combining marks capped first: :func:`cap_non_starters`),
    case-folded, apostrophes unified (what tokenization needs)."""
    if not (text.isascii() or unicodedata.is_normalized("NFKC", text)):
        # the compatibility characters first: the same NFKC form, whose quick check then
        # passes (a tenth of NFKC's cost on Chinese text; core/nfkc.py says why it is exact)
        text = unicodedata.normalize("NFKC", replace_compatibility(cap_non_starters(text)))
    text = text.casefold()  # a normalized text: no cap, and NFKC would return it as it is
    if "\u2019" in text or "\u02bc" in text:  # NFKC already maps the full-width one
        return text.replace("\u2019", "'").replace("\u02bc", "'")
    return text


def normalize(text: str) -> str:
    """:func:`fold`, then white space collapsed: the text a person would compare."""
    return collapse_white_space(fold(text))


def collapse_white_space(text: str) -> str:
    """Runs of white space as one space, none at the ends (:func:`normalize` after
    :func:`fold`, for a caller that has the folded text already). White space is
    ``str.isspace``, which is ``re``'s ``\\s`` (a test pins it); ``split`` is ~3x faster."""
    return " ".join(text.split())


class Tokenizer:
    """Splits normalized text into tokens, by script, and drops stopwords.

    >>> Tokenizer(stopwords=frozenset({"the"})).tokenize("the cat's hat")
    ["cat's", 'hat']
    """

    def __init__(
        self,
        *,
        stopwords: Iterable[str] = (),
        hmm: bool = True,
        drop_numbers: bool = False,
        jieba_dictionary: str | None = None,
        segmenter: str = "jieba",
    ) -> None:
        check_segmenter(segmenter, jieba_dictionary)
        self.stopwords = frozenset(stopwords)
        self.hmm = hmm
        self.drop_numbers = drop_numbers
        self.jieba_dictionary = jieba_dictionary
        self.segmenter = segmenter  # see simhash_filter.core.segment
        self._han_stopwords = self.stopwords - {"\n"}  # a line feed parts the Han runs' words

    def tokenize(self, text: str) -> list[str]:
        """Tokens of already-normalized text, stopwords removed, in order."""
        stop = self.stopwords
        if not _CJK_RE.search(text):
            words = _WORD_RE.findall(text)
            if self.drop_numbers:
                return [w for w in words if w not in stop and not w.isdigit()]
            return [w for w in words if w not in stop]
        out: list[str | None] = []  # None: where the words of the next Han run go
        han: list[str] = []
        for han_run, kana_hangul, word in _TOKEN_RE.findall(text):  # one group matched
            if word:
                if word not in stop and not (self.drop_numbers and word.isdigit()):
                    out.append(word)
            elif han_run:
                for at in range(0, len(han_run), MAX_HAN_RUN):  # jieba's HMM: quadratic in a run
                    han.append(han_run[at : at + MAX_HAN_RUN])
                    out.append(None)
            elif len(kana_hangul) == 1:  # kana / hangul: character bigrams (a lone one alone)
                out.append(kana_hangul)
            else:
                out.extend(kana_hangul[i : i + 2] for i in range(len(kana_hangul) - 1))
        return self._han_words_in(out, han)

    def _han_words_in(self, out: list[str | None], han: list[str]) -> list[str]:
        """``out`` with each None replaced by the words of the Han run of its rank, stopwords
        removed. The runs are segmented in one call, joined by a line feed: both segmenters
        split their input at white space first, yield it as a token, and segment the pieces
        between one by one, so each run's words are those it has alone (a test pins it), and
        one call a page costs less than one a run (there are hundreds)."""
        if not han:
            return cast("list[str]", out)  # no None in it
        segment = segment_function(self.segmenter, self.jieba_dictionary, self.hmm)
        stop = self._han_stopwords
        words = [w for w in segment("\n".join(han)) if w not in stop]
        if len(han) == len(out):  # Han runs only, as much Chinese text
            return [w for w in words if w != "\n"]
        words.append("\n")
        next_word = iter(words).__next__
        tokens: list[str] = []
        for token in out:
            if token is None:
                tokens.extend(iter(next_word, "\n"))  # the run's words, up to its line feed
            else:
                tokens.append(token)
        return tokens
