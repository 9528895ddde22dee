"""``orchestra demo``: the demo a package registers (``orchestra.cli.demo_entry``), run
like ``orchestra run`` would run it."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestra._errors import UserError
from orchestra.cli.commands import _cannot_write, _refuse, _start, _workspace, open_store
from orchestra.cli.demo_entry import load_demo
from orchestra.cli.interrupts import Interrupt
from orchestra.store import url as store_url


async def cmd_demo(args: argparse.Namespace, state: Interrupt) -> int:
    demo = load_demo()
    db_path = store_url.sqlite_path(args.db)
    if db_path is not None and (problem := _cannot_write(Path(db_path))):
        _refuse(args, Path(args.db), problem)  # before anything is printed or created
    workspace = Path(args.workspace).resolve()
    if workspace.exists() and any(workspace.iterdir()):
        raise UserError(f"demo workspace {workspace} is not empty; remove it or pass "
                        "--workspace NEW_DIR")
    if store_url.sqlite_path(args.db) is None or Path(args.db).exists():
        async with open_store(args, must_exist=True):
            pass  # a bad --db fails here, before the workspace is created
    if not args.model:
        args.model = [demo.model]
        if not args.json and demo.notice:
            print(demo.notice)
    with _workspace(state, workspace):
        code = await _start(args, state, demo.pipeline, demo.run_input(str(workspace)))
    if not args.json:
        print(f"\nworkspace: {workspace}  (run its tests: cd {workspace} && python -m pytest)")
    return code
