"""``rules``: the URL rules in a database, and a user's say over them.

    simhash-filter rules [--host HOST] [--state STATE]    list them
    simhash-filter rules pin ID                            always apply it, never retire it
    simhash-filter rules ban ID                            never apply it
    simhash-filter rules reset ID                          back to a candidate, evidence kept

The command's options live here (:func:`add_command`), next to its handler.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from simhash_filter.cli.common import CommandError, UsageError, existing_store
from simhash_filter.cli.output import Column, Output, Record, iso_time
from simhash_filter.store.url_rules import StoredRule, UrlRuleStore
from simhash_filter.urls.rules import RuleState

__all__ = ["RULE_COLUMNS", "add_command", "rules"]

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


def add_command(
    command: Callable[
        [str, Callable[[argparse.Namespace, Output], int], str], argparse.ArgumentParser
    ],
) -> None:
    """Register ``rules`` with the command line's ``command(name, handler, help)``."""
    p = command(
        "rules",
        rules,
        "URL rules: what the crawl skips before downloading, with support, counterexamples "
        "and fetches saved; pin, ban or reset one",
    )
    p.add_argument("action", nargs="?", choices=("list", *_ACTIONS), default="list")
    p.add_argument("rule_id", nargs="?", type=int, metavar="ID", help="the rule (its id)")
    p.add_argument("--host", help="only the rules of this host")
    p.add_argument(
        "--state", choices=[state.value for state in RuleState], help="only rules in this state"
    )


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


def rules(args: argparse.Namespace, out: Output) -> int:
    """``rules``: list the URL rules, or pin, ban or reset one."""
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
        if args.rule_id is None:
            raise UsageError(f"rules {args.action} needs the ID of a rule (see `rules`)")
        if url_rules.rule(args.rule_id) is None:
            raise CommandError(f"no URL rule {args.rule_id} in {store.display_url}")
        changed = url_rules.set_state(args.rule_id, _ACTIONS[args.action])
        out.rows(RULE_COLUMNS, [rule_row(changed)], empty="no URL rules")
    return 0
