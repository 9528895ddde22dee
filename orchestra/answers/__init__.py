"""Answer formats: how a role writes its final answer, and how it is read back.

Code forced into JSON strings is where small (and not so small) models fail: they
put a fenced block inside the string, escape it wrong, or type a path where the
code belongs. A role whose answer is files declares a text format instead::

    class Coder(Role):
        \"\"\"You implement one module.\"\"\"
        answer = FileBlocks(paths=lambda task_input: [task_input["module"]["path"]])

The final answer is then plain markdown: each file in a fenced block, its path on
the line before. :class:`FileBlocks` parses it into :class:`Files`;
:class:`EditBlocks` also takes search/replace blocks against existing files (for
revisions) into :class:`Edits`. JSON stays the default for small structured
answers (a plan, a review). Parsed answers are journaled, replayed, checked and
routed like any other output: they are ordinary pydantic models.

Parsing is tolerant where the intent is unambiguous (a fence inside a JSON string is
unwrapped; one unlabelled block is the one file the task expects; a label given as a
comment on the block's first line counts) and strict where it is not (a block for a
path the task does not own is never taken, and an answer without the task's own files
is refused naming the allowed paths; an answer cut off at the token limit is said to
be cut off, never "invalid code").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import pydantic

from orchestra.answers.edits import Edit, EditBlocks, EditError, Edits, apply_edits
from orchestra.answers.files import FileBlocks, Files
from orchestra.models.base import OutputSchema

__all__ = ["AnswerFormat", "Edit", "EditBlocks", "EditError", "Edits", "FileBlocks", "Files",
           "PathsOf", "apply_edits"]

PathsOf = Callable[[Any], Sequence[str]]
"""The files a task may write, from its input."""


@runtime_checkable
class AnswerFormat(Protocol):
    """How a role's final answer is written (``instructions``) and read (``parse``)."""

    @property
    def output(self) -> type[pydantic.BaseModel]:
        """The pydantic model ``parse`` returns (the role's ``output``)."""
        ...

    def instructions(self) -> str:
        """How to write the answer; appended to the role's system prompt (the same for
        every task, so a server's prompt cache keeps the prefix)."""
        ...

    def task_note(self, task_input: Any) -> str:
        """What this task's answer must contain (its paths); appended to the task."""
        ...

    def schema(self) -> OutputSchema | None:
        """A JSON schema to constrain decoding to, or None for free text."""
        ...

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> pydantic.BaseModel:
        """The answer in ``text``; raise :class:`OutputError` with what to fix."""
        ...
