"""What Ctrl-C says once a command that drives runs has stopped them.

Each drive hands its tasks' leases back as it stops (the tasks are pending again and the
run ``running``), so the message says who continues them: ``orchestra resume`` for the
one run of ``run``/``resume``/``worker --run``, any worker or server on the same store
for the runs a ``worker`` or ``serve`` process was serving.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from dataclasses import dataclass

from orchestra.store.url import label as store_label

SERVING_COMMANDS = frozenset({"worker", "serve"})


@dataclass(slots=True)
class Interrupt:
    """What a command driving runs has under way, recorded as it goes: what Ctrl-C
    stops, for the line :func:`interrupted` prints."""

    run_id: str | None = None
    """The run this command recorded or continues (``run`` and ``demo`` once it is
    created, ``resume``, ``fork``); from then on only a resume continues it."""
    serving: Collection[str] | None = None
    """The runs a ``worker`` serves now (its live table); None where not known (``serve``)."""


def interrupted(args: argparse.Namespace, state: Interrupt) -> str:
    """The line to print on stderr after Ctrl-C stopped ``args.command``."""
    db = store_label(args.db)
    run_id = state.run_id or getattr(args, "run", None)
    if args.command in SERVING_COMMANDS and not run_id:
        serving = state.serving
        n = None if serving is None else len(serving)
        if n == 0:
            return f"\ninterrupted; the {args.command} was serving no run."
        what = f"{n} run{'s' * (n != 1)}" if n else "its runs"
        who = "worker" if args.command == "worker" else "server"
        return (f"\ninterrupted; the {who} stopped {what} cleanly: another "
                f"`orchestra worker --db {db}` (or `orchestra serve`) on this store continues "
                f"{'it' if n == 1 else 'them'}.")
    hint = f" Resume with: orchestra resume {run_id} --db {db}" if run_id else ""
    return f"\ninterrupted; the run stopped cleanly.{hint}"
