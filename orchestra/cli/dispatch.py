"""Which handler runs each ``orchestra`` command (those that drive runs, the store's
copy, and the read-only ones). Apart from ``main`` so that the handlers, which share
helpers with each other, never import the entry point that picks them."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from orchestra.cli import inspect_cmds
from orchestra.cli.commands import (
    cmd_cancel,
    cmd_fork,
    cmd_migrate,
    cmd_prune,
    cmd_resume,
    cmd_run,
    cmd_serve,
    open_store,
)
from orchestra.cli.demo_cmd import cmd_demo
from orchestra.cli.interrupts import Interrupt
from orchestra.cli.worker_cmd import cmd_worker

Handler = Callable[[argparse.Namespace], Awaitable[int]]
Driver = Callable[[argparse.Namespace, Interrupt], Awaitable[int]]


async def dispatch(args: argparse.Namespace, state: Interrupt) -> int:
    """Run the handler of ``args.command`` (its exit code); a command that drives runs
    records in ``state`` what Ctrl-C would stop."""
    drivers: dict[str, Driver] = {"demo": cmd_demo, "run": cmd_run, "resume": cmd_resume,
                                  "worker": cmd_worker, "fork": cmd_fork}
    handlers: dict[str, Handler] = {"cancel": cmd_cancel, "serve": cmd_serve,
                                    "prune": cmd_prune, "migrate": cmd_migrate}
    if args.command == "copy":
        from orchestra.cli.copy_cmd import cmd_copy

        return await cmd_copy(args)
    if args.command == "upgrade":
        from orchestra.cli.upgrade_cmd import cmd_upgrade

        return await cmd_upgrade(args)
    driver = drivers.get(args.command)
    if driver is not None:
        return await driver(args, state)
    handler = handlers.get(args.command)
    if handler is not None:
        return await handler(args)
    return await inspect_cmds.dispatch(args, open_store)
