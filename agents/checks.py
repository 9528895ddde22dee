"""Checks of the stock roles' answers against the world, not just their schema: only what
is structurally unusable (not Python, no test, a path outside the workspace), never what
a spec's prose says; each returns the problem as an instruction ('' when fine).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import PurePosixPath
from typing import Any

from agents.workspace import Workspace, WorkspaceError

# f"...{... "x" ...}": the same quote inside a replacement field, valid only from 3.12;
# a small model writes it often and cannot tell what "unterminated string" refers to
_NESTED_FSTRING_QUOTE = re.compile(r"""\b[fF]([\"'])[^\n]*?\{[^}\n]*\1""")
_PY_PATH = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_]\w*\.py)(?![\w/])")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def parsed(text: str) -> ast.Module | None:
    """``text`` as a module, or None where it is not Python: a model's reply that does not
    parse is an answer to rank low or a fact to act on, never an error."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte, before Python 3.12
        return None


def parsed_expr(text: str) -> ast.expr | None:
    """``text`` as one expression, or None where it is not one."""
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


def defines(text: str) -> bool:
    """``text`` parses and defines a function or class at its top level."""
    if (tree := parsed(text)) is None:
        return False
    return any(isinstance(n, DEFINITIONS) for n in tree.body)


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


def path_problem(workspace: Workspace, path: str, what: str = "path") -> str:
    """Why ``path`` is no Python file inside the workspace ('' when it is one)."""
    try:
        workspace.resolve(path)
    except WorkspaceError as exc:
        return f"{what} {exc}"
    if not path.strip().endswith(".py"):
        return f"{what} {path!r} is not a Python file path (it must end in .py)"
    return ""


def check_plan(plan: Any, workspace: Workspace) -> str:
    """Why the plan cannot be used at all: a path outside the workspace or not a ``.py``
    file ('' when it can); what the spec does not name is the plan's own choice."""
    for module in plan.modules:
        for path, what in ((module.path, "module path"), (module.test_path, "test_path")):
            problem = path_problem(workspace, path, what)
            if problem:
                return f"{problem}. Use the paths the spec names."
    return ""


def code_problem(path: str, text: str, *, tests: bool) -> str:
    """Why ``text`` is not a module (or, with ``tests``, a pytest file): not Python, or
    Python with nothing in it (a path typed where code belongs parses as a division)."""
    problem = python_problem(path, text)
    if problem or not path.endswith(".py"):
        return problem
    body = ast.parse(text).body
    defs = [n for n in body if isinstance(n, DEFINITIONS)]
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


def spec_section(spec: str, path: str) -> str:
    """The part of a markdown spec about ``path``: from the heading that names it to the
    next heading of its level; the whole spec when no heading names it or the spec names
    no other module."""
    if not [p for p in spec_paths(spec)[0] if p != path and PurePosixPath(p).name !=
            "__init__.py"]:
        return spec
    lines = spec.split("\n")
    levels = [len(line) - len(line.lstrip("#")) for line in lines]  # 0: not a heading
    stem = PurePosixPath(path).stem
    for i, line in enumerate(lines):
        if levels[i] > 1 and (path in line or re.search(rf"\b{re.escape(stem)}\b", line)):
            end = next((j for j in range(i + 1, len(lines)) if 0 < levels[j] <= levels[i]),
                       len(lines))
            return "\n".join(lines[i:end])
    return spec


def dotted(path: str) -> str:
    """``kata/roman.py`` as the module name tests import: ``kata.roman``."""
    return ".".join(PurePosixPath(path).with_suffix("").parts)


def imports_module(tests: str, module_path: str) -> bool:
    """True when the test file imports the module (``import a.b`` / ``from a.b import``)."""
    if (tree := parsed(tests)) is None:
        return False
    name = dotted(module_path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == name:
            return True
        if isinstance(node, ast.ImportFrom) and node.module and name.startswith(
                node.module + ".") and any(a.name == name.rsplit(".", 1)[-1] for a in node.names):
            return True
        if isinstance(node, ast.Import) and any(a.name == name for a in node.names):
            return True
    return False
