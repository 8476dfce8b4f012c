"""``rules``: the URL rules in a database, and a user's say over them.

    simhash-filter rules [--host HOST] [--state STATE]    list them
    simhash-filter rules pin ID                            always apply it, never retire it
    simhash-filter rules ban ID                            never apply it
    simhash-filter rules reset ID                          back to a candidate, evidence kept
    simhash-filter rules learn                             new rules from the logged drops

The command's options are the decorators above its handler.
"""

from __future__ import annotations

import argparse

from simhash_filter.cli import options, skips
from simhash_filter.cli.command import command, option
from simhash_filter.cli.common import CommandError, UsageError, existing_store
from simhash_filter.cli.output import Column, Fields, Output, Record, Table, iso_time
from simhash_filter.store import FingerprintStore
from simhash_filter.store.url_rules import RuleDelta, StoredRule, UrlRuleStore
from simhash_filter.urls.learning import learn_from_pairs
from simhash_filter.urls.rules import RuleState

__all__ = ["RULE_COLUMNS", "learn", "rule_row", "rules"]

RULE_COLUMNS = (
    Column("id", "id", right=True),
    Column("host", "host"),
    Column("kind", "kind"),
    Column("pattern", "pattern"),
    Column("state", "state"),
    Column("support", "support", right=True),
    Column("counterexamples", "counter", right=True),
    Column("fetches_saved", "saved", right=True),
    Column("sampled_checks", "checked", right=True),
    Column("updated_at", "updated"),
)
_ACTIONS = {"pin": RuleState.PINNED, "ban": RuleState.BANNED, "reset": RuleState.CANDIDATE}
_SAMPLES = 20  # skipped URLs `rules show` lists by default
_HISTORY = 100_000  # stored pages of a host a learned rule is checked against


def rule_row(stored: StoredRule) -> Record:
    """A rule as the command line shows it."""
    return {
        "id": stored.id,
        "host": stored.rule.host,
        "kind": stored.rule.kind,
        "pattern": stored.rule.pattern,
        "state": stored.state.value,
        "support": stored.support,
        "counterexamples": stored.counterexamples,
        "fetches_saved": stored.fetches_saved,
        "sampled_checks": stored.sampled_checks,
        "created_at": iso_time(stored.created_at),
        "updated_at": iso_time(stored.updated_at),
    }


@command("rules")
@option("action", nargs="?", choices=("list", "show", "learn", *_ACTIONS), default="list")
@option("rule_id", nargs="?", type=int, metavar="ID", help="the rule (its id)")
@option("--host", help="only the rules of this host")
@option("--state", choices=[state.value for state in RuleState], help="only rules in this state")
@option(
    "--samples",
    type=options.count,
    default=_SAMPLES,
    metavar="N",
    help=f"show: at most N of the URLs it skipped, newest first (0: all; default {_SAMPLES})",
)
@option(
    "--min-support",
    type=int,
    default=3,
    metavar="N",
    help="learn: supporting pairs a new rule needs to become active (default 3, as the "
    "crawl's SIMHASH_FILTER_RULE_MIN_SUPPORT)",
)
def rules(args: argparse.Namespace, out: Output) -> int:
    """URL rules: what the crawl skips before downloading, with support, counterexamples
    and fetches saved; learn new ones from the logged drops, pin, ban or reset one

    rules [--host HOST] [--state STATE]   list them
    rules show ID [--samples N]           one rule, with URLs it skipped and where they map
    rules learn [--min-support N]         new rules from the drops the database logged
    rules pin ID                          always apply it, never retire it
    rules ban ID                          never apply it
    rules reset ID                        a candidate again, its evidence kept
    """
    with existing_store(args) as store:
        url_rules = UrlRuleStore(store)
        if args.action == "list":
            if args.rule_id is not None:
                raise UsageError("an ID goes with pin, ban or reset")
            states = None if args.state is None else [RuleState(args.state)]
            host = args.host.lower() if args.host else None
            found = url_rules.rules(states=states, host=host)
            out.rows(RULE_COLUMNS, (rule_row(rule) for rule in found), empty="no URL rules")
            return 0
        if args.action == "learn":
            learned = learn(store, url_rules, args.min_support)
            out.rows(RULE_COLUMNS, (rule_row(rule) for rule in learned), empty="no new URL rules")
            return 0
        if args.rule_id is None:
            raise UsageError(f"rules {args.action} needs the ID of a rule (see `rules`)")
        found_rule = url_rules.rule(args.rule_id)
        if found_rule is None:
            raise CommandError(f"no URL rule {args.rule_id} in {store.display_url}")
        if args.action == "show":
            _show(store, url_rules, found_rule, args.samples, out)
            return 0
        changed = url_rules.set_state(args.rule_id, _ACTIONS[args.action])
        out.rows(RULE_COLUMNS, [rule_row(changed)], empty="no URL rules")
    return 0


def _show(
    store: FingerprintStore, url_rules: UrlRuleStore, stored: StoredRule, samples: int, out: Output
) -> None:
    """``rules show ID``: the rule, then URLs it skipped with the form each maps to and the
    kept page behind it (a retired rule's skips were fetched again: none are left)."""
    skipped = url_rules.skipped_samples(stored.id, samples or None)
    rows: list[Record] = []
    for url, when in skipped:
        form = skips.form_under(store, url, [stored])
        rows.append(
            {
                "url": url,
                "skipped_at": iso_time(when),
                "maps_to": form,
                "kept_url": skips.kept_behind(store, form),
            }
        )
    document = {**rule_row(stored), "skipped": rows}
    title = f"URLs it skipped (newest {len(rows)} of {stored.fetches_saved} fetches saved)"
    if stored.state is RuleState.RETIRED:
        title += "; a retired rule's skipped URLs were fetched again"
    out.document(
        document,
        [
            Fields([(column.header, document[column.key]) for column in RULE_COLUMNS]),
            Table(
                [
                    Column("skipped_at", "skipped at"),
                    Column("url", "url"),
                    Column("maps_to", "maps to"),
                    Column("kept_url", "kept page"),
                ],
                rows,
                title=title,
            ),
        ],
    )
    if not rows:
        out.note(f"(no skipped URL of rule {stored.id} is recorded)")


def learn(store: FingerprintStore, url_rules: UrlRuleStore, min_support: int) -> list[StoredRule]:
    """New rules from the drops a database logged (a crawl made before URL rules, say): each
    stored with its support and counterexamples, active when it has ``min_support`` pairs and
    no counterexample. Rules already stored are left to the crawls' own evidence."""
    if min_support < 1:
        raise UsageError(f"--min-support must be >= 1, got {min_support}")
    known = {stored.rule for stored in url_rules.rules()}
    active = [s.rule for s in url_rules.rules(states=[RuleState.ACTIVE, RuleState.PINNED])]
    pairs = [(drop.url, drop.duplicate_of_url) for drop in store.duplicates()]
    history = learn_from_pairs(
        pairs,
        lambda host: url_rules.kept_urls(host, _HISTORY),
        min_support=min_support,
        base=active,
    )
    learned = [rule for rule in history if rule.rule not in known]
    stored = url_rules.record(
        [RuleDelta(rule.rule, rule.support, rule.counterexamples) for rule in learned]
    )
    return [
        url_rules.activate(rule.rule) if rule.qualified else row  # its reverse never with it
        for rule, row in zip(learned, stored, strict=True)
    ]
