"""``Fingerprinter``: page text → 64-bit simhash, with a spec naming every choice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from . import sketch_params
from . import stopwords as _stopwords
from .features import IdfTable, check_weighting, shingles, weigh
from .segment import DEFAULT_SEGMENTER, segmenter_spec
from .signature import PageSignature, encode_sketch
from .simhash import BITS, DEFAULT_SEED, simhash
from .text import Tokenizer, collapse_white_space, fold, normalize, strip_machine_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SPEC_VERSION = 2
DEFAULT_MAX_CHARS = 50_000
"""Characters of a text that are fingerprinted: tokenizing is linear but not cheap (jieba's
HMM on Han characters that form no words is the slowest case: `bench/bench_fingerprint.py`),
and a page's first 50,000 characters say what it is."""
EXTRACTION = (
    "trafilatura-precision-fast+balanced-fast-below-500-prose-0.5"
    "+table-layout-0.5-tables-over-p-full-contained-0.9+browser-decode"
)
"""How the page work (:mod:`simhash_filter.page.extract`) gets an HTML page's main text, named
in the spec: a new extraction makes new fingerprints of the same pages. It is spelt here,
where the spec is made, and ``page/extract.py`` implements it (a test pins the two together)."""
PAGE_SKETCH_SLOTS = 64
"""Slots of the visible-text sketch: it only has to tell "alike" from "far apart"."""


class PageSketch(NamedTuple):
    """The visible-text half of a sketch (:meth:`Fingerprinter.page_sketch`): the same for
    every signature of one page (its text with the host's template left out, and whole), so
    the page work makes it once a page."""

    slots: npt.NDArray[np.uint16]
    length: int
    """Characters of the normalized visible text sketched."""


class Fingerprinter:
    """Turns text into an unsigned 64-bit Charikar simhash.

    Every option that changes a fingerprint is named in :attr:`spec`; the store keeps
    it and refuses to mix fingerprints made under another spec. Instances are
    immutable after construction and safe to share between threads.

    Options:
        shingle_size: features are word n-grams of this size (1 = words).
        weighting: ``tf`` (term frequency, default), ``sublinear`` (1 + ln tf), ``tfidf``
            (sublinear tf × IDF; needs ``idf``), ``uniform``. ``tf`` measured best on the
            labelled near-duplicate pairs (see bench/bench_fingerprint.py).
        idf: an :class:`IdfTable` for ``tfidf``.
        top_n: keep only the N heaviest features (None = all).
        min_tokens: fewer tokens than this (after stopwords) → no fingerprint (None).
        stopwords: the words to drop (default: the bundled English + Chinese lists).
        drop_numbers: drop tokens made only of digits (dates, counters).
        hmm: let jieba guess unknown Chinese words with its HMM.
        seed: the mmh3 seed.
        hash_function: replaces mmh3 (for tests and experiments; named ``custom`` in the spec).
        max_chars: only the first ``max_chars`` characters of a text are fingerprinted
            (a cap on the work one page can cost).
        sketch_slots: slots of the MinHash sketch :meth:`sign` adds (a power of two).
        machine_text: ``drop`` (default) removes URLs, e-mail addresses, Markdown link
            targets and HTML tags before tokenizing (:func:`.text.strip_machine_text`);
            ``keep`` fingerprints them like words.
        segmenter: ``rjieba`` (jieba-rs, default) or ``jieba`` (:mod:`.segment`) for Han runs.
    """

    def __init__(
        self,
        *,
        shingle_size: int = 1,
        weighting: str = "tf",
        idf: IdfTable | None = None,
        top_n: int | None = None,
        min_tokens: int = 20,
        stopwords: Iterable[str] | None = None,
        drop_numbers: bool = False,
        hmm: bool = True,
        seed: int = DEFAULT_SEED,
        hash_function: Callable[[str], int] | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        sketch_slots: int = sketch_params.DEFAULT_SLOTS,
        machine_text: str = "drop",
        segmenter: str = DEFAULT_SEGMENTER,
    ) -> None:
        if shingle_size < 1:
            raise ValueError(f"shingle_size must be >= 1, got {shingle_size}")
        check_weighting(weighting, idf, top_n)
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        sketch_params.check_slots(sketch_slots)
        if machine_text not in ("drop", "keep"):
            raise ValueError(f"machine_text must be 'drop' or 'keep', got {machine_text!r}")
        self.machine_text = machine_text
        if min_tokens < 1:
            raise ValueError(f"min_tokens must be >= 1, got {min_tokens}")
        if not 0 <= seed < 2**32:
            raise ValueError(f"seed must be an unsigned 32-bit integer, got {seed}")
        words = _stopwords.DEFAULT if stopwords is None else frozenset(stopwords)
        self.shingle_size = shingle_size
        self.weighting = weighting
        self.idf = idf if weighting == "tfidf" else None
        self.top_n = top_n
        self.min_tokens = min_tokens
        self.max_chars = max_chars
        self.seed = seed
        self.sketch_slots = sketch_slots
        self.tokenizer = Tokenizer(
            stopwords=words, hmm=hmm, drop_numbers=drop_numbers, segmenter=segmenter
        )
        self.hash_function = hash_function
        if hash_function is None:
            hash_name = f"mmh3_x64_128_low64:{seed}"
        else:
            hash_name = f"custom:{getattr(hash_function, '__qualname__', 'function')}"
        self.spec = ";".join(
            [
                f"simhash-filter/{SPEC_VERSION}",
                f"f={BITS}",
                f"norm={'content+' if machine_text == 'drop' else ''}nfkc+casefold+ws",
                f"tok=words+{segmenter_spec(segmenter)}{'+hmm' if hmm else ''}+kana-hangul-bigrams",
                f"stop={_stopwords.digest(words)}",
                f"numbers={'drop' if drop_numbers else 'keep'}",
                f"shingle={shingle_size}",
                f"weight={weighting}",
                f"idf={self.idf.name if self.idf else 'none'}",
                f"top_n={top_n or 'all'}",
                f"max_chars={max_chars}",
                f"hash={hash_name}",
                f"sketch=c{sketch_params.SHINGLE}-oph{sketch_slots}x16:{sketch_params.SKETCH_SEED}"
                f"+page{PAGE_SKETCH_SLOTS}",
                f"extract={EXTRACTION}",
            ]
        )

    def __repr__(self) -> str:
        return f"Fingerprinter(spec={self.spec!r}, min_tokens={self.min_tokens})"

    def tokens(self, text: str) -> list[str]:
        """The normalized tokens of ``text``, stopwords removed."""
        return self._tokens_and_folded(text)[0]

    def _tokens_and_folded(self, text: str) -> tuple[list[str], str | None]:
        """The tokens of ``text``, and its first ``max_chars`` characters folded when that
        fold is the one tokenization ran on (no machine text removed), so :meth:`sign`
        runs NFKC once."""
        capped = text[: self.max_chars]  # before NFKC, so the cap is on what the caller gave
        words = strip_machine_text(capped) if self.machine_text == "drop" else capped
        folded = fold(words)
        tokens = self.tokenizer.tokenize(folded)  # white space never reaches a token
        return tokens, folded if words is capped else None

    def _weigh(self, tokens: list[str]) -> dict[str, float]:
        return weigh(
            shingles(tokens, self.shingle_size),
            weighting=self.weighting,
            idf=self.idf,
            top_n=self.top_n,
        )

    def _simhash(self, tokens: list[str]) -> int:
        if self.weighting == "tf" and self.top_n is None:  # the weights are the counts
            weights: Mapping[str, float] = Counter(shingles(tokens, self.shingle_size))
        else:
            weights = self._weigh(tokens)
        return simhash(weights, hash_function=self.hash_function, seed=self.seed)

    def features(self, text: str) -> dict[str, float]:
        """The weighted features the fingerprint is built from, heaviest first."""
        weights = self._weigh(self.tokens(text))
        return dict(sorted(weights.items(), key=lambda fw: (-fw[1], fw[0])))

    def fingerprint(self, text: str) -> int | None:
        """The unsigned 64-bit simhash of ``text``, or None when it has fewer than
        ``min_tokens`` tokens (too little text to fingerprint reliably)."""
        tokens = self.tokens(text)
        if len(tokens) < self.min_tokens:
            return None
        return self._simhash(tokens)

    def sketch(
        self,
        text: str,
        *,
        page_text: str | None = None,
        listing: bool = False,
        unsure: bool = False,
    ) -> bytes:
        """The MinHash sketch of ``text`` (and of ``page_text``, the page's whole visible
        text, when given: it lets the match rule tell an extraction failure from a copy);
        ``listing`` marks a page that lists several entries (the rule never calls a listing
        and a page that is not one copies); ``unsure`` a page whose host's template was not
        known yet (``MatchRule.verify`` judges it with the stricter share,
        :data:`~.signature.UNSURE_TEXT_SHARE`). The marks are flags of the sketch, not part
        of :attr:`spec`: a sketch stored before them reads as unmarked, as it was judged."""
        return self._sketch(normalize(text[: self.max_chars]), page_text, listing, unsure)

    def page_sketch(self, page_text: str) -> PageSketch:
        """The sketch of a page's whole visible text (its first ``4 * max_chars``
        characters), to pass as ``page_text`` to each :meth:`sign` of the page."""
        from .sketch import text_sketch  # NumPy: where pages are signed (signature.py's doc)

        page = normalize(page_text[: 4 * self.max_chars])
        return PageSketch(text_sketch(page, PAGE_SKETCH_SLOTS), len(page))

    def _sketch(
        self,
        content: str,
        page_text: str | PageSketch | None,
        listing: bool,
        unsure: bool = False,
    ) -> bytes:
        from .sketch import text_sketch

        slots = text_sketch(content, self.sketch_slots)
        if page_text is None:
            return encode_sketch(slots, listing=listing)
        page = page_text if isinstance(page_text, PageSketch) else self.page_sketch(page_text)
        share = min(1.0, len(content) / page.length) if page.length else 1.0
        return encode_sketch(slots, page.slots, share, listing=listing, unsure=unsure)

    def sign(
        self,
        text: str,
        *,
        page_text: str | PageSketch | None = None,
        listing: bool = False,
        unsure: bool = False,
    ) -> PageSignature | None:
        """The fingerprint and sketch of a page's main text, or None when the text is too
        short to fingerprint (as :meth:`fingerprint`); ``page_text`` (or its
        :meth:`page_sketch`, made once for several signatures of a page), ``listing`` and
        ``unsure`` as in :meth:`sketch`."""
        tokens, folded = self._tokens_and_folded(text)
        if len(tokens) < self.min_tokens:
            return None
        fingerprint = self._simhash(tokens)
        content = (
            collapse_white_space(folded)
            if folded is not None
            else normalize(text[: self.max_chars])
        )
        return PageSignature(
            fingerprint=fingerprint,
            sketch=self._sketch(content, page_text, listing, unsure),
            text_length=len(text),
        )


SPEC_OPTIONS = ("weighting", "top_n", "segmenter")
"""The options a crawl's settings may change (``WEIGHTING``, ``TOP_N``, ``SEGMENTER``) and
``simhash-filter import`` takes (``--weighting``, ``--top-n``, ``--segmenter``)."""


def spec_options(spec: str) -> dict[str, str] | None:
    """The :data:`SPEC_OPTIONS` (as command-line values) that make a default
    :class:`Fingerprinter` produce ``spec``; None when no such choice does (another version,
    other stopwords, a custom hash: only a re-crawl gets there). Found by making the
    Fingerprinter and comparing its spec, so it never names options that miss."""
    items = dict(item.split("=", 1) for item in spec.split(";") if "=" in item)
    weighting, top_n = items.get("weight", "tf"), items.get("top_n", "all")
    segmenter = "jieba" if "+jieba-" in items.get("tok", "") else DEFAULT_SEGMENTER
    try:
        made = Fingerprinter(
            weighting=weighting,
            top_n=None if top_n == "all" else int(top_n),
            segmenter=segmenter,
        )
    except ValueError:
        return None
    if made.spec != spec:
        return None
    found = {"weighting": weighting, "top_n": top_n, "segmenter": segmenter}
    defaults = {"weighting": "tf", "top_n": "all", "segmenter": DEFAULT_SEGMENTER}
    return {key: value for key, value in found.items() if value != defaults[key]}
