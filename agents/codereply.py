"""What a reply cut off inside its file holds: the definitions before the cut (a coder's
module, a tester's tests)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from agents.checks import defines
from orchestra.answers import FileBlocks

__all__ = ["CodeBlocks", "complete_part"]


def complete_part(text: str) -> str | None:
    """A reply cut off inside its last fenced block, ended before the definition it was
    cut in, when the rest parses and defines something (another try may be cut off too)."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if line.lstrip().startswith(("```", "~~~"))]
    if len(fences) % 2 == 0:
        return None
    body = lines[fences[-1] + 1:]
    starts = [i for i, line in enumerate(body) if _DEF_START.match(line)]
    for cut in reversed(starts[1:]):
        kept = body[:cut]
        while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith("@")):
            kept.pop()
        if defines("\n".join(kept)):
            return "\n".join([*lines[:fences[-1] + 1], *kept, "```", ""])
    return None


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
