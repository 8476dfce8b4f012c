"""The URL rules a store keeps: their state and evidence, and the requests skipped under them.

``url_rules`` has one row per (host, kind, pattern): learned rules (candidates until enough
support, then active), the universal ones a host has used or disproved, and the states a user
set (pinned, banned). Counts are added in SQL (``support = support + n``), so crawlers sharing
one PostgreSQL database add up their evidence, and a counterexample from any of them retires
the rule for all. ``skipped_requests`` holds the URLs each rule kept from being fetched, so a
rule that retires gives them back (:meth:`UrlRuleStore.take_skipped`). The tables are part of
schema 5 and additive: a writer's open makes them in a database of schema 4
(:func:`ensure_rule_tables`); a reader of a database without them sees no rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import ModuleType

from sqlalchemy import Connection, Engine, and_, bindparam, inspect, select, update

from simhash_filter.urls.key import canonical_url
from simhash_filter.urls.rules import RuleState, UrlRule
from simhash_filter.urls.universal import SESSION, TRACKING

from .reading import ReadableStore
from .records import StoreError
from .schema import (
    RULE_TABLES,
    SUPERSEDED,
    duplicates_table,
    pages_table,
    rule_witnesses_table,
    skipped_requests_table,
    url_rules_table,
)
from .side_tables import ensure_tables, side_connection

__all__ = ["RuleDelta", "SkippedRequest", "StoredRule", "UrlRuleStore", "ensure_rule_tables"]

_UNIVERSAL_KINDS = (TRACKING, SESSION)
_RETIRABLE = (RuleState.CANDIDATE.value, RuleState.ACTIVE.value)
_CHUNK = 500  # patterns an IN list of one query


def ensure_rule_tables(engine: Engine) -> None:
    """Make the rule tables where they are missing (a writer's open: side_tables.py)."""
    ensure_tables(engine, RULE_TABLES)


@dataclass(frozen=True, slots=True)
class StoredRule:
    """A rule as the store keeps it."""

    id: int
    rule: UrlRule
    state: RuleState
    support: int
    counterexamples: int
    fetches_saved: int
    sampled_checks: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RuleDelta:
    """Evidence about one rule to add: the witnesses of supporting pairs (each new one adds
    one to the support), support to add as it is (a count made elsewhere), counterexamples,
    sampled checks."""

    rule: UrlRule
    support: int = 0
    counterexamples: int = 0
    sampled_checks: int = 0
    witnesses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkippedRequest:
    """A request skipped because ``rule`` mapped its URL to a form already seen."""

    rule: UrlRule
    url: str


class UrlRuleStore:
    """The rule tables of an open store (``FingerprintStore`` or any :class:`ReadableStore`)."""

    def __init__(self, store: ReadableStore) -> None:
        self._engine = store.engine
        self._where = store.display_url
        # SQLite: a write waits in the store's own queue of writers (the page checks'), so
        # it never holds the write lock while a page check sits in SQLite's busy wait
        self._writers: AbstractContextManager[object] | None = getattr(store, "writer_queue", None)

    # -- transactions

    @contextmanager
    def _connection(self, *, write: bool) -> Iterator[Connection]:
        queue = self._writers if write and self._writers is not None else nullcontext()
        with queue, side_connection(self._engine, self._where, write=write) as conn:
            yield conn

    def has_tables(self) -> bool:
        """Whether the database has the rule tables (one made before schema 5 may not)."""
        with self._connection(write=False) as conn:
            inspector = inspect(conn)
            return all(inspector.has_table(t.name) for t in RULE_TABLES)

    # -- reading

    def rules(
        self, *, states: Iterable[RuleState] | None = None, host: str | None = None
    ) -> list[StoredRule]:
        """The stored rules (optionally of some states, of one host), by host then id."""
        if not self.has_tables():
            return []
        r = url_rules_table.c
        query = select(url_rules_table).order_by(r.host, r.id)
        if states is not None:
            query = query.where(r.state.in_([state.value for state in states]))
        if host is not None:
            query = query.where(r.host == host)
        with self._connection(write=False) as conn:
            return [_stored(row) for row in conn.execute(query).mappings()]

    def rule(self, rule_id: int) -> StoredRule | None:
        """One rule by id, or None."""
        if not self.has_tables():
            return None
        with self._connection(write=False) as conn:
            row = (
                conn.execute(select(url_rules_table).where(url_rules_table.c.id == rule_id))
                .mappings()
                .first()
            )
        return None if row is None else _stored(row)

    def witnesses(self, rules: Sequence[UrlRule]) -> dict[UrlRule, set[str]]:
        """What each rule's supporting pairs showed (a parent scope pools its children's)."""
        w = rule_witnesses_table.c
        found: dict[UrlRule, set[str]] = {rule: set() for rule in rules}
        with self._connection(write=False) as conn:
            ids = self._ids(conn, list(found))  # a rule not stored has none
            by_id = {rule_id: rule for rule, rule_id in ids.items()}
            wanted = sorted(by_id)
            for start in range(0, len(wanted), _CHUNK):
                query = select(w.rule_id, w.witness).where(
                    w.rule_id.in_(wanted[start : start + _CHUNK])
                )
                for rule_id, seen in conn.execute(query):
                    found[by_id[int(rule_id)]].add(seen)
        return found

    def kept_urls(self, host: str, limit: int) -> list[str]:
        """Up to ``limit`` URLs of kept pages of ``host`` (a candidate's history check)."""
        p = pages_table.c
        with self._connection(write=False) as conn:
            query = select(p.url).where(p.domain == host).order_by(p.id).limit(limit)
            return [url for (url,) in conn.execute(query)]

    def declared_canonicals(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (canonical URL, URL of the page that declared it) of stored pages
        and logged copies that named another URL their canonical, newest first: URLs the
        crawl must not skip by a rule (the keep policy wants the canonical itself)."""
        p, d = pages_table.c, duplicates_table.c
        kept = (
            select(p.canonical_url, p.url)
            .where(p.canonical_url.is_not(None), p.canonical_url != p.url)
            .order_by(p.id.desc())
            .limit(limit)
        )
        logged = (
            select(d.canonical_url, d.url)
            .where(d.canonical_url.is_not(None), d.canonical_url != d.url)
            .order_by(d.id.desc())
            .limit(limit)
        )
        with self._connection(write=False) as conn:
            found = {canonical: url for canonical, url in conn.execute(kept)}
            for canonical, url in conn.execute(logged):
                if len(found) >= limit:
                    break
                found.setdefault(canonical, url)
        return list(found.items())[:limit]

    def replaced_by(self, url: str) -> str | None:
        """The URL of the kept page that superseded the page once kept at ``url`` (the keep
        policy), or None: a drop that named the old page is a copy of this one."""
        d, p = duplicates_table.c, pages_table.c
        query = (
            select(p.url)
            .join(duplicates_table, d.duplicate_of == p.id)
            .where(d.url == canonical_url(url), d.kind == SUPERSEDED)
            .order_by(d.id.desc())
            .limit(1)
        )
        with self._connection(write=False) as conn:
            row = conn.execute(query).first()
        return None if row is None else str(row[0])

    def skips_of(self, url: str) -> list[tuple[StoredRule, datetime]]:
        """The rules under which ``url`` (canonicalized) was skipped before download, with
        when, as recorded: empty when it was not (or its rule retired and it was fetched)."""
        if not self.has_tables():
            return []
        s = skipped_requests_table.c
        query = (
            select(url_rules_table, s.skipped_at.label("skipped_on"))
            .join(skipped_requests_table, s.rule_id == url_rules_table.c.id)
            .where(s.url == canonical_url(url))
            .order_by(url_rules_table.c.id)
        )
        with self._connection(write=False) as conn:
            rows = conn.execute(query).mappings().all()
        return [(_stored(row), row["skipped_on"]) for row in rows]

    def skipped_samples(self, rule_id: int, limit: int | None) -> list[tuple[str, datetime]]:
        """Up to ``limit`` (None: all) URLs the rule skipped (newest first), with when."""
        if not self.has_tables():
            return []
        s = skipped_requests_table.c
        query = (
            select(s.url, s.skipped_at)
            .where(s.rule_id == rule_id)
            .order_by(s.skipped_at.desc(), s.url)
            .limit(limit)
        )
        with self._connection(write=False) as conn:
            return [(str(url), when) for url, when in conn.execute(query)]

    def is_kept(self, url: str) -> bool:
        """Whether a page is stored under ``url``'s canonical form."""
        with self._connection(write=False) as conn:
            query = select(pages_table.c.id).where(pages_table.c.url == canonical_url(url))
            return conn.execute(query).first() is not None

    # -- writing

    def _upsert(self, conn: Connection, rules: Iterable[UrlRule], now: datetime) -> None:
        """Insert the rules that are not stored yet: learned ones as candidates, universal
        ones as active (they skip from the start)."""
        rows = [
            {
                "host": rule.host,
                "kind": rule.kind,
                "pattern": rule.pattern,
                "state": (
                    RuleState.ACTIVE if rule.kind in _UNIVERSAL_KINDS else RuleState.CANDIDATE
                ).value,
                "support": 0,
                "counterexamples": 0,
                "fetches_saved": 0,
                "sampled_checks": 0,
                "created_at": now,
                "updated_at": now,
            }
            for rule in dict.fromkeys(rules)
        ]
        if not rows:
            return
        dialect = _upsert_dialect(conn.dialect.name)
        statement = dialect.insert(url_rules_table).on_conflict_do_nothing(
            index_elements=["host", "kind", "pattern"]
        )
        conn.execute(statement, rows)

    @staticmethod
    def _where_rule(rule: UrlRule) -> object:
        r = url_rules_table.c
        return and_(r.host == rule.host, r.kind == rule.kind, r.pattern == rule.pattern)

    def record(
        self, deltas: Sequence[RuleDelta], skips: Sequence[SkippedRequest] = ()
    ) -> list[StoredRule]:
        """Add evidence (each rule stored first if new), and record ``skips`` (as
        :meth:`record_skips`); a rule with a counterexample retires at once unless a user
        pinned or banned it. Returns the rules as they are now, in the order given. One
        transaction of a few statements, whatever the number of rules (a pair proposes
        several; the learner must keep up with the crawl)."""
        if not deltas:
            if skips:
                self.record_skips(skips)
            return []
        merged = _merge(deltas)
        now = datetime.now(UTC)
        with self._connection(write=True) as conn:
            if skips:
                self._write_skips(conn, skips, now)
            self._upsert(conn, merged, now)
            ids = self._ids(conn, list(merged))
            new = self._add_witnesses(conn, {ids[rule]: d.witnesses for rule, d in merged.items()})
            conn.execute(
                _ADD_EVIDENCE,
                [
                    {
                        "b_id": ids[rule],
                        "b_support": delta.support + new.get(ids[rule], 0),
                        "b_counterexamples": delta.counterexamples,
                        "b_sampled": delta.sampled_checks,
                        "b_now": now,
                    }
                    for rule, delta in sorted(merged.items(), key=lambda item: ids[item[0]])
                ],  # in id order: crawlers sharing PostgreSQL lock the rows in one order
            )
            disproved = sorted(ids[rule] for rule, d in merged.items() if d.counterexamples)
            if disproved:
                conn.execute(_RETIRE.where(url_rules_table.c.id.in_(disproved)))
            stored = self._read_ids(conn, sorted(ids.values()))
        return [stored[ids[delta.rule]] for delta in deltas]

    def _ids(self, conn: Connection, rules: Sequence[UrlRule]) -> dict[UrlRule, int]:
        """The stored ids of those of ``rules`` that are stored."""
        r = url_rules_table.c
        wanted = set(rules)
        ids: dict[UrlRule, int] = {}
        for start in range(0, len(rules), _CHUNK):
            chunk = rules[start : start + _CHUNK]
            query = select(r.id, r.host, r.kind, r.pattern).where(
                r.host.in_(sorted({rule.host for rule in chunk})),
                r.kind.in_(sorted({rule.kind for rule in chunk})),
                r.pattern.in_(sorted({rule.pattern for rule in chunk})),
            )
            for rule_id, host, kind, pattern in conn.execute(query):
                rule = UrlRule(host, kind, pattern)
                if rule in wanted:
                    ids[rule] = int(rule_id)
        return ids

    def _read_ids(self, conn: Connection, rule_ids: Sequence[int]) -> dict[int, StoredRule]:
        stored: dict[int, StoredRule] = {}
        for start in range(0, len(rule_ids), _CHUNK):
            query = select(url_rules_table).where(
                url_rules_table.c.id.in_(rule_ids[start : start + _CHUNK])
            )
            for row in conn.execute(query).mappings():
                rule = _stored(row)
                stored[rule.id] = rule
        return stored

    def _add_witnesses(self, conn: Connection, witnesses: dict[int, set[str]]) -> dict[int, int]:
        """Store each rule's (by id) witnesses; the number that were new, by rule id."""
        w = rule_witnesses_table.c
        wanted = {(rule_id, seen) for rule_id, found in witnesses.items() for seen in found}
        if not wanted:
            return {}
        known: set[tuple[int, str]] = set()
        rule_ids = sorted({rule_id for rule_id, _ in wanted})
        values = sorted({seen for _, seen in wanted})
        for start in range(0, len(values), _CHUNK):
            query = select(w.rule_id, w.witness).where(
                w.rule_id.in_(rule_ids), w.witness.in_(values[start : start + _CHUNK])
            )
            known.update((int(rule_id), seen) for rule_id, seen in conn.execute(query))
        fresh = sorted(wanted - known)
        if fresh:
            dialect = _upsert_dialect(conn.dialect.name)
            conn.execute(
                dialect.insert(rule_witnesses_table).on_conflict_do_nothing(
                    index_elements=["rule_id", "witness"]
                ),
                [{"rule_id": rule_id, "witness": seen} for rule_id, seen in fresh],
            )
        return dict(Counter(rule_id for rule_id, _ in fresh))

    def _read_rule(self, conn: Connection, rule: UrlRule) -> StoredRule:
        query = select(url_rules_table).where(self._where_rule(rule))  # type: ignore[arg-type]
        return _stored(conn.execute(query).mappings().one())

    def activate(self, rule: UrlRule) -> StoredRule:
        """A candidate with no counterexample becomes active (any other state stays)."""
        r = url_rules_table.c
        with self._connection(write=True) as conn:
            conn.execute(
                update(url_rules_table)
                .where(self._where_rule(rule))  # type: ignore[arg-type]
                .where(r.state == RuleState.CANDIDATE.value, r.counterexamples == 0)
                .values(state=RuleState.ACTIVE.value, updated_at=datetime.now(UTC))
            )
            return self._read_rule(conn, rule)

    def set_state(self, rule_id: int, state: RuleState) -> StoredRule:
        """Set a rule's state by hand (``rules pin`` / ``rules ban``); StoreError when there
        is no such rule."""
        if not self.has_tables():
            raise StoreError(f"{self._where} has no URL rules")
        with self._connection(write=True) as conn:
            changed = conn.execute(
                update(url_rules_table)
                .where(url_rules_table.c.id == rule_id)
                .values(state=state.value, updated_at=datetime.now(UTC))
            ).rowcount
            if not changed:
                raise StoreError(f"{self._where} has no URL rule {rule_id}")
            row = (
                conn.execute(select(url_rules_table).where(url_rules_table.c.id == rule_id))
                .mappings()
                .one()
            )
        return _stored(row)

    def record_skips(self, skips: Sequence[SkippedRequest]) -> None:
        """Record skipped requests (each rule stored first if new) and count them as
        fetches saved (a URL skipped again in a later crawl saved a fetch again; it is
        listed once)."""
        if not skips:
            return
        with self._connection(write=True) as conn:
            self._write_skips(conn, skips, datetime.now(UTC))

    def _write_skips(
        self, conn: Connection, skips: Sequence[SkippedRequest], now: datetime
    ) -> None:
        self._upsert(conn, (skip.rule for skip in skips), now)
        ids = self._ids(conn, list(dict.fromkeys(skip.rule for skip in skips)))
        rows = [
            {"rule_id": ids[skip.rule], "url": skip.url, "skipped_at": now}
            for skip in {(skip.rule, skip.url): skip for skip in skips}.values()
        ]
        dialect = _upsert_dialect(conn.dialect.name)
        conn.execute(
            dialect.insert(skipped_requests_table).on_conflict_do_nothing(
                index_elements=["rule_id", "url"]
            ),
            rows,
        )
        counts = Counter(ids[rule] for rule, _ in {(skip.rule, skip.url) for skip in skips})
        conn.execute(
            _ADD_SAVED,
            [
                {"b_id": rule_id, "b_saved": count, "b_now": now}
                for rule_id, count in sorted(counts.items())
            ],
        )

    def take_skipped(self, rule: UrlRule) -> list[str]:
        """The URLs skipped under ``rule``, removed from the table (they are being fetched)."""
        s = skipped_requests_table.c
        with self._connection(write=True) as conn:
            row = conn.execute(select(url_rules_table.c.id).where(self._where_rule(rule))).first()  # type: ignore[arg-type]
            if row is None:
                return []
            urls = [url for (url,) in conn.execute(select(s.url).where(s.rule_id == row[0]))]
            conn.execute(skipped_requests_table.delete().where(s.rule_id == row[0]))
        return sorted(urls)


@dataclass(slots=True)
class _Evidence:
    """One rule's deltas added up (:meth:`UrlRuleStore.record`)."""

    support: int = 0
    counterexamples: int = 0
    sampled_checks: int = 0
    witnesses: set[str] = field(default_factory=set)


def _merge(deltas: Sequence[RuleDelta]) -> dict[UrlRule, _Evidence]:
    """The deltas by rule, in first-seen order (a rule given twice adds up)."""
    merged: dict[UrlRule, _Evidence] = {}
    for delta in deltas:
        evidence = merged.setdefault(delta.rule, _Evidence())
        evidence.support += delta.support
        evidence.counterexamples += delta.counterexamples
        evidence.sampled_checks += delta.sampled_checks
        evidence.witnesses.update(delta.witnesses)
    return merged


_columns = url_rules_table.c
_ADD_EVIDENCE = (
    update(url_rules_table)
    .where(_columns.id == bindparam("b_id"))
    .values(
        support=_columns.support + bindparam("b_support"),
        counterexamples=_columns.counterexamples + bindparam("b_counterexamples"),
        sampled_checks=_columns.sampled_checks + bindparam("b_sampled"),
        updated_at=bindparam("b_now"),
    )
)
"""One rule's counts added in SQL (executemany: one statement for every rule of a batch)."""
_ADD_SAVED = (
    update(url_rules_table)
    .where(_columns.id == bindparam("b_id"))
    .values(
        fetches_saved=_columns.fetches_saved + bindparam("b_saved"), updated_at=bindparam("b_now")
    )
)
"""Fetches a rule saved, added in SQL (executemany)."""
_RETIRE = (
    update(url_rules_table)
    .where(_columns.state.in_(_RETIRABLE))
    .values(state=RuleState.RETIRED.value)
)
"""Retire the rules it is narrowed to, unless a user pinned or banned them."""


def _stored(row: object) -> StoredRule:
    values = dict(row)  # type: ignore[call-overload]
    return StoredRule(
        id=int(values["id"]),
        rule=UrlRule(values["host"], values["kind"], values["pattern"]),
        state=RuleState(values["state"]),
        support=int(values["support"]),
        counterexamples=int(values["counterexamples"]),
        fetches_saved=int(values["fetches_saved"]),
        sampled_checks=int(values["sampled_checks"]),
        created_at=values["created_at"],
        updated_at=values["updated_at"],
    )


def _upsert_dialect(name: str) -> ModuleType:
    """The dialect module whose ``insert`` has ``ON CONFLICT`` for this back-end, imported
    when first used: a crawl on SQLite never loads PostgreSQL's dialect (~0.06 s CPU)."""
    if name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql
    from sqlalchemy.dialects import sqlite

    return sqlite
