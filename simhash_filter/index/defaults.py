"""One home for what a database's index and match rule are, from what a user chose.

A crawl (``SIMHASH_FILTER_INDEX``, ``_MAX_DISTANCE``, ``_BLOCKS``, ``_MIN_SIMILARITY``),
``simhash-filter import`` and ``reindex`` (``--index``, ``--max-distance``, ``--blocks``,
``--min-similarity``) and a library caller of ``FingerprintStore.open`` all name some of
these and leave the rest to the defaults; :func:`index_settings` (a new database) and
:func:`changed_settings` (``reindex`` of an existing one) fill them in, the same way for
every caller. Pure code: the choices in, an :class:`IndexSettings` out.

The defaults: the rule confirms candidates with the sketches, so the index is MinHash LSH
(18 bands of 8 rows) and the rule's candidate distance k1 is 64 (no simhash condition: the
bands find the candidates). A simhash index (``permuted``, ``multi-index``) needs a radius:
k1 = 9. Without a rule (a library caller judging by the distance alone), k = 4.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from simhash_filter.core.signature import MatchRule

from .minhash_lsh import LSH_CANDIDATE_DISTANCE
from .schemes import DEFAULT_MAX_DISTANCE, MINHASH_LSH, IndexScheme, default_index, make_scheme

__all__ = [
    "IndexChoice",
    "IndexSettings",
    "changed_settings",
    "default_candidate_distance",
    "index_settings",
    "reindex_choice",
]

_DEFAULT_RULE = MatchRule()


@dataclass(frozen=True, slots=True)
class IndexChoice:
    """What a user may name about an index and its rule; None leaves it to the defaults."""

    index: str | None = None
    """The index kind (``INDEX_KINDS``)."""
    max_distance: int | None = None
    """k1: the rule's candidate distance and the index's simhash radius."""
    blocks: int | None = None
    """Blocks of a simhash index, bands of the minhash-lsh index."""
    min_similarity: float | None = None
    """The sketch similarity that confirms a candidate."""


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """A database's index scheme and match rule (None: a page within the scheme's k of a
    kept page is a duplicate, the simhash distance alone)."""

    scheme: IndexScheme
    rule: MatchRule | None

    @property
    def max_distance(self) -> int:
        return self.scheme.max_distance


def default_candidate_distance(index: str | None) -> int:
    """k1 of a rule when the user names none: any distance under the minhash-lsh index
    (its bands find the candidates), 9 under the simhash indexes (they need a radius)."""
    if index in (None, MINHASH_LSH):
        return LSH_CANDIDATE_DISTANCE
    return _DEFAULT_RULE.candidate_distance


def index_settings(
    choice: IndexChoice = IndexChoice(),
    *,
    rule: MatchRule | None = None,
    sketches: bool = True,
    bits: int = 64,
) -> IndexSettings:
    """The index and rule of a new database. ``rule``: a whole rule the caller made (its
    reach is k1 unless ``choice.max_distance`` names a larger radius); else, with
    ``sketches``, the default rule with ``choice``'s k1 and similarity; without, no rule.
    ValueError (naming the value) for choices that do not fit together."""
    if rule is None and sketches:
        k1 = choice.max_distance
        if k1 is None:
            k1 = default_candidate_distance(choice.index)
        rule = MatchRule.for_distance(k1, choice.min_similarity)
    elif rule is not None and choice.min_similarity is not None:
        rule = dataclasses.replace(rule, min_similarity=choice.min_similarity)
    max_distance = choice.max_distance
    if max_distance is None:
        max_distance = DEFAULT_MAX_DISTANCE if rule is None else rule.max_distance
    if rule is not None and max_distance < rule.max_distance:
        raise ValueError(
            f"max_distance={max_distance} is below the rule's reach "
            f"({rule.max_distance}): the index would miss candidates"
        )
    kind = choice.index or default_index(max_distance, sketches=rule is not None)
    scheme = make_scheme(kind, bits=bits, max_distance=max_distance, blocks=choice.blocks)
    return IndexSettings(scheme, rule)


def changed_settings(current: IndexSettings, choice: IndexChoice) -> IndexSettings:
    """The index and rule of an existing database after ``reindex`` with ``choice``.

    What is not named stays: the kind, k1, the similarity, and the blocks while the kind and
    k1 stay (a new kind or k1 takes that scheme's default blocks). A named kind without a
    k1 takes that kind's default k1 (:func:`default_candidate_distance`; a database without
    a rule keeps its k). A new k1 moves the rule with it (the rule's candidate distance is
    the index's radius). ``min_similarity`` on a database without a rule gives it one.
    ValueError for choices that do not fit together."""
    scheme, rule = current.scheme, current.rule
    kind = choice.index or scheme.kind
    k1 = choice.max_distance
    if k1 is None and choice.index is not None and rule is not None:
        k1 = default_candidate_distance(kind)
    max_distance = scheme.max_distance if k1 is None else k1
    if rule is not None and k1 is not None:
        fallback = min(_DEFAULT_RULE.fallback_distance, k1)
        rule = dataclasses.replace(rule, candidate_distance=k1, fallback_distance=fallback)
    if choice.min_similarity is not None:
        rule = (
            MatchRule.for_distance(max_distance, choice.min_similarity)
            if rule is None
            else dataclasses.replace(rule, min_similarity=choice.min_similarity)
        )
    blocks = choice.blocks
    if blocks is None and kind == scheme.kind and max_distance == scheme.max_distance:
        blocks = scheme.n_blocks
    rows = getattr(scheme, "rows", None) if kind == scheme.kind == MINHASH_LSH else None
    if rule is not None and max_distance < rule.max_distance:
        raise ValueError(
            f"max_distance={max_distance} is below the rule's reach ({rule.max_distance})"
        )
    new = make_scheme(kind, bits=scheme.bits, max_distance=max_distance, blocks=blocks, rows=rows)
    return IndexSettings(new, rule)


def _fits(found: IndexSettings, wanted: IndexSettings) -> bool:
    """``found`` answers what ``wanted`` asks: the same scheme, and a rule of the same
    candidates (its thresholds may differ per crawl) or none asked for."""
    if found.scheme != wanted.scheme:
        return False
    if wanted.rule is None or found.rule is None:
        return wanted.rule is None
    return found.rule.same_candidates(wanted.rule)


def reindex_choice(current: IndexSettings, wanted: IndexSettings) -> IndexChoice | None:
    """What to tell ``reindex`` so that a database of ``current`` answers ``wanted`` (the
    options an error message suggests), or None when no ``reindex`` gets there (another
    bit width, say). Checked by :func:`changed_settings` itself, so the suggestion works."""
    scheme = wanted.scheme
    needs_rule = current.rule is None and wanted.rule is not None
    base = IndexChoice(
        blocks=scheme.n_blocks,
        max_distance=scheme.max_distance if scheme.max_distance < scheme.bits else None,
        min_similarity=wanted.rule.min_similarity if needs_rule and wanted.rule else None,
    )
    for choice in (base, dataclasses.replace(base, index=scheme.kind)):
        if choice.index is None and scheme.kind != current.scheme.kind:
            continue
        try:
            if _fits(changed_settings(current, choice), wanted):
                return choice
        except ValueError:
            continue
    return None
