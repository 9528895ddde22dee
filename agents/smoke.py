"""Inputs for a module no test calls: its public functions and classes' methods called on
the spec's literals and on simple values of their annotated types ("0 of 0 tests pass"
once accepted a module that raised TypeError on every call). Every candidate of a module
runs the same calls, made from its first candidate; pure.
"""

from __future__ import annotations

import ast
import re

from agents.checks import parsed, parsed_expr
from agents.probe import MAX_CALLS, Probe

__all__ = ["smoke_calls", "spec_literals"]

_TICKED = re.compile(r"`([^`\n]+)`")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_BY_TYPE: dict[str, list[object]] = {
    "int": [3, 0, 1, -2, 10], "float": [2.5, 0.0, -1.0], "bool": [True, False],
    "str": ["abc", "", "a b c"], "list": [[1, 2, 3], []], "dict": [{"a": 1}, {}],
    "tuple": [(1, 2)], "set": [{1, 2}], "bytes": [b"abc"],
}
_PER_FUNCTION = 4


def spec_literals(spec: str) -> list[object]:
    """The Python literals the spec writes in backticks (or inside a call in backticks:
    ``merge([(1, 3), (2, 4)])`` gives its argument) and the numbers in its prose."""
    found: list[object] = []
    for text in _TICKED.findall(spec):
        for candidate in (text, *_arguments(text)):
            try:
                found.append(ast.literal_eval(candidate))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    for number in _NUMBER.findall(_TICKED.sub(" ", spec)):
        found.append(float(number) if "." in number else int(number))
    unique: list[object] = []
    for v in found:
        if not any(type(v) is type(u) and v == u for u in unique):
            unique.append(v)
    return unique


def _arguments(text: str) -> list[str]:
    if (node := parsed_expr(text.strip())) is None:
        return []
    return [ast.unparse(a) for a in node.args] if isinstance(node, ast.Call) else []


def _values(ann: ast.expr | None, literals: list[object]) -> list[object]:
    """Values for a parameter: the spec's literals of its type, then simple ones of it."""
    text = "" if ann is None else ast.unparse(ann)
    head = re.split(r"[\[|]", text.replace("typing.", ""))[0].strip().lower()
    head = {"sequence": "list", "iterable": "list", "mapping": "dict", "optional": "",
            "frozenset": "set"}.get(head, head)
    kind = _BY_TYPE.get(head)
    if kind is None:
        return [*literals[:_PER_FUNCTION], 1, "a"]
    mine = [v for v in literals if type(v) is type(kind[0])]
    if head == "list" and "str" in text:
        kind = [["a", "b"], []]
    return [*mine, *kind]


def _args(fn: ast.FunctionDef | ast.AsyncFunctionDef, literals: list[object], *,
          method: bool) -> list[str]:
    """Argument lists for ``fn``'s required parameters: the n-th takes each n-th value."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    required = params[:len(params) - len(fn.args.defaults)]
    if method and required:
        required = required[1:]
    if not required:
        return [""]
    values = [_values(p.annotation, literals) for p in required]
    count = min(_PER_FUNCTION, max(len(v) for v in values))
    return [", ".join(repr(v[n % len(v)]) for v in values) for n in range(count)]


def smoke_calls(code: str, spec: str) -> list[Probe]:
    """The smoke run's calls of ``code``'s public functions, classes and methods."""
    if (tree := parsed(code)) is None:
        return []
    literals = spec_literals(spec)
    calls: list[Probe] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            calls += [("", f"{node.name}({a})") for a in _args(node, literals, method=False)]
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            calls += _class_calls(node, literals)
    return list(dict.fromkeys(calls))[:MAX_CALLS]


def _class_calls(cls: ast.ClassDef, literals: list[object]) -> list[Probe]:
    methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
    init = methods.get("__init__")
    built = [f"{cls.name}({a})" for a in (
        _args(init, literals, method=True) if init else [""])][:2]
    calls: list[Probe] = [("", b) for b in built]
    for name, m in methods.items():
        if name.startswith("_") or any(isinstance(d, ast.Name) and d.id in (
                "staticmethod", "classmethod", "property") for d in m.decorator_list):
            continue
        calls += [(f"obj = {built[0]}", f"obj.{name}({a})")
                  for a in _args(m, literals, method=True)[:2]]
    return calls
