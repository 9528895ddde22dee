"""Checks of the stock roles' answers against the world, not just against their schema.

A weak model's answer can be valid JSON and still unusable: a module that is not
Python, a test file with no test, a plan's path outside the workspace. Nothing read
from a spec's prose refuses an answer here. Each check returns the problem as one
instruction the model can act on ('' when fine).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from agents.specread import parse_params
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
    file ('' when it can). Nothing read from the spec refuses a plan: test files or
    helpers the spec does not name are the plan's own choice (a spec's "for example
    `tests/test_tokens.py`" refused twelve plans of eight modules, and the run)."""
    for module in plan.modules:
        for path, what in ((module.path, "module path"), (module.test_path, "test_path")):
            problem = path_problem(workspace, path, what)
            if problem:
                return f"{problem}. Use the paths the spec names."
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
    return "" if tests else _shadowed_method(body)


def _shadowed_method(body: list[ast.stmt]) -> str:
    """An instance attribute named like a method of its class (``self.items = {}`` beside
    ``def items(self)``): the attribute hides the method on every instance, so each call
    fails. A small model writes it and cannot see it in the test report."""
    for cls in (n for n in body if isinstance(n, ast.ClassDef)):
        methods = {f.name for f in cls.body if isinstance(f, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))}
        for node in ast.walk(cls):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            for t in targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id == "self" and t.attr in methods):
                    return (f"class {cls.name} sets self.{t.attr}, which hides its method "
                            f"{t.attr}() on every instance (calling it fails): name the "
                            f"attribute differently, e.g. self._{t.attr}")
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


_SIGNATURE = re.compile(
    r"^\s*(?:def\s+|class\s+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*(\((.*)\))?")


def _params(sig: str) -> list[str] | None:
    """The parameter names of ``name(a, b: int = 1, *args)`` (None when unparseable)."""
    args = parse_params(sig)
    return None if args is None else [a.arg for a in [*args.posonlyargs, *args.args]]


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def _is_property(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``@property`` / ``@functools.cached_property``: read without a call, so a caller
    who calls it (``rect.area()``) calls the value it gives and fails."""
    for d in fn.decorator_list:
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")
        if name in ("property", "cached_property"):
            return True
    return False


def api_problem(path: str, text: str, public_api: Sequence[str]) -> str:
    """Why ``text`` does not provide the public names the plan gives, at module top level
    and with their parameters ('' when it does). ``Class.method(x)`` asks for a class with
    that method, called (a small model makes ``area()`` a property, which every call
    fails); a signature that does not parse is checked by name only."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""  # python_problem reports it
    top = _top_level(tree)
    # a bare name may be a method only of a class the API itself names ("Inventory()"
    # with "add(item)"); otherwise it must be at module level (not "class Roman: def
    # to_roman", which the spec's callers cannot import)
    classes = {m.group(1) for e in public_api if (m := _SIGNATURE.match(e))
               and (e.lstrip().startswith("class ") or m.group(1)[:1].isupper())}
    for entry in public_api:
        m = _SIGNATURE.match(entry)
        if not m:
            continue
        name, params = m.group(1), _params(m.group(3)) if m.group(2) else None
        owner, _, member = name.partition(".")
        node = top.get(owner)
        if node is None and not member:  # a method the spec lists by its own name
            owner_class = next((n for n in tree.body if isinstance(n, ast.ClassDef)
                                and n.name in classes and any(
                isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == owner
                for f in n.body)), None)
            if owner_class is not None:
                owner, member, node = owner_class.name, owner, owner_class
        if node is None:
            nested = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                      and n.name == owner]
            where = " (you defined it inside another definition)" if nested else ""
            return (f"{path} has no top-level {owner!r}{where}: the plan's public API is "
                    f"{'; '.join(public_api)}. Define each of them at module level, with "
                    "exactly these names")
        if member:
            if isinstance(node, ast.ClassDef):
                methods = {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef,
                                                                          ast.AsyncFunctionDef))}
                if member not in methods:
                    return f"class {owner} in {path} has no method {member!r} (the plan: {entry})"
                if m.group(2) and _is_property(methods[member]):
                    return (f"{owner}.{member} in {path} is a property, but the plan says "
                            f"{entry}: callers call it with parentheses, so make it a plain "
                            "method (no @property)")
                node, params = methods[member], (["self", *params] if params is not None
                                                 and params[:1] != ["self"] else params)
            else:
                continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and params is not None:
            have = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
            required = len(have) - len(node.args.defaults)
            if not (required <= len(params) <= len(have) or node.args.vararg):
                return (f"{name} in {path} takes ({', '.join(have)}), but the plan says "
                        f"{entry}: give it exactly those parameters")
    return ""


_QUOTED = re.compile(r"`(\"(?:[^\"\\`]|\\.)*\"|'(?:[^'\\`]|\\.)*')`")


def spec_section(spec: str, path: str) -> str:
    """The part of a markdown spec about ``path``: from the heading that names it to the
    next heading of the same or a higher level; the whole spec when no heading names it,
    or when the spec names no other module (all of it is about this one: a heading like
    "How it reads durations" names ``durations.py``'s stem as a plain word)."""
    if not [p for p in spec_paths(spec)[0] if p != path and PurePosixPath(p).name !=
            "__init__.py"]:
        return spec
    lines = spec.split("\n")
    stem = PurePosixPath(path).stem
    for i, line in enumerate(lines):
        level = len(line) - len(line.lstrip("#"))
        if level and (path in line or re.search(rf"\b{re.escape(stem)}\b", line)) and level > 1:
            end = next((j for j in range(i + 1, len(lines))
                        if 0 < len(lines[j]) - len(lines[j].lstrip("#")) <= level), len(lines))
            return "\n".join(lines[i:end])
    return spec


def spec_examples(spec: str) -> list[str]:
    """The string values a spec gives in backticks (``"MCMXCIV"``), as Python would read
    them: the examples a test of the spec must assert, in order, without repeats."""
    found: list[str] = []
    for literal in _QUOTED.findall(spec):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, str) and value.strip() and value not in found:
            found.append(value)
    return found


def dotted(path: str) -> str:
    """``kata/roman.py`` as the module name tests import: ``kata.roman``."""
    return ".".join(PurePosixPath(path).with_suffix("").parts)


def imports_module(tests: str, module_path: str) -> bool:
    """True when the test file imports the module (``import a.b`` / ``from a.b import``)."""
    try:
        tree = ast.parse(tests)
    except SyntaxError:
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


_ERROR_NAME = re.compile(r"`([A-Z]\w*(?:Error|Exception))`")


def spec_errors(spec: str) -> list[str]:
    """The exception classes a spec names in backticks (``ValueError``)."""
    return list(dict.fromkeys(_ERROR_NAME.findall(spec)))
