"""``simhash-filter``: the argument parser, dispatch, and the error → exit code rules.

Exit codes: 0 ok, 1 runtime or database error (one line on stderr; the traceback only
with ``--debug``), 2 usage error (argparse's own message).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from simhash_filter import __version__
from simhash_filter.cli import audit, compare, corpus, importing, options, queries, report, rules
from simhash_filter.cli.common import UsageError, database_url, describe_error
from simhash_filter.cli.output import Mode, Output
from simhash_filter.index.schemes import INDEX_KINDS, LSH_CANDIDATE_DISTANCE
from simhash_filter.store.urls import DEFAULT_DATABASE_URL, redact

PROG = "simhash-filter"
DATABASE_ENV = "SIMHASH_FILTER_DATABASE_URL"

Command = Callable[[argparse.Namespace, Output], int]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; ``--db``, ``--debug`` and the output flags are accepted
    before or after the command name."""
    default_db = os.environ.get(DATABASE_ENV) or DEFAULT_DATABASE_URL

    def common(suppress: bool) -> argparse.ArgumentParser:
        parent = argparse.ArgumentParser(add_help=False)
        default = argparse.SUPPRESS if suppress else None
        parent.add_argument(
            "--db",
            metavar="URL",
            type=options.database,
            default=default if suppress else default_db,
            help=f"database URL (default: ${DATABASE_ENV} or {DEFAULT_DATABASE_URL}); "
            "a plain file path means a SQLite file",
        )
        parent.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS if suppress else False,
            help="show the traceback of an error",
        )
        return parent

    def output(suppress: bool) -> argparse.ArgumentParser:
        parent = argparse.ArgumentParser(add_help=False)
        group = parent.add_mutually_exclusive_group()
        default = argparse.SUPPRESS if suppress else Mode.TABLE
        group.add_argument(
            "--json",
            dest="mode",
            action="store_const",
            const=Mode.JSON,
            default=default,
            help="print one JSON document",
        )
        group.add_argument(
            "--nl",
            dest="mode",
            action="store_const",
            const=Mode.NL,
            default=default,
            help="print one JSON object per line",
        )
        return parent

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Query, inspect and maintain a simhash-filter near-duplicate database.",
        parents=[common(False), output(False)],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    shared = [common(True), output(True)]

    def limit(p: argparse.ArgumentParser, default: int) -> None:
        p.add_argument(
            "--limit",
            type=options.count,
            default=default,
            metavar="N",
            help=f"at most N (0: all; default {default})",
        )

    def command(name: str, handler: Command, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=shared, help=help_text, description=help_text)
        p.set_defaults(handler=handler, parser=p)
        return p

    def domains(p: argparse.ArgumentParser, default: int) -> None:
        p.add_argument(
            "--domains",
            type=options.count,
            default=default,
            metavar="N",
            help=f"show the N domains with the most dropped pages (0: all; default {default})",
        )

    p = command("stats", queries.stats, "pages kept, duplicates dropped, domains, scheme, size")
    domains(p, 10)

    p = command("dupes", queries.dupes, "dropped pages, newest first, with what they duplicate")
    p.add_argument("--domain", help="only pages of this host (example.com, www.example.com)")
    p.add_argument(
        "--since",
        type=options.since,
        metavar="WHEN",
        help="only pages dropped since WHEN: an ISO date/time (local time unless it has "
        "an offset) or an age such as 30m, 12h, 7d",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="say why each page was dropped: what judged it, the index table and key that "
        "found its candidate, the boilerplate flag, the stored texts' similarity "
        "(needs stored texts)",
    )
    limit(p, 50)

    p = command("show", audit.show, "the stored text of a kept or dropped page")
    p.add_argument("url", metavar="URL")

    p = command(
        "diff",
        audit.diff,
        "two pages' stored texts side by side: changed passages marked, distance, similarity",
    )
    p.add_argument("a", metavar="A", help="URL of a kept or dropped page")
    p.add_argument("b", metavar="B", help="URL of another kept or dropped page")

    def target(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "target",
            nargs="?",
            metavar="TARGET",
            help=f"{what}: a URL in the database, a 16-digit hex fingerprint, "
            "an HTML or text file, or - for stdin",
        )
        p.add_argument("--text", help="use this text instead of TARGET")
        p.add_argument(
            "--as",
            dest="input_type",
            choices=("auto", "html", "text"),
            default="auto",
            help="read a file or stdin as HTML or as plain text (default: guess)",
        )

    p = command(
        "near", compare.near, "stored pages within distance k of a page, text or fingerprint"
    )
    target(p, "what to compare")
    p.add_argument(
        "-k",
        "--k",
        type=options.distance,
        metavar="K",
        help="maximum Hamming distance (default: the database's max_distance)",
    )
    limit(p, 50)

    p = command("lookup", queries.lookup, "is a URL in the database, and what is known about it")
    p.add_argument("url", metavar="URL")

    p = command(
        "clusters",
        queries.clusters,
        "groups of near-duplicates: kept pages with their dropped duplicates and with "
        "kept pages within k of each other, largest first",
    )
    p.add_argument(
        "-k",
        "--k",
        type=options.distance,
        metavar="K",
        help="link kept pages within K of each other (default and maximum: the "
        "database's max_distance)",
    )
    p.add_argument(
        "--min-size",
        type=options.positive_count,
        default=2,
        metavar="N",
        help="clusters of N pages or more",
    )
    limit(p, 20)

    p = command(
        "fingerprint",
        compare.fingerprint,
        "the fingerprint of a file, stdin, a text or a stored URL; --features explains it",
    )
    target(p, "what to fingerprint")
    p.add_argument(
        "--features",
        type=options.positive_count,
        nargs="?",
        const=20,
        metavar="N",
        help="also list the N heaviest weighted features (default 20)",
    )

    p = command(
        "import",
        importing.import_,
        "add a corpus (JSON Lines, HTML files, WARC) through the crawl's check-and-add",
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="*.jsonl[.gz] (url + text or html), a folder or *.html files, *.warc[.gz], "
        "or - for JSON Lines on stdin",
    )
    p.add_argument(
        "--format", choices=("auto", "jsonl", "html", "warc"), default="auto", help="source format"
    )
    p.add_argument("--url-field", default="url", metavar="NAME", help="JSON field of the URL")
    p.add_argument("--text-field", default="text", metavar="NAME", help="JSON field of the text")
    p.add_argument("--html-field", default="html", metavar="NAME", help="JSON field of the HTML")
    p.add_argument(
        "--base-url",
        metavar="URL",
        help="URL of an HTML folder's root (default: the files' file:// URIs)",
    )
    p.add_argument(
        "--max-distance",
        type=options.max_distance,
        metavar="K",
        help=f"candidate distance k1 of a new database's match rule (default "
        f"{LSH_CANDIDATE_DISTANCE}: any, as a crawl's); must match an existing one",
    )
    p.add_argument(
        "--blocks",
        type=options.blocks,
        metavar="B",
        help="band blocks of a new database (default: its index kind's); must match an "
        "existing one",
    )
    p.add_argument(
        "--batch-size",
        type=options.batch_size,
        default=500,
        metavar="N",
        help="pages per transaction (default 500)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=options.jobs,
        default=1,
        metavar="N",
        help="extract and fingerprint in N processes (default 1)",
    )
    p.add_argument(
        "--store-text",
        action="store_true",
        help="keep each page's main text (compressed, at most 64 KiB) for show, diff and "
        "report, as SIMHASH_FILTER_STORE_TEXT does in a crawl",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--create",
        action="store_true",
        help="add simhash-filter's tables to a database that holds other tables "
        "(without it, such a database is refused and left as it is)",
    )

    p = command(
        "report",
        report.report,
        "one self-contained HTML file: totals, domains, drops over time, similarity, "
        "clusters, a sample of drops side by side",
    )
    p.add_argument("--out", "-o", default="report.html", metavar="FILE", help="where to write it")
    p.add_argument(
        "--samples",
        type=options.count,
        default=20,
        metavar="N",
        help="drops shown side by side (default 20): half the nearest the threshold, "
        "half at random",
    )
    domains(p, 50)

    rules.add_command(command)

    p = command("export", corpus.export, "pages and/or duplicates as JSON Lines or CSV")
    p.add_argument("--pages", action="store_true", help="export the kept pages")
    p.add_argument("--duplicates", action="store_true", help="export the dropped pages")
    p.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        help="output format (default: csv for -o *.csv, else jsonl)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    p = command("reindex", corpus.reindex, "rebuild the band index for another scheme (b, k)")
    p.add_argument(
        "--index",
        choices=INDEX_KINDS,
        help="the index kind: permuted tables (Manku et al.) or multi-index hashing "
        "(Norouzi et al.); default: the current one",
    )
    p.add_argument(
        "--blocks",
        type=options.blocks,
        metavar="B",
        help="blocks b (default: the index kind's own: for permuted tables the fewest whose "
        "keys have 16 bits or more)",
    )
    p.add_argument(
        "--max-distance",
        type=options.max_distance,
        metavar="K",
        help="maximum distance k (default: the current one)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (``simhash-filter`` calls ``sys.exit`` with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else 2
    out = Output(args.mode)
    try:
        return int(args.handler(args, out))
    except UsageError as exc:
        args.parser.print_usage(sys.stderr)
        out.note(f"{args.parser.prog}: error: {exc}")
        return 2
    except KeyboardInterrupt:
        out.note(f"{PROG}: interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep Python from
        # complaining again while flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        message = describe_error(exc, args.db)
        if args.debug:  # the traceback too, without the database's credentials
            out.note(redact(traceback.format_exc().rstrip(), database_url(args.db)))
        out.note(f"{PROG}: error: {message}")
        return 1
