"""``orchestra copy``: move runs, with their whole history, to another store (say, from
the SQLite default up to PostgreSQL)."""

from __future__ import annotations

import argparse
from typing import Any

from orchestra.cli.exit_codes import EXIT_OK


def add_parser(sub: Any) -> None:
    """Only argparse here: the parser is built for `--help` too, which must stay instant."""
    p = sub.add_parser("copy", help="copy runs with their whole history to another store "
                                    "(e.g. SQLite -> PostgreSQL)")
    p.add_argument("--from", dest="source", required=True, metavar="STORE",
                   help="the store to copy from (a file, or postgresql://...)")
    p.add_argument("--to", dest="target", required=True, metavar="STORE",
                   help="the store to copy into (created if needed)")
    p.add_argument("--run", dest="runs", action="append", default=None, metavar="ID",
                   help="copy this run (repeatable; default: every run)")
    p.add_argument("--skip-existing", action="store_true",
                   help="skip runs the target already has instead of refusing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(db=None)


async def cmd_copy(args: argparse.Namespace) -> int:
    """Each run commits alone in the target: an interrupted copy leaves whole runs only."""
    from orchestra.cli.inspect_cmds import emit
    from orchestra.store import url as store_url
    from orchestra.store.copy import Copied, copy_runs

    source, target = store_url.label(args.source), store_url.label(args.target)

    def report(c: Copied) -> None:
        if not args.json:
            print(f"run {c.run_id}: " + (f"copied ({c.rows} rows)" if c.copied
                                         else "already there, skipped"))

    done = await copy_runs(args.source, args.target, args.runs,
                           skip_existing=args.skip_existing, on_copied=report)
    copied = [c.run_id for c in done if c.copied]
    emit(args, {"from": source, "to": target, "copied": copied,
                "skipped": [c.run_id for c in done if not c.copied]},
         f"copied {len(copied)} run(s) from {source} to {target}")
    return EXIT_OK
