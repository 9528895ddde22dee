"""Import a module the way its users do, before any test of it runs.

A module's users (and any test in the workspace root) import ``calc.py`` as ``import
calc`` and ``pkg/calc.py`` as ``import pkg.calc``, with the workspace root on the path.
A module that fails there (a relative import in a top-level module, a name of another
module it never imports) fails every test for a reason no test names; the import's own
traceback says it in one place. Run in the same sandbox as the tests, in its own
process group, killed whole at the time limit.
"""

from __future__ import annotations

import asyncio
import os
import sys
from functools import partial
from pathlib import Path

from agents.checks import dotted
from agents.sandbox import detect_sandbox, kill_tree, new_marker

__all__ = ["import_error"]

_SCRIPT = "import importlib, sys; importlib.import_module(sys.argv[1])"
TAIL_CHARS = 1500


async def import_error(root: Path, path: str, *, timeout: float = 20.0) -> str:  # noqa: ASYNC109
    """'' when ``path`` (a module of the workspace at ``root``) imports as its dotted
    name from the root; else the end of the traceback, the root's path shown as '.'."""
    sandbox = await asyncio.to_thread(detect_sandbox)
    marker_var, marker = new_marker()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", **{marker_var: marker})
    name = dotted(path)
    proc = await asyncio.create_subprocess_exec(
        *sandbox.command([sys.executable, "-c", _SCRIPT, name], root), cwd=root, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        return f"`import {name}` did not finish within {timeout:g} s (code at module level " \
               "runs at import: a loop or a wait there never ends)"
    finally:
        await asyncio.to_thread(partial(kill_tree, proc.pid, marker,
                                        leader_alive=proc.returncode is None))
        if proc.returncode is None:
            await asyncio.shield(proc.wait())
    if proc.returncode == 0:
        return ""
    text = out.decode("utf-8", errors="replace").replace(str(root), ".").strip()
    tail = text if len(text) <= TAIL_CHARS else "...\n" + text[-TAIL_CHARS:]
    return f"`import {name}` from the workspace root fails:\n{tail}"
