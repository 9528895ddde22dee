"""Import a module the way its users do, before any test of it runs.

A module's users (and any test in the workspace root) import ``calc.py`` as ``import
calc`` and ``pkg/calc.py`` as ``import pkg.calc``, with the workspace root on the path.
A module that fails there (a relative import in a top-level module, a name of another
module it never imports) fails every test for a reason no test names; the import's own
traceback says it in one place. Run in the same sandbox as the tests, in its own
process group, killed whole at the time limit.
"""

from __future__ import annotations

from pathlib import Path

from agents.checks import dotted
from agents.sandbox import run_python

__all__ = ["import_error"]

_SCRIPT = "import importlib, sys; importlib.import_module(sys.argv[1])"
TAIL_CHARS = 1500


async def import_error(root: Path, path: str, *, timeout: float = 20.0) -> str:  # noqa: ASYNC109
    """'' when ``path`` (a module of the workspace at ``root``) imports as its dotted
    name from the root; else the end of the traceback, the root's path shown as '.'."""
    name = dotted(path)
    done = await run_python(root, ["-c", _SCRIPT, name], timeout=timeout)
    if done is None:
        return f"`import {name}` did not finish within {timeout:g} s (code at module level " \
               "runs at import: a loop or a wait there never ends)"
    code, out = done
    if code == 0:
        return ""
    text = out.decode("utf-8", errors="replace").replace(str(root), ".").strip()
    tail = text if len(text) <= TAIL_CHARS else "...\n" + text[-TAIL_CHARS:]
    return f"`import {name}` from the workspace root fails:\n{tail}"
