"""One module made of the best parts of several answers: each public function or class
taken from the answer whose tests of it (the test functions that name it) pass most, with
the helpers and imports its code needs.

A small model sampled several times often gets a different function right each time;
ranking whole files keeps one and loses the other. The composite is one more candidate,
tested and ranked like the others. Pure: a step re-run after a crash writes the same bytes.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from agents.checks import parsed

__all__ = ["Answer", "compose", "name_tests"]

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class Answer:
    """One tested answer: its code and the tests it failed (of a run that ran them all)."""

    code: str
    failed: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Parsed:
    lines: list[str]
    defs: dict[str, tuple[int, int]]
    """Top-level definitions: name -> [first line, end line), 0-based, decorators included."""
    deps: dict[str, set[str]]
    """Names each top-level definition reads."""
    imports: list[tuple[int, int]]
    body_start: int
    """The first line after the docstring and ``from __future__`` imports."""

    def text(self, name: str) -> str:
        start, end = self.defs[name]
        return "\n".join(self.lines[start:end])


def _parse(code: str) -> _Parsed | None:
    if (tree := parsed(code)) is None:
        return None
    defs: dict[str, tuple[int, int]] = {}
    deps: dict[str, set[str]] = {}
    imports: list[tuple[int, int]] = []
    body_start = 0
    for i, node in enumerate(tree.body):
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        span = (start, node.end_lineno or node.lineno)
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            body_start = span[1]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(span)
        for name in _names(node):
            if name in defs:
                return None  # defined twice: which one its users get depends on order
            defs[name] = span
            deps[name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {name}
    return _Parsed(code.split("\n"), defs, deps, imports, body_start)


def _names(node: ast.stmt) -> list[str]:
    """The names a top-level statement defines (a def, a class, a plain assignment)."""
    if isinstance(node, _Def):
        return [node.name]
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, ast.AnnAssign) else [])
    return [t.id for t in targets if isinstance(t, ast.Name)]


def name_tests(tests: str, names: Sequence[str]) -> dict[str, set[str]]:
    """Each name -> the test functions of ``tests`` that name it (``order``, ``m.order``)."""
    if (tree := parsed(tests)) is None:
        return {}
    out: dict[str, set[str]] = {n: set() for n in names}
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")):
            continue
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
        for name in names:
            if name in used:
                out[name].add(fn.name)
    return out


def _needs(parsed: _Parsed, name: str, public: set[str]) -> list[str]:
    """The module-level helpers ``name`` reads, transitively (public names excluded: the
    composite's own versions serve), in the order they stand in the file."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for dep in parsed.deps.get(todo.pop(), set()):
            if dep in parsed.defs and dep not in public and dep not in seen and dep != name:
                seen.add(dep)
                todo.append(dep)
    return sorted(seen, key=lambda d: parsed.defs[d][0])


def _score(tests: set[str], failed: frozenset[str], weights: Sequence[set[str]]
           ) -> tuple[int, ...]:
    ok = tests - failed
    return (*(len(ok & w) for w in weights), len(ok))


def compose(answers: Sequence[Answer], base: int, tests: str, public: Sequence[str],
            weights: Sequence[set[str]] = ()) -> str | None:
    """The composite of ``answers`` built on ``answers[base]`` (the best whole answer), or
    None when no public name is better elsewhere; ``weights``: sets of tests that count
    first, most trusted first."""
    parsed = [_parse(a.code) for a in answers]
    home = parsed[base]
    if home is None or len(answers) < 2:
        return None
    names = [n for n in dict.fromkeys(public) if n.isidentifier()]
    by_name = name_tests(tests, names)
    swaps: dict[str, int] = {}
    for name in names:
        mine = by_name.get(name, set())
        if not mine:
            continue
        scores = [(_score(mine, a.failed, weights), -i) for i, (a, p) in
                  enumerate(zip(answers, parsed, strict=True)) if p and name in p.defs]
        if not scores:
            continue
        top, where = max(scores)
        here = _score(mine, answers[base].failed, weights) if name in home.defs else None
        if -where != base and (here is None or top > here):
            swaps[name] = -where
    return _build(home, parsed, swaps, set(names)) if swaps else None


def _build(home: _Parsed, parsed: Sequence[_Parsed | None], swaps: dict[str, int],
           public: set[str]) -> str | None:
    """``home`` with each swapped name (and its helpers) from its donor; None on a clash."""
    lines = list(home.lines)
    edits: list[tuple[int, int, list[str]]] = []  # (start, end, new lines) of ``home``
    added: dict[str, str] = {}
    new_imports: list[str] = []
    for name, where in swaps.items():
        donor = parsed[where]
        assert donor is not None
        helpers: list[str] = []
        for dep in _needs(donor, name, public):
            text = donor.text(dep)
            if (dep in home.defs and home.text(dep) != text) or added.get(dep, text) != text:
                return None  # two different helpers of one name: no safe composite
            if dep not in home.defs and dep not in added:
                added[dep] = text
                helpers.append(text)
        block = [*"\n\n\n".join([*helpers, donor.text(name)]).split("\n")]
        tail = len("\n".join(lines).rstrip("\n").split("\n"))  # after the last line
        start, end = home.defs[name] if name in home.defs else (tail, tail)
        edits.append((start, end, block if name in home.defs else ["", "", *block]))
        have = {"\n".join(home.lines[s:e]) for s, e in home.imports}
        for s, e in donor.imports:
            text = "\n".join(donor.lines[s:e])
            if text not in have and text not in new_imports:
                new_imports.append(text)
    at = max([home.body_start, *(e for _, e in home.imports)])
    block = [ln for text in new_imports for ln in text.split("\n")]
    gap = [""] if block and at < len(lines) and lines[at].strip() else []
    edits.append((at, at, block + gap))
    for start, end, block in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = block
    code = "\n".join(lines).rstrip("\n") + "\n"
    return code if _parse(code) is not None else None
