"""Checks of the stock roles' answers against the world, not just against their schema.

A weak model's answer can be valid JSON and still wrong about the world: a coder
that "wrote" files it never wrote (or wrote empty, or not as Python), a plan whose
module is a path copied from an example rather than the one the spec names. Each
check returns the problem as one instruction the model can act on ('' when fine).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from agents.workspace import Workspace, WorkspaceError

# f"...{... "x" ...}": the same quote inside a replacement field, valid only from 3.12;
# a small model writes it often and cannot tell what "unterminated string" refers to
_NESTED_FSTRING_QUOTE = re.compile(r"""\b[fF]([\"'])[^\n]*?\{[^}\n]*\1""")
_PY_PATH = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_]\w*\.py)(?![\w/])")


def _is_test(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.name.startswith("test_") or pure.name.endswith("_test.py") or (
        bool(pure.parts) and pure.parts[0] in ("tests", "test"))


def spec_paths(spec: str) -> tuple[list[str], list[str]]:
    """The module paths and the test paths a spec names (``pkg/mod.py``), in order."""
    modules: list[str] = []
    tests: list[str] = []
    for path in _PY_PATH.findall(spec):
        bucket = tests if _is_test(path) else modules
        if path not in bucket:
            bucket.append(path)
    return modules, tests


def _normal(path: str) -> str:
    return str(PurePosixPath(path.strip()))


def _relative_py(workspace: Workspace, path: str, what: str) -> str:
    try:
        workspace.resolve(path)
    except WorkspaceError as exc:
        return f"{what} {exc}"
    if not path.strip().endswith(".py"):
        return f"{what} {path!r} is not a Python file path (it must end in .py)"
    return ""


def check_plan(plan: Any, spec: str, workspace: Workspace) -> str:
    """The plan's paths are relative ``.py`` paths inside the workspace, and the module
    and test paths the spec names are the ones planned."""
    named_modules, named_tests = spec_paths(spec)
    named = {p for p in named_modules if PurePosixPath(p).name != "__init__.py"}
    seen: set[str] = set()
    for module in plan.modules:
        for path, what in ((module.path, "module path"), (module.test_path, "test_path")):
            problem = _relative_py(workspace, path, what)
            if problem:
                return f"{problem}. Use the paths the spec names."
        path, test_path = _normal(module.path), _normal(module.test_path)
        if path in seen:
            return f"the plan lists module {path!r} twice; list each module once."
        seen.add(path)
        if named_modules and path not in named_modules:
            return (f"module path {path!r} is not in the spec; the spec names "
                    f"{', '.join(repr(p) for p in named_modules)}. Plan exactly those modules.")
        if named_tests and test_path not in named_tests:
            return (f"test_path {test_path!r} is not in the spec; the spec names "
                    f"{', '.join(repr(p) for p in named_tests)}.")
    missing = sorted(named - seen)
    if missing:
        return (f"the plan leaves out {', '.join(repr(p) for p in missing)}, which the spec "
                "asks for; plan one module for each.")
    return ""


async def check_written(workspace: Workspace, files: Sequence[str],
                        required: Sequence[str]) -> str:
    """The files an answer names (and the ``required`` ones) exist, are not empty, and
    parse as Python where they are ``.py`` files."""
    if not files:
        return ("your answer has no code. Give the module's complete source in module_code "
                "and its tests in test_code.")
    for path in [*files, *(p for p in required if p not in files)]:
        try:
            text = await workspace.read_file(path)
        except WorkspaceError as exc:
            if "does not exist" in str(exc):
                return (f"{path!r} does not exist in the workspace: you have not written it. "
                        "Give its complete source in your answer (module_code or "
                        "test_code).")
            return f"{path!r} cannot be read ({exc}). Write it with write_file, then answer."
        if not text.strip():
            return f"{path!r} is empty. Give its complete source in your answer."
        kind = required.index(path) if path in required else -1
        problem = (code_problem(path, text, tests=kind == 1) if kind >= 0 else
                   python_problem(path, text))
        if problem:
            return f"{path!r} is {problem}. Give its fixed, complete source in your answer."
    return ""


def code_problem(path: str, text: str, *, tests: bool) -> str:
    """Why ``text`` is not a module (or, with ``tests``, a pytest file) worth the name:
    not Python, or Python with nothing in it. A path typed where code belongs
    (``tests/test_x.py``) parses as a division, so parsing alone is not enough."""
    problem = python_problem(path, text)
    if problem or not path.endswith(".py"):
        return problem
    body = ast.parse(text).body
    defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.ClassDef))]
    if tests and not any(n.name.startswith(("test", "Test")) for n in defs):
        return ("not a pytest file: it defines no test function (def test_...(): ...) that "
                "imports the module and asserts what it returns")
    if not tests and not defs:
        return "not the module's code: it defines no function or class"
    return ""


def python_problem(path: str, text: str) -> str:
    """Why ``text`` is not valid Python, for a ``.py`` path ('' when it parses)."""
    if not path.endswith(".py"):
        return ""
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        shown = f": {line[:160]!r}" if line else ""
        hint = ""
        if sys.version_info < (3, 12) and _NESTED_FSTRING_QUOTE.search(line):
            hint = ("; inside an f-string's {...} use the other quote character "
                    "(f\"{'x'}\") or compute the value on its own line first")
        return f"not valid Python (line {exc.lineno}: {exc.msg}{shown}{hint})"
    return ""
