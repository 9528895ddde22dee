"""Replays the coder's choice on kept runs: which decisions a change of
``agents/decide.py`` would have made otherwise, without a model call.

Every candidate the coder journals (``score``, ``runs``, ``exports``, ... in its
``check_output`` steps) is read back with ``Tried.of``; for each coder task, each prefix
of its candidates is decided by the ``decide.py`` of ``--old`` (a git revision) and by the
working tree's. A change that alters no decision on a run leaves that run's requests, and
so its result, as they were (the final step of an accepted task journals no candidate
with its runs, so it is not replayed)::

    python -m benchmarks.replay_choice --old HEAD~1 /tmp/quality-*-orchestra-*
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["candidates", "main", "replay"]


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _found(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        if "runs" in data and "score" in data:
            yield data
        for value in data.values():
            yield from _found(value)
    elif isinstance(data, list):
        for value in data:
            yield from _found(value)


def candidates(db: Path) -> dict[str, list[dict[str, Any]]]:
    """Each coder task's distinct candidates, in the order it tried them."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        rows = con.execute("SELECT task_id, output FROM steps WHERE name = 'check_output' "
                           "ORDER BY task_id, retry, step").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        con.close()
    out: dict[str, list[dict[str, Any]]] = {}
    for task, output in rows:
        try:
            data = json.loads(output or "null")
        except ValueError:
            continue
        for found in _found(data):
            seen = out.setdefault(str(task), [])
            if found not in seen:
                seen.append(found)
    return out


def replay(old: ModuleType, new: ModuleType, dbs: Sequence[Path]) -> tuple[int, int, list[str]]:
    """(tasks, decisions, the decisions that differ, one line each)."""
    tasks = decisions = 0
    differ: list[str] = []
    for db in dbs:
        for task, tried in candidates(db).items():
            tasks += 1
            for k in range(1, len(tried) + 1):
                decisions += 1
                before = old.decide([old.Tried.of(c) for c in tried[:k]], rounds=4,
                                    out_of_time=False)
                after = new.decide([new.Tried.of(c) for c in tried[:k]], rounds=4,
                                   out_of_time=False)
                if before != after:
                    differ.append(f"{db.parent} task {task} after {k}: {before} -> {after} "
                                  f"scores {[c['score'] for c in tried[:k]]}")
    return tasks, decisions, differ


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the git revision to compare with")
    parser.add_argument("dirs", nargs="+", type=Path, help="kept run directories (o.db)")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    shown = subprocess.run(["git", "show", f"{args.old}:agents/decide.py"], cwd=root,
                           capture_output=True, text=True)
    if shown.returncode:
        parser.error(f"no agents/decide.py at {args.old}: {shown.stderr.strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "decide_old.py").write_text(shown.stdout)
        old = _load(Path(tmp) / "decide_old.py", "replayed_old_decide")
    new = _load(root / "agents" / "decide.py", "replayed_new_decide")
    dbs = [d / "o.db" for d in args.dirs if (d / "o.db").is_file()]
    tasks, decisions, differ = replay(old, new, dbs)
    print("\n".join(differ))
    print(f"{len(dbs)} runs, {tasks} coder tasks with journaled candidates, {decisions} "
          f"decisions, {len(differ)} changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
