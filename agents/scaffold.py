"""Tests a small model appends to the module it was asked for, taken out of it: at worst
they fail the module at import (one wrong module-level ``assert``, an import of a test
file not written yet), and a module's tests are the tester's.

Only what can be nothing but a test goes (a test file's heading and all below it,
module-level asserts and prints, ``test_*``/``Test*`` the spec does not name, pytest
fixtures, then-unused imports of pytest, a test module or the module itself); a module
that would define nothing without them is left as it is.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from agents.checks import DEFINITIONS, defines, dotted, parsed

__all__ = ["without_tests"]

# a comment line that heads another file of the answer: "# test_x.py", "# File: tests/x_test.py"
_TEST_FILE_HEADING = re.compile(
    r"^#+\s*(?:file(?:name)?\s*:\s*)?`?(?:[\w./-]*/)?(?:test_\w+|\w+_test)\.py`?\s*:?\s*$",
    re.IGNORECASE)


def _imports_tests(node: ast.stmt) -> bool:
    """An import of pytest, unittest or a test module (``test_x``, ``x_test``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    else:
        return False
    return all(n.split(".")[0] in ("pytest", "unittest") or n.split(".")[-1].startswith(
        "test_") or n.split(".")[-1].endswith("_test") for n in names)


def _imports_itself(node: ast.stmt, own: str, defined: set[str]) -> bool:
    """``from <this module> import f`` of its own names (a failing circular import)."""
    return (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == own
            and all(a.name in defined and not a.asname for a in node.names))


def _is_pytest(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    while isinstance(target, ast.Attribute):
        target = target.value
    return isinstance(target, ast.Name) and target.id == "pytest"


def _is_test(node: ast.stmt, keep: set[str]) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Name) and func.id == "print"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name not in keep and (node.name.startswith("test_") or any(
            _is_pytest(d) for d in node.decorator_list))
    if isinstance(node, ast.ClassDef):
        return node.name not in keep and node.name.startswith("Test")
    return False


def _before_test_file(text: str) -> str:
    """``text`` up to the heading of a test file that follows some code ('' when none)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i and _TEST_FILE_HEADING.match(line.strip()) and any(
                s.strip() and not s.lstrip().startswith("#") for s in lines[:i]):
            return "\n".join(lines[:i]).rstrip() + "\n"
    return ""


def without_tests(text: str, path: str, keep: Iterable[str] = ()) -> str:
    """``text`` (the module at ``path``) without the tests a model wrote into it; ``keep``:
    names the spec gives the module (never taken out)."""
    head = _before_test_file(text)
    if head and defines(head):
        text = head
    if (tree := parsed(text)) is None:
        return text
    names = set(keep)
    defined = {n.name for n in tree.body if isinstance(n, DEFINITIONS)}
    drop = [n for n in tree.body if _is_test(n, names) or _imports_itself(n, dotted(path), defined)]
    rest = [n for n in tree.body if n not in drop]
    used = {n.id for node in rest for n in ast.walk(node) if isinstance(n, ast.Name)}
    drop += [n for n in rest if _imports_tests(n) and not any(
        (a.asname or a.name).split(".")[0] in used for a in getattr(n, "names", []))]
    kept = [n for n in tree.body if n not in drop]
    # a statement sharing a line with one that stays (`import x; assert y`) stays too
    shared = {line for n in kept for line in range(n.lineno, (n.end_lineno or n.lineno) + 1)}
    drop = [n for n in drop if not shared & set(range(_first(n), (n.end_lineno or n.lineno) + 1))]
    if not drop or not any(isinstance(n, DEFINITIONS) for n in tree.body if n not in drop):
        return text
    lines = text.split("\n")
    for node in sorted(drop, key=_first, reverse=True):
        lines[_first(node) - 1:node.end_lineno or node.lineno] = []
    return "\n".join(lines).rstrip() + "\n"


def _first(node: ast.stmt) -> int:
    """The first line of ``node``, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])
