"""Making sense of what a model wrote: structured output and tool calls in text.

Weak models wrap JSON in prose or code fences, and write tool calls as text
(``<tool_call>{...}</tool_call>`` or a bare ``{"name": ..., "arguments": ...}``).
These functions recover what is unambiguous and otherwise return an error text
that is fed back to the model.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import Any

import pydantic

from orchestra._errors import OutputError, one_line
from orchestra.models.base import ToolCall

__all__ = ["OutputError", "one_line", "parse_output", "recover_text_tool_calls",
           "refuse_echo"]

_FENCE = re.compile(r"```(?:json|JSON|python)?\s*\n?(.*?)```", re.DOTALL)
_OPENING = re.compile(r"\s*```[\w+-]*[ \t]*\n?")
_ECHO_CHARS = 80
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    found = [stripped]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        found.append(stripped[start:end + 1])
    return found


def _first_json(text: str) -> tuple[Any, str]:
    """The first JSON value found in ``text`` (whole text, a fenced block, or ``{...}``),
    and the text it was parsed from."""
    errors: list[json.JSONDecodeError] = []
    for candidate in _json_candidates(text):
        try:
            return json.loads(candidate), candidate
        except json.JSONDecodeError as exc:
            errors.append(exc)
    if not errors:
        raise OutputError("Your reply is not valid JSON.")
    # report the candidate that parsed furthest: for a fenced block that is the error
    # inside the block, not "Expecting value at line 1 column 1" at the opening fence
    error = max(errors, key=lambda e: e.pos)
    near = error.doc[max(0, error.pos - 30):error.pos + 10]
    raise OutputError(f"Your reply is not valid JSON ({error.msg} at line {error.lineno} "
                      f"column {error.colno}, near {near!r}).")


def parse_output(text: str, output: type[pydantic.BaseModel], *, truncated: bool) -> Any:
    """Validate the final answer against the role's output model.

    The answer is validated as JSON text (pydantic's JSON mode: a strict model takes an
    array for a tuple, an ISO string for a datetime), bare or found inside prose."""
    try:  # the usual reply, a bare JSON answer: parsed and validated in one pass
        return output.model_validate_json(text)
    except pydantic.ValidationError:
        pass  # prose or a fence around it, or a real mismatch: the path below says which
    data: Any = None
    try:
        data, candidate = _first_json(text)
        return output.model_validate_json(candidate)
    except (OutputError, pydantic.ValidationError) as exc:
        if isinstance(exc, pydantic.ValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                for e in exc.errors()[:10])
            message = f"Your JSON does not match the {output.__name__} schema: {problems}."
            if _echoes_schema(data):
                # sending the schema again would invite the same copy
                fields = ", ".join(output.model_fields)
                raise OutputError(f"You replied with the JSON schema itself, not an answer. "
                                  f"Reply with only a JSON object with the fields {fields}, "
                                  f"filled in with your actual answer.",
                                  brief="the reply copied the JSON schema instead of "
                                  "answering") from exc
        else:
            message = str(exc)
        if truncated:
            message += " Your reply was cut off by the token limit: answer more briefly."
        schema = json.dumps(output.model_json_schema(), separators=(",", ":"))
        raise OutputError(f"{message} Reply with only a JSON object (your answer, not the "
                          f"schema) matching this schema: {schema[:4000]}",
                          brief=message) from exc


_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_CALL_KEYS = frozenset({"name", "tool", "function", "arguments", "parameters", "args", "id",
                        "type"})


def _echoes_schema(data: Any) -> bool:
    """True when ``data`` looks like a JSON schema (weak models copy the one we send)."""
    return (isinstance(data, dict) and isinstance(data.get("properties"), dict)
            and data.get("type") == "object")


def _as_call(obj: Any, index: int, tool_names: Collection[str], *, tagged: bool
             ) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name") or obj.get("tool") or obj.get("function")
    args = obj.get("arguments", obj.get("parameters", obj.get("args")))
    if not isinstance(name, str) or args is None:
        return None
    if not tagged and name not in tool_names and (
            not obj.keys() <= _CALL_KEYS or not _TOOL_NAME.fullmatch(name)):
        # bare JSON naming no tool, with keys beside name/arguments or a name no function
        # can have ("calc/add.py"): an answer (say a plan), not a call; calling it a call
        # to an unknown tool would steer the model away from answering (both seen with
        # Qwen2.5-Coder-0.5B)
        return None
    if isinstance(args, str):
        raw = args
    elif isinstance(args, dict):
        raw = json.dumps(args)
    else:
        return None
    return ToolCall(id=f"text_call_{index}", name=name, arguments=raw)


def recover_text_tool_calls(text: str, tool_names: Collection[str]) -> list[ToolCall] | str:
    """Tool calls written as text, if unambiguous; an error text if they look wrong.

    Returns ``[]`` when the text does not look like a tool call at all.
    """
    if not text or not tool_names:
        return []
    chunks = [m.group(1) for m in _TAGGED.finditer(text)]
    tagged = bool(chunks)
    if not tagged:
        chunks = _json_candidates(text)
    calls: list[ToolCall] = []
    for chunk in chunks:
        try:
            obj = json.loads(chunk)
        except json.JSONDecodeError:
            if tagged:
                return f"Your <tool_call> block is not valid JSON: {chunk[:200]!r}"
            continue
        items = obj if isinstance(obj, list) else [obj]
        parsed = [_as_call(item, len(calls) + i, tool_names, tagged=tagged)
                  for i, item in enumerate(items)]
        if any(p is None for p in parsed):
            continue
        calls.extend(p for p in parsed if p is not None)
        if not tagged:
            break  # the first JSON that parses is the one the model meant
    if not calls:
        return []
    unknown = sorted({c.name for c in calls} - set(tool_names))
    if unknown:
        return (f"You wrote a call to unknown tool(s) {unknown} as text. Available tools: "
                f"{sorted(tool_names)}. Call tools with the tool-calling interface. When "
                "you are done, reply with your final answer itself, not as a tool call.")
    return calls


def refuse_echo(text: str, task: str) -> None:
    """Refuse a reply that opens by copying its task's text from its start: no
    answer, and no syntax error to fix either. Seen from Qwen2.5-Coder-1.5B, five replies
    in a row, each fed back its "invalid Python" and answered with the same copy."""
    body, task = _OPENING.sub("", text, count=1).split("```", 1)[0].strip(), task.strip()
    # from the task's start, nearly all of it: a revision may rightly repeat a file the
    # task quotes, or begins with, but not the words that ask for it (compared as one
    # slice: a step's reply used to be walked character by character)
    needed = math.ceil(max(_ECHO_CHARS, 0.9 * len(task)))
    if len(body) >= needed and len(task) >= needed and body[:needed] == task[:needed]:
        raise OutputError("Your reply copied the text of your task instead of answering "
                          "it. Do not repeat the task: write only the answer it asks for.",
                          brief="the reply copied the task's text", afresh=True)
