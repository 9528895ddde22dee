"""What a reply cut off inside its file holds: the definitions before the cut (a coder's
module, a tester's tests)."""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import BaseModel

from agents.checks import defines
from orchestra.answers import FileBlocks

__all__ = ["CodeBlocks", "complete_part", "complete_statements"]


def complete_part(text: str) -> str | None:
    """A reply cut off inside its last fenced block, ended before the definition it was
    cut in, when the rest parses and defines something (another try may be cut off too)."""
    head, body, starts = _open_block(text)
    for cut in reversed(starts[1:]):
        kept = body[:cut]
        while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith("@")):
            kept.pop()
        if defines("\n".join(kept)):
            return "\n".join([*head, *kept, "```", ""])
    return None


def _open_block(text: str) -> tuple[list[str], list[str], list[int]]:
    """The lines up to a reply's last fence left open, the lines after it, and where the
    definitions among those begin (nothing when every block is closed)."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if line.lstrip().startswith(("```", "~~~"))]
    if len(fences) % 2 == 0:
        return lines, [], []
    body = lines[fences[-1] + 1:]
    return (lines[:fences[-1] + 1], body,
            [i for i, line in enumerate(body) if _DEF_START.match(line)])


def complete_statements(text: str) -> str | None:
    """A test reply cut off inside its only test function, ended after that function's
    last complete statement (the line the cut fell in is never kept: ``assert f(27)`` is
    a statement, not the check it was becoming). Tests only: a module's function cut in
    its body is not the function. The 1.5B's first test function of HumanEval/79 ran to
    the cap as 30 asserts; with nothing kept, the rest was asked and ran to the cap too."""
    head, body, starts = _open_block(text)
    for end in range(len(body) - 1, starts[-1] + 1 if starts else 0, -1):
        try:
            last = ast.parse("\n".join(body[:end])).body[-1]
        except (SyntaxError, IndexError):
            continue
        if isinstance(last, ast.FunctionDef) and last.name.startswith("test") and any(
                _checks(stmt) for stmt in last.body):
            return "\n".join([*head, *body[:end], "```", ""])
        return None  # what parses is no test: nothing to keep
    return None


def _checks(stmt: ast.stmt) -> bool:
    """A statement that does something: not ``pass``, nor a docstring or bare name."""
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Call)
    return not isinstance(stmt, ast.Pass)


_DEF_START = re.compile(r"\s*(?:async\s+def|def|class)\s|\s*@")


class CodeBlocks(FileBlocks):
    """The module as a fenced file; a reply cut off keeps the definitions before the cut
    (:func:`complete_part`). It adds nothing to the prompt: the first request is a user's."""

    def instructions(self) -> str:
        return ""

    def task_note(self, task_input: Any) -> str:
        return ""  # the request says which module to write and how: the first is byte for byte

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> BaseModel:
        kept = complete_part(text) if truncated else None
        if kept is not None:
            return super().parse(kept, truncated=False, task_input=task_input)
        return super().parse(text, truncated=truncated, task_input=task_input)
