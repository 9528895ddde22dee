"""Which public functions of a module are stubs, a body that does nothing yet: ranked by
tests alone a stub ties with answers that try and fail (and was kept as the first of
equals), so it ranks below every answer that is not one. Pure (AST only).
"""

from __future__ import annotations

import ast

from agents.checks import parsed

__all__ = ["stubs"]

_Fn = ast.FunctionDef | ast.AsyncFunctionDef


def stubs(code: str) -> list[str]:
    """The public functions and methods of ``code`` whose body is only ``pass``, ``...``,
    ``raise NotImplementedError``, a docstring or a comment, or that return ``None``
    where their annotation promises a value (none when it does not parse)."""
    if (tree := parsed(code)) is None:
        return []
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, _Fn) and _public(node.name) and _stub(node):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            found += [f"{node.name}.{m.name}" for m in node.body if isinstance(m, _Fn)
                      and _public(m.name) and m.name != "__init__" and _stub(m)
                      and not _abstract(m)]
    return found


def _public(name: str) -> bool:
    return not name.startswith("_")


def _abstract(fn: _Fn) -> bool:
    return any((d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute)
                else "") == "abstractmethod" for d in fn.decorator_list)


def _stub(fn: _Fn) -> bool:
    return all(_placeholder(s) for s in fn.body) or (_promises(fn) and not _gives(fn))


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(
        stmt.value.value, str)


def _placeholder(stmt: ast.stmt) -> bool:
    """``pass``, ``...``, a string, ``raise NotImplementedError``, a bare ``return``."""
    if isinstance(stmt, ast.Pass) or _docstring(stmt):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return stmt.value.value is Ellipsis
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return isinstance(stmt, ast.Return) and (
        stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None))


def _promises(fn: _Fn) -> bool:
    """Its annotation promises a value (not ``None``, ``Optional``, ``NoReturn``)."""
    ann = fn.returns
    if ann is None or (isinstance(ann, ast.Constant) and ann.value is None):
        return False
    text = ast.unparse(ann)
    return not any(w in text for w in ("None", "Optional", "NoReturn", "Never", "Iterator",
                                       "Generator"))


def _gives(fn: _Fn) -> bool:
    """Its own body (not a nested function's) returns a value, yields, or raises."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Raise)):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False
