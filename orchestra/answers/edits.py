"""Search/replace edits against files that exist (Aider's blocks), or whole files."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from orchestra._errors import OutputError
from orchestra.answers._fences import (
    CODE_LANGS,
    assign,
    cut_off,
    format_example,
    match,
    normal,
    not_owned,
    prose,
)
from orchestra.models.base import OutputSchema


class Edit(pydantic.BaseModel):
    """Replace ``search`` (an exact excerpt of the file) by ``replace`` in ``path``."""

    model_config = pydantic.ConfigDict(defer_build=True)  # built at first use

    path: str
    search: str
    replace: str


class Edits(pydantic.BaseModel):
    """Search/replace edits and whole files, and the prose around them."""

    model_config = pydantic.ConfigDict(defer_build=True)  # built at first use

    edits: list[Edit] = pydantic.Field(default_factory=list)
    files: dict[str, str] = pydantic.Field(default_factory=dict)
    text: str = ""


class EditError(ValueError):
    """An edit whose search text is not in the file; the message says which."""


_EDIT = re.compile(
    r"(?:^(?P<path>[^\n]*)\n)?(?:`{3,}[^\n]*\n)?^<{5,9} ?SEARCH[^\n]*\n(?P<search>.*?)"
    r"^={5,9}[ \t]*\n(?P<replace>.*?)^>{5,9} ?REPLACE[^\n]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class EditBlocks:
    """Search/replace blocks against files that exist, or whole files (revisions).

    An edit block is Aider's: the path on its own line, then ``<<<<<<< SEARCH``, an
    exact excerpt of the file, ``=======``, its replacement, ``>>>>>>> REPLACE``.
    Apply the result with :func:`apply_edits` to the file's text *as the task saw
    it* (keep that text in the task input): the same answer then always yields the
    same file, so a step re-run after a crash writes the same bytes again.
    """

    paths: Callable[[Any], Sequence[str]]
    langs: frozenset[str] = frozenset(CODE_LANGS)
    output: type[pydantic.BaseModel] = Edits
    whole_files_first: bool = False
    """Ask for complete files first, edits as the exception (small models rewrite a
    small file more reliably than they copy its lines exactly)."""

    def __post_init__(self) -> None:
        if not (isinstance(self.output, type) and issubclass(self.output, Edits)):
            raise TypeError(f"EditBlocks(output={self.output!r}): give Edits or a subclass")

    def instructions(self) -> str:
        blocks = ("search/replace blocks: the file's path on its own line, then\n"
                  "<<<<<<< SEARCH\n<lines copied exactly from the file>\n=======\n"
                  "<the new lines>\n>>>>>>> REPLACE\n(one block per change)")
        if self.whole_files_first:
            return ("\n\n" + format_example("the complete file") + "\nTo change only a few "
                    f"lines of a long file you may reply instead with {blocks}.")
        return (f"\n\nTo change a file, reply with {blocks}, or with the complete new file "
                "in a fenced code block labelled with its path. Do not reply with JSON.")

    def task_note(self, task_input: Any) -> str:
        return (f"\n\nThe files this task may change: "
                f"{', '.join(normal(p) for p in self.paths(task_input))}.")

    def schema(self) -> OutputSchema | None:
        return None

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> pydantic.BaseModel:
        allowed = [normal(p) for p in self.paths(task_input)]
        edits: list[Edit] = []
        rest, pos = [], 0
        for m in _EDIT.finditer(text):
            label = (m.group("path") or "").strip()
            path = match(label, allowed) if label else (allowed[0] if len(allowed) == 1
                                                         else None)
            if path is None:
                raise OutputError(
                    f"Your edit block for {label or '(no path)'!r} does not name a file this "
                    f"task may change: {', '.join(allowed)}. Put the path on the line "
                    "before <<<<<<< SEARCH.", brief=f"an edit for {label!r}")
            edits.append(Edit(path=path, search=m.group("search"),
                              replace=m.group("replace")))
            rest.append(text[pos:m.start()])
            pos = m.end()
        rest.append(text[pos:])
        remaining = "".join(rest)
        if edits and truncated and "<<<<<<<" in remaining:
            raise cut_off(edits[-1].path)
        files, found, foreign = assign(remaining, truncated, allowed, set(self.langs)) if (
            "```" in remaining or "~~~" in remaining or not edits) else ({}, [], [])
        if foreign and not edits and not files:
            raise not_owned(foreign, allowed)
        if not edits and not files:
            if truncated:
                raise cut_off(allowed[0] if allowed else "your answer")
            raise OutputError(
                "Your answer has neither search/replace blocks nor a complete file. "
                + self.instructions().strip(), brief="no edits and no file in the answer")
        return self.output.model_validate({"edits": [e.model_dump() for e in edits],
                                           "files": files,
                                           "text": prose(remaining, found)})


def apply_edits(path: str, text: str, edits: Sequence[Edit]) -> str:
    """``text`` (the file at ``path``) with ``edits`` for that path applied in order.

    A search text must occur in the file: exactly, or else once when lines are
    compared without their surrounding whitespace. Raises :class:`EditError` naming
    the first excerpt not found.
    """
    for edit in (e for e in edits if normal(e.path) == normal(path)):
        if edit.search and edit.search in text:
            text = text.replace(edit.search, edit.replace, 1)
            continue
        if not edit.search.strip():  # an empty search appends (a new function)
            text = text.rstrip("\n") + "\n\n" + edit.replace
            continue
        lines, want = text.split("\n"), [ln.strip() for ln in edit.search.strip("\n").split("\n")]
        hits = [i for i in range(len(lines) - len(want) + 1)
                if [ln.strip() for ln in lines[i:i + len(want)]] == want]
        if len(hits) != 1:
            first = edit.search.strip().split("\n")[0][:120]
            raise EditError(f"the SEARCH text starting {first!r} is "
                            f"{'not' if not hits else 'more than once'} in {path}; copy the "
                            "lines exactly from the current file, or send the complete file")
        i = hits[0]
        lines[i:i + len(want)] = edit.replace.rstrip("\n").split("\n")
        text = "\n".join(lines)
    return text
