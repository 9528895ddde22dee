"""Import a module the way its users do (``pkg/calc.py`` as ``import pkg.calc`` from the
workspace root), sandboxed, before any test runs: a module that fails there fails every
test for a reason no test names, and its traceback says it in one place. Imported, it
says which of the names its dependents import from it it defines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.checks import dotted
from agents.sandbox import run_python

__all__ = ["Imported", "check_import"]

_MARK = "@@orchestra-defines@@"
# the names it has on a line of their own, last: what the module prints at import is before
_SCRIPT = ("import importlib, json, sys; m = importlib.import_module(sys.argv[1]); "
           f"print('\\n{_MARK}' + json.dumps([n for n in sys.argv[2:] if hasattr(m, n)]))")
TAIL_CHARS = 1500


@dataclass(frozen=True, slots=True)
class Imported:
    """What importing a module showed."""

    error: str
    """'' when it imports; else the end of the traceback, the root's path shown as '.'."""
    defines: tuple[str, ...] = ()
    """Those of the names asked about that it has once imported, in their order."""


async def check_import(root: Path, path: str, names: Sequence[str] = (), *,
                       timeout: float = 20.0) -> Imported:  # noqa: ASYNC109
    """Import ``path`` (a module of the workspace at ``root``) as its dotted name from the
    root, and see which of ``names`` (identifiers) it defines at module level."""
    name = dotted(path)
    done = await run_python(root, ["-c", _SCRIPT, name, *names], timeout=timeout)
    if done is None:
        return Imported(f"`import {name}` did not finish within {timeout:g} s (code at "
                        "module level runs at import: a loop or a wait there never ends)")
    code, out = done
    text = out.decode("utf-8", errors="replace")
    if code == 0:
        line = text.rpartition(f"\n{_MARK}")[2].split("\n")[0] if _MARK in text else ""
        try:
            has = json.loads(line)
        except ValueError:  # it ended the process before our line: none known
            has = []
        return Imported("", tuple(n for n in names if isinstance(has, list) and n in has))
    text = text.replace(str(root), ".").strip()
    tail = text if len(text) <= TAIL_CHARS else "...\n" + text[-TAIL_CHARS:]
    return Imported(f"`import {name}` from the workspace root fails:\n{tail}")
