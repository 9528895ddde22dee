"""Whole files as fenced blocks labelled with their paths."""

from __future__ import annotations

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
    normal,
    not_owned,
    prose,
)
from orchestra.models.base import OutputSchema


class Files(pydantic.BaseModel):
    """Whole files, by workspace-relative path, and the prose around them."""

    model_config = pydantic.ConfigDict(defer_build=True)  # built at first use

    files: dict[str, str]
    text: str = ""


@dataclass(frozen=True)
class FileBlocks:
    """Whole files as fenced blocks labelled with their paths (new files).

    ``paths`` gives the files a task writes (from its input); all of them must be in
    the answer unless ``partial``. ``output`` may be a subclass of :class:`Files` with
    more fields (with defaults), which a role's ``check_output`` can fill. ``langs``
    are the fence languages an unlabelled block may have to count as a file (a
    ```` ```bash ```` example does not).
    """

    paths: Callable[[Any], Sequence[str]]
    partial: bool = False
    langs: frozenset[str] = frozenset(CODE_LANGS)
    output: type[pydantic.BaseModel] = Files

    def instructions(self) -> str:
        return "\n\n" + format_example("the complete files")

    def task_note(self, task_input: Any) -> str:
        paths = self._allowed(task_input)
        return (f"\n\nThe file{'s' if len(paths) > 1 else ''} this task writes: "
                f"{', '.join(paths)}. Reply with {'each' if len(paths) > 1 else 'it'} "
                "complete, in a fenced block labelled with its path.")

    def schema(self) -> OutputSchema | None:
        return None

    def _allowed(self, task_input: Any) -> list[str]:
        return [normal(p) for p in self.paths(task_input)]

    def __post_init__(self) -> None:
        if not (isinstance(self.output, type) and issubclass(self.output, Files)):
            raise TypeError(f"FileBlocks(output={self.output!r}): give Files or a subclass")

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> pydantic.BaseModel:
        allowed = self._allowed(task_input)
        files, found, foreign = assign(text, truncated, allowed, set(self.langs))
        missing = [p for p in allowed if p not in files]
        if foreign and (missing or not files):
            raise not_owned(foreign, allowed)
        if missing and not self.partial:
            if truncated:
                raise cut_off(missing[0])
            raise OutputError(
                f"Your answer has no code block for {', '.join(missing)}. "
                + format_example("the complete file" + ("s" if len(missing) > 1 else "")),
                brief=f"no code block for {', '.join(missing)}")
        return self.output.model_validate({"files": files, "text": prose(text, found)})
