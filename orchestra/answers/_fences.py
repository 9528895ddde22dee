"""Fenced blocks in a model's reply: found, labelled with paths, assigned to files."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from orchestra._errors import OutputError

# ``` or ~~~ fences of three or more; the info string may carry a language and a path
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$",
                         re.MULTILINE)
_PATHISH = re.compile(r"[\w./-]*\w\.\w+|[\w.-]+/[\w./-]+")
_LABEL_LINE = re.compile(r"^\W*(?:(?:file|path|filename)\s*[:=]\s*)?([\w./-]+\.\w+)\W*$",
                         re.IGNORECASE)
_COMMENT_LABEL = re.compile(r"^\s*(?:#|//|--)\s*(?:(?:file|path|filename)\s*[:=]\s*)?"
                            r"([\w./-]+\.\w+)\s*$", re.IGNORECASE)
CODE_LANGS = {"", "python", "py", "python3"}


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its label (a path, or ''), language, body and whether it closed."""

    label: str
    lang: str
    body: str
    closed: bool
    start: int
    end: int


def normal(path: str) -> str:
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


def prose(text: str, found: Sequence[Block]) -> str:
    parts, pos = [], 0
    for b in found:
        parts.append(text[pos:b.start])
        pos = b.end
    parts.append(text[pos:])
    return " ".join(" ".join(parts).split())[:2000]


def match(label: str, allowed: Sequence[str]) -> str | None:
    """The allowed path a label means: the same path, its dotted module form, or the only
    allowed path with its name."""
    norm = normal(label)
    if norm in allowed:
        return norm
    stem, dot, ext = norm.rpartition(".")
    if dot and "/" not in norm and "." in stem:  # written as a module: calc.evaluator.py
        if (dotted := f"{stem.replace('.', '/')}.{ext}") in allowed:
            return dotted
    named = [p for p in allowed if PurePosixPath(p).name == PurePosixPath(norm).name]
    return named[0] if len(named) == 1 else None


def cut_off(path: str) -> OutputError:
    return OutputError(
        f"Your reply was cut off at the token limit in the middle of {path}. Reply again "
        "with the complete file, shorter: no explanations, no examples of use, brief "
        "comments.", brief=f"the reply was cut off at the token limit in {path}")


def assign(text: str, truncated: bool, allowed: Sequence[str], langs: set[str],
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
            raise cut_off(match(b.label, allowed) or b.label or "a file")
        if b.label and "." in PurePosixPath(b.label).name:
            path = match(b.label, allowed)
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


def not_owned(foreign: Sequence[str], allowed: Sequence[str]) -> OutputError:
    return OutputError(
        f"Your answer has a block for {foreign[0]!r}, which this task does not write. This "
        f"task writes only: {', '.join(allowed)}. Label each block with one of those paths.",
        brief=f"a block for {foreign[0]!r}, not one of {', '.join(allowed)}")


def format_example(what: str) -> str:
    # in words, with no template to fill in: a small model copies a template's
    # placeholders ("<path of the file>") as its answer (seen with Qwen2.5-Coder-1.5B)
    return ("Reply with " + what + ", each in its own fenced code block (```python ... "
            "```), with the file's path alone on the line just before the opening fence. "
            "Write the code only inside such blocks. Do not reply with JSON.")
