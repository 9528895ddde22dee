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

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable

import pydantic

from orchestra._errors import OutputError
from orchestra.models.base import OutputSchema

__all__ = ["AnswerFormat", "Edit", "EditBlocks", "EditError", "Edits", "FileBlocks", "Files",
           "apply_edits"]

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


class Files(pydantic.BaseModel):
    """Whole files, by workspace-relative path, and the prose around them."""

    files: dict[str, str]
    text: str = ""


class Edit(pydantic.BaseModel):
    """Replace ``search`` (an exact excerpt of the file) by ``replace`` in ``path``."""

    path: str
    search: str
    replace: str


class Edits(pydantic.BaseModel):
    """Search/replace edits and whole files, and the prose around them."""

    edits: list[Edit] = pydantic.Field(default_factory=list)
    files: dict[str, str] = pydantic.Field(default_factory=dict)
    text: str = ""


class EditError(ValueError):
    """An edit whose search text is not in the file; the message says which."""


# ``` or ~~~ fences of three or more; the info string may carry a language and a path
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$",
                         re.MULTILINE)
_PATHISH = re.compile(r"[\w./-]*\w\.\w+|[\w.-]+/[\w./-]+")
_LABEL_LINE = re.compile(r"^\W*(?:(?:file|path|filename)\s*[:=]\s*)?([\w./-]+\.\w+)\W*$",
                         re.IGNORECASE)
_COMMENT_LABEL = re.compile(r"^\s*(?:#|//|--)\s*(?:(?:file|path|filename)\s*[:=]\s*)?"
                            r"([\w./-]+\.\w+)\s*$", re.IGNORECASE)
_CODE_LANGS = {"", "python", "py", "python3"}


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its label (a path, or ''), language, body and whether it closed."""

    label: str
    lang: str
    body: str
    closed: bool
    start: int
    end: int


def _normal(path: str) -> str:
    return str(PurePosixPath(path.strip().strip("`*'\"").lstrip("./") or "."))


def _label_before(text: str, start: int) -> str:
    """A path on the line just before a fence ('' when there is none)."""
    before = text[:start].rstrip("\n").rsplit("\n", 1)[-1].strip()
    match = _LABEL_LINE.match(before) if before else None
    if match:
        return match.group(1)
    found = _PATHISH.findall(before) if before and len(before) < 160 else []
    return found[-1] if found else ""


def blocks(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order; the last may be unclosed (cut off)."""
    out: list[Block] = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if m is None:
            return out
        fence, info = m.group("fence"), m.group("info").strip()
        words = info.split()
        lang = words[0].lower() if words and not _PATHISH.fullmatch(words[0]) else ""
        label = next((w for w in words if _PATHISH.fullmatch(w) and "." in w), "")
        body_start = m.end() + 1
        close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$",
                           re.MULTILINE).search(text, body_start)
        body = text[body_start:close.start() if close else len(text)]
        start = m.start()
        if not label:
            label = _label_before(text, m.start())
            if label:  # the label line belongs to the block, not to the prose
                start = text.rfind("\n", 0, max(0, m.start() - 1)) + 1
        end = close.end() if close else len(text)
        parts = _split_by_comment_labels(body)
        if len(parts) > 1 and not label:  # several files in one block, "# path" before each
            out += [Block(path, lang, part, close is not None or i < len(parts) - 1, start,
                          end) for i, (path, part) in enumerate(parts)]
        else:
            first = body.split("\n", 1)[0]
            comment = _COMMENT_LABEL.match(first)
            if comment and not label:
                label = comment.group(1)
            out.append(Block(label, lang, body.rstrip("\n") + "\n" if body.strip() else "",
                             close is not None, start, end))
        if close is None:
            return out
        pos = close.end()


def _split_by_comment_labels(body: str) -> list[tuple[str, str]]:
    """A block's body cut at lines that are only a comment naming a file
    (``# kata/roman.py``), when it holds several: [(path, text)]; else one part."""
    lines = body.split("\n")
    marks = [i for i, ln in enumerate(lines) if (m := _COMMENT_LABEL.match(ln))
             and "/" in m.group(1).strip("/")]
    if len(marks) < 2 or any(ln.strip() for ln in lines[:marks[0]]):
        return [("", body)]
    parts = []
    for a, b in zip(marks, [*marks[1:], len(lines)], strict=True):
        match = _COMMENT_LABEL.match(lines[a])
        assert match is not None
        text = "\n".join(lines[a + 1:b]).strip("\n")
        parts.append((match.group(1), text + "\n" if text.strip() else ""))
    return parts


def _unwrap_json(text: str) -> str:
    """A reply that is JSON after all (``{"module_code": "```python ..."}``): its string
    values joined, so fenced blocks inside them are found; otherwise ``text``."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return text
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        return text
    strings: list[str] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, str):
            strings.append(value if "```" in value or "\n" not in value
                           else f"{key}\n```\n{value}\n```")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)

    walk(data)
    return "\n\n".join(strings)


def _prose(text: str, found: Sequence[Block]) -> str:
    parts, pos = [], 0
    for b in found:
        parts.append(text[pos:b.start])
        pos = b.end
    parts.append(text[pos:])
    return " ".join(" ".join(parts).split())[:2000]


def _match(label: str, allowed: Sequence[str]) -> str | None:
    """The allowed path a label means: the same path, or the only one with its name."""
    norm = _normal(label)
    if norm in allowed:
        return norm
    named = [p for p in allowed if PurePosixPath(p).name == PurePosixPath(norm).name]
    return named[0] if len(named) == 1 else None


def _cut_off(path: str) -> OutputError:
    return OutputError(
        f"Your reply was cut off at the token limit in the middle of {path}. Reply again "
        "with the complete file, shorter: no explanations, no examples of use, brief "
        "comments.", brief=f"the reply was cut off at the token limit in {path}")


def _assign(text: str, truncated: bool, allowed: Sequence[str], langs: set[str],
            ) -> tuple[dict[str, str], list[Block], list[str]]:
    """Map the fenced blocks of ``text`` to ``allowed`` paths (see the module doc); also
    the labels of blocks for paths that are not allowed (never written)."""
    text = _unwrap_json(text)
    found = blocks(text)
    if not found and text.strip() and len(allowed) == 1 and not truncated:
        # no fence at all: a bare file is the one file expected if it looks like code
        found = [Block("", "", text.strip() + "\n", True, 0, len(text))]
    files: dict[str, str] = {}
    unlabelled: list[Block] = []
    foreign: list[str] = []
    for b in found:
        if not b.closed and truncated:
            raise _cut_off(_match(b.label, allowed) or b.label or "a file")
        if b.label and "." in PurePosixPath(b.label).name:
            path = _match(b.label, allowed)
            if path is None:
                foreign.append(b.label)
            else:
                files[path] = b.body
        elif b.lang in langs and b.body.strip():
            unlabelled.append(b)
    for b in unlabelled:  # an unlabelled block fills the next file not yet given
        rest = [p for p in allowed if p not in files]
        if not rest:
            break
        files[rest[0]] = b.body
    return files, found, foreign


def _not_owned(foreign: Sequence[str], allowed: Sequence[str]) -> OutputError:
    return OutputError(
        f"Your answer has a block for {foreign[0]!r}, which this task does not write. This "
        f"task writes only: {', '.join(allowed)}. Label each block with one of those paths.",
        brief=f"a block for {foreign[0]!r}, not one of {', '.join(allowed)}")


def _format_example(what: str) -> str:
    return ("Reply with " + what + ", each in a fenced code block with the file's path on "
            "the line just before it:\n\n<path of the file>\n```python\n<the complete "
            "file>\n```\n\nWrite the code only inside such blocks. Do not reply with JSON.")


@dataclass(frozen=True)
class FileBlocks:
    """Whole files as fenced blocks labelled with their paths (new files).

    ``paths`` gives the files a task writes (from its input); all of them must be in
    the answer unless ``partial``. ``output`` may be a subclass of :class:`Files` with
    more fields (with defaults), which a role's ``check_output`` can fill. ``langs``
    are the fence languages an unlabelled block may have to count as a file (a
    ```` ```bash ```` example does not).
    """

    paths: PathsOf
    partial: bool = False
    langs: frozenset[str] = frozenset(_CODE_LANGS)
    output: type[pydantic.BaseModel] = Files

    def instructions(self) -> str:
        return "\n\n" + _format_example("the complete files")

    def task_note(self, task_input: Any) -> str:
        paths = self._allowed(task_input)
        return (f"\n\nThe file{'s' if len(paths) > 1 else ''} this task writes: "
                f"{', '.join(paths)}. Reply with {'each' if len(paths) > 1 else 'it'} "
                "complete, in a fenced block labelled with its path.")

    def schema(self) -> OutputSchema | None:
        return None

    def _allowed(self, task_input: Any) -> list[str]:
        return [_normal(p) for p in self.paths(task_input)]

    def __post_init__(self) -> None:
        if not (isinstance(self.output, type) and issubclass(self.output, Files)):
            raise TypeError(f"FileBlocks(output={self.output!r}): give Files or a subclass")

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> pydantic.BaseModel:
        allowed = self._allowed(task_input)
        files, found, foreign = _assign(text, truncated, allowed, set(self.langs))
        missing = [p for p in allowed if p not in files]
        if foreign and (missing or not files):
            raise _not_owned(foreign, allowed)
        if missing and not self.partial:
            if truncated:
                raise _cut_off(missing[0])
            raise OutputError(
                f"Your answer has no code block for {', '.join(missing)}. "
                + _format_example("the complete file" + ("s" if len(missing) > 1 else "")),
                brief=f"no code block for {', '.join(missing)}")
        return self.output.model_validate({"files": files, "text": _prose(text, found)})


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

    paths: PathsOf
    langs: frozenset[str] = frozenset(_CODE_LANGS)
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
            return ("\n\n" + _format_example("the complete file") + "\nTo change only a few "
                    f"lines of a long file you may reply instead with {blocks}.")
        return (f"\n\nTo change a file, reply with {blocks}, or with the complete new file "
                "in a fenced code block labelled with its path. Do not reply with JSON.")

    def task_note(self, task_input: Any) -> str:
        return (f"\n\nThe files this task may change: "
                f"{', '.join(_normal(p) for p in self.paths(task_input))}.")

    def schema(self) -> OutputSchema | None:
        return None

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> pydantic.BaseModel:
        allowed = [_normal(p) for p in self.paths(task_input)]
        edits: list[Edit] = []
        rest, pos = [], 0
        for m in _EDIT.finditer(text):
            label = (m.group("path") or "").strip()
            path = _match(label, allowed) if label else (allowed[0] if len(allowed) == 1
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
            raise _cut_off(edits[-1].path)
        files, found, foreign = _assign(remaining, truncated, allowed, set(self.langs)) if (
            "```" in remaining or "~~~" in remaining or not edits) else ({}, [], [])
        if foreign and not edits and not files:
            raise _not_owned(foreign, allowed)
        if not edits and not files:
            if truncated:
                raise _cut_off(allowed[0] if allowed else "your answer")
            raise OutputError(
                "Your answer has neither search/replace blocks nor a complete file. "
                + self.instructions().strip(), brief="no edits and no file in the answer")
        return self.output.model_validate({"edits": [e.model_dump() for e in edits],
                                           "files": files,
                                           "text": _prose(remaining, found)})


def apply_edits(path: str, text: str, edits: Sequence[Edit]) -> str:
    """``text`` (the file at ``path``) with ``edits`` for that path applied in order.

    A search text must occur in the file: exactly, or else once when lines are
    compared without their surrounding whitespace. Raises :class:`EditError` naming
    the first excerpt not found.
    """
    for edit in (e for e in edits if _normal(e.path) == _normal(path)):
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
