"""Model-written tests made fine-grained: a small model puts every assert into one test
function, so one wrong expected value it invented fails them all and a correct module
scores as a broken one. A function of independent checks is cut into one test per check.
"""

from __future__ import annotations

import ast
import re

from agents.checks import parsed

__all__ = ["failed_tests", "guard_imports", "guard_lines", "split_tests", "test_names"]

_FAILED = re.compile(r"^(?:FAILED|ERROR) [^\s:]+::(\w+)", re.MULTILINE)


def _independent(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.With) and len(stmt.items) == 1 and (
            stmt.items[0].optional_vars is None):  # `as e`: a later check may read e
        call = stmt.items[0].context_expr
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "raises")
    return False


def split_tests(text: str) -> str:
    """``text`` with each test of independent checks cut into ``test_x_1``, ``test_x_2``..."""
    if (tree := parsed(text)) is None:
        return text
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    lines = text.split("\n")
    cuts: list[tuple[int, int, str]] = []
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")
                and not fn.decorator_list and not fn.args.args and fn.end_lineno):
            continue
        body = fn.body[1:] if (fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
            fn.body[0].value, ast.Constant)) else fn.body
        if len(body) < 2 or not all(_independent(s) for s in body):
            continue
        parts = []
        for i, stmt in enumerate(body, 1):
            name = f"{fn.name}_{i}"
            while name in names:
                name += "_"
            names.add(name)
            code = "\n".join("    " + ln for ln in ast.unparse(stmt).split("\n"))
            parts.append(f"def {name}():\n{code}\n")
        cuts.append((fn.lineno - 1, fn.end_lineno, "\n\n".join(parts)))
    for start, end, new in reversed(cuts):
        lines[start:end] = new.rstrip("\n").split("\n")
    return "\n".join(lines)


def test_names(text: str) -> set[str]:
    """The test functions ``text`` defines (none when it does not parse)."""
    if (tree := parsed(text)) is None:
        return set()
    return {fn.name for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")}


def failed_tests(output: str) -> set[str]:
    """The test functions a pytest report lists as failed or in error."""
    return set(_FAILED.findall(output))


_MISSING = '''
def _not_in_module(name):
    """A name the tests import that the module does not define: any use of it raises an
    error naming both (None would say only "'NoneType' object is not callable")."""
    def fail(*args, **kwargs):
        raise AttributeError(f"{name!r} is not defined in module "
                             f"{_tested_module.__name__!r} (the tests import it)")
    uses = ["__call__", "__getattr__", "__iter__", "__len__", "__bool__", "__getitem__",
            "__contains__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__enter__",
            "__instancecheck__", "__subclasscheck__"]
    return type(f"{name} (not in {_tested_module.__name__})", (), dict.fromkeys(uses, fail)
                | {"__hash__": object.__hash__, "__repr__": lambda self: f"<no {name}>"})()

'''
"""What stands for each name a test file imports: one small function in the file
itself (it runs in the sandbox, without this package)."""


def guard_imports(text: str, module: str) -> str:
    """``text`` with its top-level ``from module import a, b`` written so that a name the
    module lacks fails only the tests that use it, not the whole file at collection (the
    spec's own examples with it); used, its placeholder raises an error naming the name,
    which the coder's feedback quotes."""
    if (tree := parsed(text)) is None:
        return text
    lines = text.split("\n")
    guarded = [node for node in tree.body if isinstance(node, ast.ImportFrom)
               and node.module == module and node.level == 0 and node.end_lineno
               and all(a.name != "*" for a in node.names)]
    for node in reversed(guarded):
        new = [f"import {module} as _tested_module"] + (
            _MISSING.split("\n") if node is guarded[0] else []) + [
            f"{a.asname or a.name} = getattr(_tested_module, {a.name!r}, "
            f"_not_in_module({a.name!r}))" for a in node.names]
        lines[node.lineno - 1:node.end_lineno] = new
    return "\n".join(lines)


def guard_lines(tree: ast.Module) -> list[ast.stmt]:
    """The top-level statements :func:`guard_imports` wrote into a test file, which the
    file's calls need beside its imports."""
    return [node for node in tree.body if (
        isinstance(node, ast.FunctionDef) and node.name == "_not_in_module") or (
        isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "getattr" and node.value.args
        and ast.unparse(node.value.args[0]) == "_tested_module")]
