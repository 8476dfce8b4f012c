"""How a store is opened: what the caller asks for (``StoreOptions``), the database made
(or found), that request resolved against what is stored, and the match rule the store
judges by."""

from __future__ import annotations

import dataclasses
import logging
from contextlib import nullcontext
from dataclasses import KW_ONLY, dataclass

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from simhash_filter.core.signature import MatchRule
from simhash_filter.index.defaults import IndexChoice, index_settings
from simhash_filter.index.schemes import MinHashLshScheme

from .engine import WriterQueue, display_url, new_sqlite_file, remove_if_empty
from .faults import WaitBounds
from .meta import Settings, compare, init_schema
from .templates import ensure_template_tables
from .texts import ensure_text_tables
from .upgrade import upgrade
from .url_rules import ensure_rule_tables

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """What a caller of ``FingerprintStore.open`` asks for, in one record: the spec
    (required), what it names of the index and rule (None leaves each to the database's
    own, else :mod:`simhash_filter.index.defaults`), and how the store runs. Checked when
    made (ValueError naming the value); the write path against the URL at open."""

    spec: str
    """The fingerprinter's spec: a database refuses fingerprints made under another."""
    _: KW_ONLY
    max_distance: int | None = None
    """k1 (None: ``rule.max_distance``, else the index kind's default)."""
    blocks: int | None = None
    """Blocks of a simhash index, bands of the minhash-lsh index."""
    create: bool = True
    """Make the database when it is not there (False: DatabaseNotFoundError)."""
    bits: int = 64
    durable: bool | None = None
    """None: each back-end's own promise; True: SQLite's commits survive a power cut;
    False: PostgreSQL may lose the last fraction of a second in a server crash."""
    rule: MatchRule | None = None
    """A whole rule (None: the database's own, else ``min_similarity``'s or the distance's)."""
    index: str | None = None
    """The index kind (``INDEX_KINDS``)."""
    write_path: str | None = None
    """How check-and-add reaches the database (write_path.py; None: the best available)."""
    bounds: WaitBounds | None = None
    """How long a write waits for a lock and retries an outage (None: no bound, no retry)."""
    min_similarity: float | None = None
    """With ``rule=None``: the index kind's default rule at this threshold."""
    own_similarity: bool = False
    """An existing database judges by its own thresholds: ``min_similarity`` only makes a
    new database's rule."""

    def __post_init__(self) -> None:
        if not isinstance(self.spec, str) or not self.spec:
            raise ValueError(f"spec must be a non-empty string, got {self.spec!r}")
        if self.rule is not None and not isinstance(self.rule, MatchRule):
            raise ValueError(f"rule must be a MatchRule, got {self.rule!r}")

    @property
    def choice(self) -> IndexChoice:
        """What these options name of the index and rule."""
        return IndexChoice(self.index, self.max_distance, self.blocks, self.min_similarity)

    @property
    def sketches(self) -> bool:
        """Whether a rule that confirms with sketches is asked for (a whole one, or a
        similarity)."""
        return self.rule is not None or self.min_similarity is not None

    def settings(self, choice: IndexChoice | None = None) -> Settings:
        made = index_settings(
            choice or self.choice, rule=self.rule, sketches=self.sketches, bits=self.bits
        )
        return Settings(self.spec, made.scheme, made.rule)


@dataclass(frozen=True, slots=True)
class Settled:
    """What opening found: the database's stored settings, and the rule the store judges
    by (the stored one, or the caller's of the same candidates)."""

    stored: Settings
    rule: MatchRule | None


def settle(
    engine: Engine, url: URL, options: StoreOptions, *, queue: WriterQueue | None
) -> Settled:
    """The stored settings of the database (made from ``options`` when it is new and
    ``options.create``) and the rule the store judges by; SchemeMismatchError (saying how
    to move) when the database cannot answer what is asked."""
    requested = options.settings()
    stored = init_database(engine, url, requested, create=options.create, queue=queue)
    choice = options.choice
    if stored is not requested and choice.index is None:  # the defaults of the stored kind
        requested = as_stored_kind(requested, stored, options)
    compare(
        url,
        stored,
        requested,
        blocks_given=choice.blocks is not None,
        index_given=choice.index is not None,
        rule_given=options.sketches,
    )
    asks_rule = options.sketches and not options.own_similarity
    return Settled(stored, rule_in_effect(url, stored, requested.rule if asks_rule else None))


def init_database(
    engine: Engine, url: URL, requested: Settings, *, create: bool, queue: WriterQueue | None
) -> Settings:
    """The stored settings of the database at ``url``, made with ``requested`` when
    ``create`` and it is not there (``requested`` itself is returned then)."""
    # Turning a new SQLite file to WAL and creating its tables take the exclusive lock from
    # a shared one; two processes doing that at once deadlock and SQLite answers one of
    # them "database is locked" at once, without the busy timeout: creators queue behind
    # the file's writer lock.
    with queue if queue is not None and create else nullcontext():
        new_file = new_sqlite_file(url) if create else None
        try:
            stored = init_schema(engine, url, settings=requested, create=create)
            upgrade(engine)  # an older schema's new columns added (upgrade.py)
            if create:
                ensure_text_tables(engine)
                ensure_rule_tables(engine)
                ensure_template_tables(engine)
        except BaseException:
            if new_file is not None:  # made empty by this call (a full disk, say)
                engine.dispose()
                remove_if_empty(new_file)
                if queue is not None and not new_file.exists():  # and its writer lock file
                    queue.remove_made_file()
            raise
    return stored


def as_stored_kind(requested: Settings, stored: Settings, options: StoreOptions) -> Settings:
    """What a caller who named no index kind asks of a database of ``stored``'s kind: the
    defaults of that kind (its k1 and blocks), when they can be made."""
    try:
        return options.settings(dataclasses.replace(options.choice, index=stored.scheme.kind))
    except ValueError:
        return requested


def rule_in_effect(url: URL, stored: Settings, requested: MatchRule | None) -> MatchRule | None:
    """The rule a store judges by: the requested one where it asks for the stored rule's
    candidates with other thresholds (``compare`` let it through), else the stored one.
    A lower similarity under the LSH bands is logged with what it costs in recall."""
    if requested is None or stored.rule is None or requested == stored.rule:
        return stored.rule
    where = display_url(url)
    log.info(
        "%s: minimum similarity %g for this process (the database's own: %g)",
        where,
        requested.min_similarity,
        stored.rule.min_similarity,
    )
    scheme = stored.scheme
    if isinstance(scheme, MinHashLshScheme) and requested.min_similarity < (
        stored.rule.min_similarity
    ):
        log.warning(
            "%s: the index's %d bands of %d rows find a pair of similarity %g with "
            "probability %.0f%% (%.0f%% at the database's own %g): pairs near the lower "
            "threshold are often not found",
            where,
            scheme.n_blocks,
            scheme.rows,
            requested.min_similarity,
            100 * scheme.candidate_probability(requested.min_similarity),
            100 * scheme.candidate_probability(stored.rule.min_similarity),
            stored.rule.min_similarity,
        )
    return requested
