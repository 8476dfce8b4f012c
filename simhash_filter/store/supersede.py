"""Supersede: keep the copy a cluster's canonical hints name in place of the page kept first.

``FingerprintStore.supersede(page, kept)`` runs after ``check_and_add`` called ``page`` a copy
of ``kept``. When the keep policy (core/keep.py) prefers ``page``, one write transaction swaps
them, under the locks check-and-add takes (SQLite's write lock; on PostgreSQL the advisory
locks of both URLs, of both pages' index keys and of the new page's probe keys, so a
concurrent check of a third copy runs wholly before or wholly after the swap):

1. the kept page is read again: when it changed or went meanwhile, nothing happens;
2. the new page's own drops of it go (it is about to be kept);
3. the new page is decided as check-and-add decides it (batch.decide_batch) with the kept page
   out of sight: it must come out NEW, else (it copies yet another stored page, or its URL is
   stored) the transaction rolls back and nothing happens;
4. the kept page becomes a ``superseded`` row of ``duplicates`` naming the new page, with its
   stored text; every drop that named it names the new page; its band keys and row go.

Two near-duplicates are still never both kept, and every drop names a kept page. The match
decision itself (batch.py, decide_function.sql) is unchanged: this is an operation of its own.

``FingerprintStore.mark_canonical(page, kept)`` is the default policy's (``KEEP =
"canonical"``): the kept page was emitted and stays; when the keep policy prefers the new
page, its drop row (the latest naming ``kept``) becomes a ``canonical`` row: the store records
which URL is the cluster's canonical, and nothing is swapped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import (
    BigInteger,
    Connection,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)

from simhash_filter.core.keep import ClusterPage, defers, prefers_new
from simhash_filter.index.schemes import IndexScheme, TableKey

from . import passage_index
from .batch import BatchIO, Changes, Judge, KeyHit, RowToCheck, StoredPage, decide_batch
from .encoding import from_sql_int
from .keep_evidence import RuleForms, disproved_hints
from .locks import MAX_KEY_LOCKS, WriteLocks, WriteTransactions, write_locks
from .records import Match, Supersession, VerdictKind
from .schema import (
    CANONICAL,
    SUPERSEDED,
    UInt64,
    drop_texts_table,
    duplicates_table,
    keys_table,
    page_texts_table,
    pages_table,
)
from .statements import Compiled, Execute, SqlBatchIO, Statements, connection_execute
from .texts import has_text_tables, write_texts

__all__ = ["KeptCluster", "KeptPage", "NotSuperseded", "Superseder", "read_cluster", "read_kept"]


class NotSuperseded(Exception):
    """The swap was called off inside its transaction (rolled back): nothing changed."""


class KeptPage(NamedTuple):
    """The kept page a supersede would replace, as read before and again inside the swap."""

    page_id: int
    url: str
    domain: str
    fingerprint: int
    sketch: bytes | None
    canonical_url: str | None


_p, _d = pages_table.c, duplicates_table.c
_KEPT = select(_p.id, _p.url, _p.domain, _p.fingerprint, _p.sketch, _p.canonical_url).where(
    _p.id == bindparam("p"), _p.dropped_at.is_(None)
)  # built once
_KEPT_CLUSTER = _KEPT.add_columns(
    *(
        select(func.count())
        .select_from(duplicates_table)
        .where(
            _d.duplicate_of == bindparam("p"),
            _d.canonical_url == bindparam(name),
            _d.url != bindparam("new"),
        )
        .scalar_subquery()
        for name in ("kept", "new")
    )
)
"""The kept page ``p`` and its cluster's votes: how many of its logged copies, other than
those of URL ``new``, declare ``kept`` (the kept page's URL) or ``new`` their canonical."""


class KeptCluster(NamedTuple):
    """The kept page and its cluster's votes, as a keep decision reads them."""

    page: KeptPage
    votes: dict[str, int]  # declared canonical -> how many logged copies declare it


def read_cluster(
    execute: Execute, compiled: Compiled, page_id: int, kept_url: str, new_url: str
) -> KeptCluster | None:
    """The kept page ``page_id`` and how many of its logged copies (other than those of URL
    ``new_url``) declare ``kept_url`` or ``new_url`` their canonical, in one statement
    (``compiled``: :data:`_KEPT_CLUSTER` for the store's dialect); None when it left the
    index or its URL is no longer ``kept_url``."""
    rows = execute(compiled.sql, compiled.bind([page_id, kept_url, new_url]))
    if not rows:
        return None
    page_id, url, domain, fingerprint, sketch, declared, for_kept, for_new = rows[0]
    if url != kept_url:
        return None
    page = KeptPage(
        page_id,
        url,
        domain,
        from_sql_int(fingerprint),
        None if sketch is None else bytes(sketch),
        declared,
    )
    votes = {u: int(n) for u, n in ((kept_url, for_kept), (new_url, for_new)) if n}
    return KeptCluster(page, votes)


def read_kept(conn: Connection, page_id: int) -> KeptPage | None:
    """The kept page ``page_id``, or None (also when it left the index: ``dropped_at``)."""
    row = conn.execute(_KEPT, {"p": page_id}).first()
    if row is None:
        return None
    page_id, url, domain, fingerprint, sketch, declared = row
    return KeptPage(
        page_id, url, domain, fingerprint, None if sketch is None else bytes(sketch), declared
    )


class _Without(BatchIO):
    """A :class:`BatchIO` that does not see one page (the page being superseded)."""

    def __init__(self, io: BatchIO, page_id: int) -> None:
        self._io = io
        self._hidden = page_id

    def pages_by_url(self, urls: Sequence[str]) -> Iterable[StoredPage]:
        return [page for page in self._io.pages_by_url(urls) if page.page_id != self._hidden]

    def probe(self, keys: Collection[TableKey]) -> Mapping[TableKey, Sequence[KeyHit]]:
        return {
            key: [hit for hit in hits if hit.page_id != self._hidden]
            for key, hits in self._io.probe(keys).items()
        }

    def pages_by_id(self, page_ids: Sequence[int]) -> Iterable[StoredPage]:
        return self._io.pages_by_id([i for i in page_ids if i != self._hidden])

    def write(self, changes: Changes) -> Mapping[int, int]:
        return self._io.write(changes)


class Superseder:
    """The supersede operation of one store (see the module doc)."""

    def __init__(
        self,
        transactions: WriteTransactions,
        statements: Statements,
        *,
        scheme: IndexScheme,
        judge: Judge,
    ) -> None:
        self._transactions = transactions
        self._statements = statements
        self._scheme = scheme
        self._judge = judge
        self._sqlite = statements.dialect.name == "sqlite"
        self._forms = RuleForms(statements.dialect)
        self.kept_cluster = Compiled(_KEPT_CLUSTER, statements.dialect, ["p", "kept", "new"])

    def supersede(
        self,
        reads: Callable[[], AbstractContextManager[Execute]],
        new: RowToCheck,
        declared: str | None,
        text: bytes | None,
        kept: Match,
        now: datetime,
    ) -> Supersession | None:
        """Keep ``new`` in place of ``kept`` when the keep policy prefers it: decided first
        on reads without locks (most copies lose there), then swapped (:meth:`run`);
        ``reads`` opens a cursor (:data:`Execute`: each statement its own snapshot)."""
        with reads() as execute:
            old = self.preferred_over(execute, kept.page_id, kept.url, new, declared)
        if old is None:
            return None
        return self.run(old, new, declared=declared, text=text, kept=kept, now=now)

    def mark_canonical(
        self,
        reads: Callable[[], AbstractContextManager[Execute]],
        new: RowToCheck,
        declared: str | None,
        kept: Match,
    ) -> bool:
        """Record ``new``, dropped as a copy of ``kept``, as its cluster's canonical when the
        keep policy prefers it (see the module doc): True when its drop row was marked.
        Decided on ``reads`` (as :meth:`supersede`): it runs on every copy, and a read
        transaction of its own cost more than the check's (issue 45); the mark is a write
        of its own, which finds the drop row again."""
        with reads() as execute:
            if self.stays_a_copy(execute, new.url, declared, kept):
                return False  # most copies stop here: one statement
            old = self.preferred_over(execute, kept.page_id, kept.url, new, declared)
        if old is None:
            return False
        locks = None if self._sqlite else write_locks([(new.url, (), ())])
        return self._transactions.run(lambda conn: _mark(conn, new.url, old.page_id), locks=locks)

    def stays_a_copy(self, execute: Execute, url: str, declared: str | None, kept: Match) -> bool:
        """True when the page of canonical ``url``, a copy of ``kept``, names another URL
        its canonical (``declared``) and the store does not disprove that hint: the keep
        policy keeps it a copy whatever the kept page, the votes and the rules say
        (core/keep.py: :func:`defers`), so :meth:`supersede` need not run. One statement
        a hint, on ``execute`` (a cursor: no transaction, no lock)."""
        if declared is None or not defers(ClusterPage(url, declared)):
            return False
        others = {declared} - {kept.url, url}
        return declared not in disproved_hints(execute, self._statements, kept.page_id, others)

    def preferred_over(
        self, execute: Execute, page_id: int, url: str, new: RowToCheck, declared: str | None
    ) -> KeptPage | None:
        """The kept page ``page_id`` (of URL ``url``) when the keep policy prefers ``new`` in
        its place, with the cluster's votes, the hints the store disproves and, on a tie,
        the URL rules' forms, read on ``execute``; None when it does not, or the kept page
        went."""
        cluster = read_cluster(execute, self.kept_cluster, page_id, url, new.url)
        if cluster is None:
            return None
        old = cluster.page
        hints = {h for h in (declared, old.canonical_url) if h is not None}
        preferred = prefers_new(
            ClusterPage(old.url, old.canonical_url),
            ClusterPage(new.url, declared),
            cluster.votes,
            disproved=disproved_hints(
                execute, self._statements, old.page_id, hints - {old.url, new.url}
            ),
            forms=lambda: self._forms(execute, old.url, new.url),
        )
        return old if preferred else None

    def locks(self, old: KeptPage, new: RowToCheck) -> WriteLocks | None:
        """The swap's advisory locks (None on SQLite, or the database-wide lock when there
        would be too many)."""
        if self._sqlite:
            return None
        old_keys = self._scheme.index_items(old.fingerprint, old.sketch)
        locks = write_locks([(old.url, old_keys, ()), (new.url, new.index_keys, new.probe_keys)])
        return locks if len(locks.ids) <= MAX_KEY_LOCKS else None

    def run(
        self,
        old: KeptPage,
        new: RowToCheck,
        *,
        declared: str | None,
        text: bytes | None,
        kept: Match,
        now: datetime,
    ) -> Supersession | None:
        """Swap ``old`` for ``new`` in one write transaction (None: called off)."""
        try:
            return self._transactions.run(
                lambda conn: self._swap(conn, old, new, declared, text, kept, now),
                locks=self.locks(old, new),
            )
        except NotSuperseded:
            return None

    def _swap(
        self,
        conn: Connection,
        before: KeptPage,
        new: RowToCheck,
        declared: str | None,
        text: bytes | None,
        kept: Match,
        now: datetime,
    ) -> Supersession:
        execute = connection_execute(conn)
        old = self.preferred_over(execute, before.page_id, before.url, new, declared)
        if old is None or old[:5] != before[:5]:
            raise NotSuperseded
        d, p = duplicates_table.c, pages_table.c
        texts = has_text_tables(conn)
        own_drops = select(d.id).where(d.url == new.url, d.duplicate_of == old.page_id)
        if texts:
            conn.execute(
                delete(drop_texts_table).where(drop_texts_table.c.duplicate_id.in_(own_drops))
            )
        conn.execute(
            delete(duplicates_table).where(d.url == new.url, d.duplicate_of == old.page_id)
        )
        io = _Without(SqlBatchIO(conn, self._statements), old.page_id)
        (verdict,) = decide_batch(
            [new], io, judge=self._judge, index_items=self._scheme.index_items, now=now
        )
        if verdict.kind is not VerdictKind.NEW:
            raise NotSuperseded  # rolls the deletes back
        new_id = conn.execute(select(p.id).where(p.url == new.url)).scalar_one()
        if declared is not None:
            conn.execute(update(pages_table).where(p.id == new_id).values(canonical_url=declared))
        if text is not None and texts:
            write_texts(conn, [verdict], [text], now)
        distance = (old.fingerprint ^ new.fingerprint).bit_count()
        superseded_id = conn.execute(
            insert(duplicates_table).returning(d.id),
            {
                "url": old.url,
                "domain": old.domain,
                "fingerprint": old.fingerprint,
                "duplicate_of": new_id,
                "distance": distance,
                "similarity": kept.similarity,
                "seen_at": now,
                "canonical_url": old.canonical_url,
                "kind": SUPERSEDED,
            },
        ).scalar_one()
        self._retire(conn, old, superseded_id, new_id, texts)
        return Supersession(old.url, new.url, old.page_id, new_id, distance, kept.similarity)

    def _retire(
        self, conn: Connection, old: KeptPage, superseded_id: int, new_id: int, texts: bool
    ) -> None:
        """The old page's text goes with its ``superseded`` row, the drops that named it name
        the new page, and its band keys and row go."""
        t = page_texts_table.c
        if texts:
            conn.execute(
                insert(drop_texts_table).from_select(
                    ["duplicate_id", "text"],
                    select(literal(superseded_id, BigInteger()), t.text).where(
                        t.page_id == old.page_id
                    ),
                )
            )
            passage_index.unindex_texts(conn, [old.page_id])  # (before: it reads the text)
            conn.execute(delete(page_texts_table).where(t.page_id == old.page_id))
        conn.execute(
            update(duplicates_table)
            .where(duplicates_table.c.duplicate_of == old.page_id)
            .values(duplicate_of=new_id)
        )
        if not self._statements.keys_in_rows:  # SQLite: the band rows (PostgreSQL: the row's)
            b = keys_table.c
            for table_no, key in self._scheme.index_items(old.fingerprint, old.sketch):
                conn.execute(
                    delete(keys_table).where(
                        b.table_no == table_no,
                        b.key == literal(key, UInt64()),
                        b.page_id == old.page_id,
                    )
                )
        conn.execute(delete(pages_table).where(pages_table.c.id == old.page_id))


def _mark(conn: Connection, url: str, kept_id: int) -> bool:
    """The latest drop of ``url`` as a copy of page ``kept_id`` becomes a ``canonical`` row."""
    d = duplicates_table.c
    latest = conn.execute(
        select(d.id)
        .where(d.url == url, d.duplicate_of == kept_id, d.kind.is_(None))
        .order_by(d.id.desc())
        .limit(1)
    ).scalar()
    if latest is None:
        return False
    conn.execute(update(duplicates_table).where(d.id == latest).values(kind=CANONICAL))
    return True
