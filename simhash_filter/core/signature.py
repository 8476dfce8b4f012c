"""What is computed for one page, and the rule that decides whether two pages are copies.

A :class:`PageSignature` holds the 64-bit simhash (what the band index finds) and a
*sketch*: an independent MinHash of the text's character 5-grams (see :mod:`.sketch`),
optionally with a smaller MinHash of the page's whole visible text. A
:class:`MatchRule` takes the simhash candidates within ``candidate_distance`` and
confirms each with the sketches (:meth:`MatchRule.verify`); a pair is a near-duplicate
only when both agree. Pages without a sketch (old rows, imports) fall back to the
simhash alone within ``fallback_distance``.

The sketch's bytes are opaque outside the core: a 4-byte header (format, flags,
log2 of the text slots, log2 of the page slots), a byte for the main text's share of
the visible text, then little-endian 16-bit slots, text first, page second. Flags: 1, the
page slots follow; 2, the page is a listing (``page/listing.py``); 4, the page was signed
before its host's template was known (*unsure*: core/template.py). A reader ignores flags it
does not know, and a sketch written before a flag reads as unmarked.

Nothing here imports NumPy: the crawl process only compares sketches (on their bytes,
:func:`slot_agreement`), and NumPy is 12 MiB of its memory (issue 45). The arrays of
:func:`decode_sketch` and :func:`encode_sketch` are for the code that makes sketches.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "MatchRule",
    "PageSignature",
    "SketchParts",
    "Verification",
    "decode_sketch",
    "encode_sketch",
    "encode_slots",
    "marks_listing",
    "marks_unsure",
    "signed_again_sketch",
    "sketch_parts",
    "slot_agreement",
]

SKETCH_FORMAT = 1
_HEADER = struct.Struct("<BBBBB")
_HAS_PAGE = 1
_LISTING = 2
_UNSURE = 4

UNSURE_TEXT_SHARE = 0.3
"""The share limit of the boilerplate verdict for a pair of which a page is *unsure* (signed
before its host's template was known): the same sidebar or menu extracted from two different
pages of one site was 12.7% and 18% of their visible text in the false drops that made this
rule (issue 43), beyond ``max_text_share``; the decide function in SQL spells it too."""
UNSURE_SAME_TEMPLATE = 0.4
"""Such a pair is judged so only when its pages are at least this alike (their visible texts'
sketch): two pages of one site's template (0.55-0.94 on the test shapes); a copy of one
article under two sites' templates shares only the article (well below), and is a copy."""
UNSURE_MIN_SIMILARITY = 0.9
"""Such a pair (both main texts under :data:`UNSURE_TEXT_SHARE` of their pages) is a copy
only when its texts are this alike and its pages alike (``min_page_similarity``): a blog's
short posts beside one sidebar, or two wiki info pages, share most of what a reader sees
(0.94 of the page sketch) and 0.73-0.75 of their extracted text; a copy under the same
template shares nearly all of both. The decide function in SQL spells it too."""


@dataclass(frozen=True, slots=True)
class PageSignature:
    """Everything computed for one page (in the worker pool too)."""

    fingerprint: int
    """64-bit simhash of the main text: what the band index finds."""
    sketch: bytes
    """The second, independent signature; opaque outside the core."""
    text_length: int
    """Characters of the main text."""
    stored_text: bytes | None = None
    """The main text packed for the store (``STORE_TEXT``: stored_text.pack_text), or None."""
    exact: bool = False
    """Signed by the page's bytes, not its text (too little text to fingerprint): only a
    byte-identical page matches it (:mod:`.content_key`)."""
    blocks: tuple[int, ...] = ()
    """The page's block hashes (core/template.py): what its host's template is learned from."""
    template_share: float | None = None
    """The share of the extracted main text in its host's template blocks, left out of what
    is signed (None: no template was known for the host)."""
    template_only: bool = False
    """Nothing but the host's template was extracted: signed by its bytes (``exact``)."""
    unstripped: PageSignature | None = None
    """With template blocks left out: the page signed as before its host's template was known
    (its whole main text, marked unsure), to find a copy of it stored then."""


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of comparing two sketches."""

    confirmed: bool
    """The second signature agrees: a near-duplicate."""
    similarity: float
    """Its estimate of the texts' character-5-gram Jaccard similarity, in [0, 1]."""
    boilerplate: bool = False
    """The texts match but the pages around them differ: an extraction failure, not a copy."""
    listing: bool = False
    """The texts match but one page is a listing and the other is not (an archive showing a
    post whole, and the post): one lists the other, not a copy. Never set with
    ``boilerplate``."""


@dataclass(frozen=True, slots=True)
class SketchParts:
    """A sketch's parts as read from its bytes: the main text's slots and the visible text's
    (or None), each as little-endian 16-bit values; the main text's share of the visible
    text (None when the page text was not given); whether the page is a listing; whether it
    was signed before its host's template was known."""

    text: bytes
    page: bytes | None
    share: float | None
    listing: bool = False
    unsure: bool = False


@dataclass(frozen=True, slots=True)
class DecodedSketch:
    """:class:`SketchParts` with the slots as NumPy arrays."""

    text: npt.NDArray[np.uint16]
    page: npt.NDArray[np.uint16] | None
    share: float | None
    listing: bool = False
    unsure: bool = False


def encode_slots(
    text: bytes,
    page: bytes | None = None,
    share: float | None = None,
    *,
    listing: bool = False,
    unsure: bool = False,
) -> bytes:
    """The bytes of a sketch of these slots (little-endian 16-bit values; the inverse of
    :func:`sketch_parts`). ValueError for a number of slots that is not a power of two."""
    for slots in (text, page):
        if slots is not None and (len(slots) < 2 or len(slots) & (len(slots) - 1)):
            raise ValueError(f"a sketch's slots are a power of two, got {len(slots)} bytes")
    flags = (
        (_HAS_PAGE if page is not None else 0)
        | (_LISTING if listing else 0)
        | (_UNSURE if unsure else 0)
    )
    text_log = (len(text) // 2).bit_length() - 1
    page_log = (len(page) // 2).bit_length() - 1 if page is not None else 0
    share_byte = 255 if share is None else min(254, max(0, round(share * 254)))
    header = _HEADER.pack(SKETCH_FORMAT, flags, text_log, page_log, share_byte)
    return header + text + (page if page is not None else b"")


def encode_sketch(
    text: npt.NDArray[np.uint16],
    page: npt.NDArray[np.uint16] | None = None,
    share: float | None = None,
    *,
    listing: bool = False,
    unsure: bool = False,
) -> bytes:
    """The bytes of a sketch of these slots (the inverse of :func:`decode_sketch`)."""
    page_bytes = page.astype("<u2").tobytes() if page is not None else None
    return encode_slots(
        text.astype("<u2").tobytes(), page_bytes, share, listing=listing, unsure=unsure
    )


def signed_again_sketch(text_sketch: bytes, stored: bytes, text_ratio: float) -> bytes:
    """The sketch of a page signed unsure (``stored``) signed again by its main text without
    its host's template: the main text's slots of ``text_sketch`` (that text signed alone),
    the stored visible text's slots, and the main text's share scaled by ``text_ratio`` (its
    characters left); sure now. ValueError for bytes that are not sketches."""
    new, old = sketch_parts(text_sketch), sketch_parts(stored)
    share = None if old.share is None else min(1.0, old.share * max(0.0, text_ratio))
    return encode_slots(new.text, old.page, share, listing=old.listing)


def marks_listing(data: bytes) -> bool:
    """Whether a sketch marks its page a listing (its flags byte; the slots are not read)."""
    return len(data) >= _HEADER.size and data[0] == SKETCH_FORMAT and bool(data[1] & _LISTING)


def marks_unsure(data: bytes) -> bool:
    """Whether a sketch marks its page signed before its host's template was known."""
    return len(data) >= _HEADER.size and data[0] == SKETCH_FORMAT and bool(data[1] & _UNSURE)


def sketch_parts(data: bytes) -> SketchParts:
    """The parts of a sketch; ValueError, saying why, for bytes that are not one."""
    if len(data) < _HEADER.size:
        raise ValueError(f"a sketch has at least {_HEADER.size} bytes, got {len(data)}")
    version, flags, text_log, page_log, share_byte = _HEADER.unpack_from(data)
    if version != SKETCH_FORMAT:
        raise ValueError(f"unknown sketch format {version} (this version reads {SKETCH_FORMAT})")
    text_slots = 1 << text_log
    page_slots = (1 << page_log) if flags & _HAS_PAGE else 0
    expected = _HEADER.size + 2 * (text_slots + page_slots)
    if len(data) != expected or text_log > 15 or page_log > 15:
        raise ValueError(f"a sketch of this header has {expected} bytes, got {len(data)}")
    text_end = _HEADER.size + 2 * text_slots
    page = bytes(data[text_end:]) if page_slots else None
    share = None if share_byte == 255 else share_byte / 254
    return SketchParts(
        bytes(data[_HEADER.size : text_end]),
        page,
        share,
        bool(flags & _LISTING),
        bool(flags & _UNSURE),
    )


def decode_sketch(data: bytes) -> DecodedSketch:
    """The parts of a sketch, its slots as NumPy arrays; ValueError as :func:`sketch_parts`."""
    import numpy as np  # only where sketches are made or studied (module doc)

    parts = sketch_parts(data)
    page = None if parts.page is None else np.frombuffer(parts.page, dtype="<u2")
    text = np.frombuffer(parts.text, dtype="<u2")
    return DecodedSketch(text, page, parts.share, parts.listing, parts.unsure)


def slot_agreement(a: bytes, b: bytes) -> float:
    """The share of 16-bit slots two sketches' slots (little-endian bytes) hold equal: an
    estimate of the Jaccard similarity. On whole integers: the XOR of the two is zero in a
    slot exactly where they agree, and OR-ing each slot's 16 bits down onto its lowest bit
    (shifts of 8, 4, 2, 1 reach no lower slot's lowest bit) counts the slots that differ."""
    if len(a) != len(b) or not a or len(a) % 2:
        raise ValueError(f"sketches of {len(a) / 2:g} and {len(b) / 2:g} slots cannot be compared")
    slots = len(a) // 2
    x = int.from_bytes(a, "little") ^ int.from_bytes(b, "little")
    x |= x >> 8
    x |= x >> 4
    x |= x >> 2
    x |= x >> 1
    differ = (x & int.from_bytes(b"\x01\x00" * slots, "little")).bit_count()
    return (slots - differ) / slots


@dataclass(frozen=True, slots=True)
class MatchRule:
    """Candidate + verify: when is a stored page a near-duplicate of a new one?

    The simhash index finds the stored pages within ``candidate_distance`` bits; each is
    a copy only if the sketches estimate a character-5-gram Jaccard similarity of at least
    ``min_similarity``. A pair of which either page has no sketch is judged by the simhash
    alone, within ``fallback_distance``. A confirmed pair is flagged ``boilerplate`` when
    both pages carry their visible text, the visible texts are less than
    ``min_page_similarity`` alike, and the main text is less than ``max_text_share`` of
    the visible text on both pages: the extractor found the same small block (a sidebar, a
    menu, a disclaimer) on two different pages. When either page was signed before its
    host's template was known (*unsure*), a pair of one template (pages at least
    :data:`UNSURE_SAME_TEMPLATE` alike) is judged with the share limit
    :data:`UNSURE_TEXT_SHARE`, texts under :data:`UNSURE_MIN_SIMILARITY` counting as pages
    that differ. A
    confirmed pair of a listing and a page that is not one is flagged ``listing`` (one lists
    the other; ``page/listing.py``). Flagged pairs are matches, not copies. Stored in the
    database's meta with the band scheme
    (:meth:`describe`, :meth:`parse`).
    """

    candidate_distance: int = 9
    min_similarity: float = 0.7
    fallback_distance: int = 3
    min_page_similarity: float = 0.8
    max_text_share: float = 0.1

    def __post_init__(self) -> None:
        for name in ("candidate_distance", "fallback_distance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 64:
                raise ValueError(f"{name} must be an integer between 0 and 64, got {value!r}")
        for name in ("min_similarity", "min_page_similarity", "max_text_share"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0.0 <= value <= 1.0
            ):
                raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")

    @classmethod
    def for_distance(
        cls, candidate_distance: int, min_similarity: float | None = None
    ) -> MatchRule:
        """The default rule with another candidate distance (and threshold): the fallback
        distance is the default's, but never beyond ``candidate_distance``."""
        default = cls()
        return cls(
            candidate_distance=candidate_distance,
            min_similarity=default.min_similarity if min_similarity is None else min_similarity,
            fallback_distance=min(default.fallback_distance, candidate_distance),
        )

    def same_candidates(self, other: MatchRule) -> bool:
        """Whether ``other`` asks the index for the same candidates (the same candidate and
        fallback distances). Its thresholds (``min_similarity``, ``min_page_similarity``,
        ``max_text_share``) may differ: they judge the candidates found, with the sketches
        stored, so a database answers a rule of the same candidates without a re-index."""
        return (self.candidate_distance, self.fallback_distance) == (
            other.candidate_distance,
            other.fallback_distance,
        )

    @property
    def max_distance(self) -> int:
        """The largest simhash distance at which any pair can match (the index radius)."""
        return max(self.candidate_distance, self.fallback_distance)

    def verify(self, query: bytes, stored: bytes) -> Verification:
        """Compare the sketches of a new page and a stored candidate.

        ValueError when either is not a sketch, or the two have different sizes (made
        under different specs, which the store never mixes).
        """
        a = sketch_parts(query)
        b = sketch_parts(stored)
        similarity = slot_agreement(a.text, b.text)
        confirmed = similarity >= self.min_similarity
        boilerplate = False
        if confirmed and a.page is not None and b.page is not None:
            page_similarity = slot_agreement(a.page, b.page)
            share = None if a.share is None or b.share is None else max(a.share, b.share)
            unlike = page_similarity < self.min_page_similarity
            boilerplate = share is not None and share < self.max_text_share and unlike
            if share is not None and (a.unsure or b.unsure) and not boilerplate:
                # a host's template was not known yet: two pages of one template (pages
                # alike in part), small texts, not near-identical pages and texts
                boilerplate = (
                    share < UNSURE_TEXT_SHARE
                    and page_similarity >= UNSURE_SAME_TEMPLATE
                    and (unlike or similarity < UNSURE_MIN_SIMILARITY)
                )
        listing = confirmed and not boilerplate and a.listing != b.listing
        return Verification(
            confirmed=confirmed, similarity=similarity, boilerplate=boilerplate, listing=listing
        )

    def describe(self) -> str:
        """The rule as one line, e.g. ``candidate_distance=7;min_similarity=0.7;...``."""
        return ";".join(
            f"{name}={getattr(self, name)!r}"
            for name in (
                "candidate_distance",
                "min_similarity",
                "fallback_distance",
                "min_page_similarity",
                "max_text_share",
            )
        )

    @classmethod
    def parse(cls, text: str) -> MatchRule:
        """The rule :meth:`describe` wrote; ValueError naming the part that is wrong."""
        ints = {"candidate_distance", "fallback_distance"}
        floats = {"min_similarity", "min_page_similarity", "max_text_share"}
        values: dict[str, int | float] = {}
        for part in text.split(";"):
            name, sep, raw = part.partition("=")
            name = name.strip()
            if not sep or name not in ints | floats:
                raise ValueError(f"not a match rule part: {part!r} (in {text!r})")
            if name in values:
                raise ValueError(f"{name} given twice in {text!r}")
            try:
                values[name] = int(raw) if name in ints else float(raw)
            except ValueError:
                raise ValueError(f"{name} is not a number: {raw!r} (in {text!r})") from None
        missing = {"candidate_distance", "min_similarity", "fallback_distance"} - set(values)
        if missing:
            raise ValueError(f"match rule {text!r} lacks {', '.join(sorted(missing))}")
        return cls(**values)  # type: ignore[arg-type]
