"""``orchestra upgrade RUN``: move a run to the code this process has, once its journal
shows that no completed step would be asked otherwise (``coordinator.upgrade``)."""

from __future__ import annotations

import argparse
from typing import Any

from orchestra.cli.exit_codes import EXIT_FAILED, EXIT_OK


def add_parser(sub: Any) -> None:
    """Only argparse here: the parser is built for `--help` too, which must stay instant."""
    p = sub.add_parser("upgrade", help="move a run to this code's version, if its journal "
                                       "would replay the same (nothing is called)")
    p.add_argument("--db", default=None,
                   help="the store: a file, or postgresql://user:pass@host:port/db "
                        "(default $ORCHESTRA_DB, else ./orchestra.db)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--patched", action="store_true",
                   help="compare the run's completed steps with what this code asks before "
                        "its roles' patches (patched(name) False): differences that all sit "
                        "behind patches move")
    p.add_argument("run", help="run id")


async def cmd_upgrade(args: argparse.Namespace) -> int:
    """Check the run against the pipeline as this process builds it; move it or say which
    step differs (exit 1, nothing moved)."""
    from orchestra.cli.commands import open_store
    from orchestra.cli.inspect_cmds import emit, resolve_run
    from orchestra.coordinator.pipeline import load_pipeline
    from orchestra.coordinator.upgrade import upgrade_run
    from orchestra.store import url as store_url

    async with open_store(args, must_exist=True) as store:
        run = await store.get_run(await resolve_run(store, args.run))
        version = load_pipeline(run.pipeline, run.input).fingerprint
        check, after = await upgrade_run(store, run.id, version, patched=args.patched)
    data = {"run": run.id, "from": check.old, "to": check.new, "moved": check.moves,
            "checked": check.checked,
            "difference": None if check.difference is None else str(check.difference)}
    if check.difference is not None:
        where = f"--db {store_url.label(args.db)}"
        emit(args, data, f"run {run.id} stays on version {check.old}: under version "
             f"{check.new} {check.difference} (after {check.checked} completed step(s) "
             f"that would replay the same). Nothing moved. Finish it with a worker of "
             f"version {check.old} (`orchestra worker {where}` running that code), "
             + ("or start a new run on the new code" if args.patched else
                "or put the change behind patched(...) and `orchestra upgrade "
                f"{run.id} --patched`"))
        return EXIT_FAILED
    text = (f"run {run.id} is already on version {check.new}" if check.old == check.new else
            f"run {run.id} moved from version {check.old} to {after.version}: "
            f"{check.checked} completed step(s) checked, none would be asked otherwise"
            + (" (before the patches)" if args.patched else ""))
    emit(args, data, text)
    return EXIT_OK
