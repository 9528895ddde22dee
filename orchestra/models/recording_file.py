"""A recording's file: responses as JSON and back, and its lines read (model calls; the
lines of its tool tape, ``orchestra.models.tape``, are skipped here)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from orchestra._errors import UserError
from orchestra.models.base import FinishReason, ModelResponse, ToolCall, Usage

_FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))


def dump_response(response: ModelResponse) -> dict[str, Any]:
    """A response as plain JSON data (the inverse of :func:`load_response`)."""
    return {
        "text": response.text,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                       for c in response.tool_calls],
        "usage": _dump_usage(response.usage),
        "finish_reason": response.finish_reason,
        "model": response.model,
    }


_USAGE_EXTRA = ("cached_input_tokens", "cache_write_tokens", "reasoning_tokens")
"""Usage counts beyond input and output, in :class:`Usage`'s field order; a session
recorded before they were counted has none (read as 0), and writes none when all are 0."""


def _dump_usage(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {"input_tokens": usage.input_tokens,
                           "output_tokens": usage.output_tokens, "cost": usage.cost}
    out.update({name: getattr(usage, name) for name in _USAGE_EXTRA if getattr(usage, name)})
    return out


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = data.get(name, default)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"{name!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def load_response(data: object) -> ModelResponse:
    """A response from :func:`dump_response` data; ``ValueError`` says what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a response must be a JSON object, got {type(data).__name__}")
    calls = []
    for raw in _field(data, "tool_calls", list, []):
        if not isinstance(raw, Mapping):
            raise ValueError(f"a tool call must be a JSON object, got {raw!r}")
        calls.append(ToolCall(id=_field(raw, "id", str, ""), name=_field(raw, "name", str, ""),
                              arguments=_field(raw, "arguments", str, "")))
    usage = _field(data, "usage", Mapping, {})
    finish = _field(data, "finish_reason", str, "stop")
    if finish not in _FINISH_REASONS:
        raise ValueError(f"'finish_reason' {finish!r} is not one of {sorted(_FINISH_REASONS)}")
    return ModelResponse(
        text=_field(data, "text", str, ""), tool_calls=tuple(calls),
        usage=Usage(_field(usage, "input_tokens", int, 0), _field(usage, "output_tokens", int, 0),
                    float(_field(usage, "cost", (int, float), 0.0)),
                    *(_field(usage, name, int, 0) for name in _USAGE_EXTRA)),
        finish_reason=finish, model=_field(data, "model", str, ""))


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One line of a recording."""

    key: str
    index: int
    request: dict[str, Any]
    response: ModelResponse


def read_recording(path: str | os.PathLike[str]) -> list[RecordedCall]:
    """Every call in a recording, in file order; a bad line raises ``UserError``."""
    file = Path(path)
    return recorded_calls(file, recording_rows(file))


def recording_rows(file: Path) -> list[tuple[int, Any]]:
    """The recording's lines, parsed, with their line numbers (blank lines skipped)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"recording '{file}' does not exist; record one with "
                        "RecordingModel(model, path) first") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except ValueError as exc:
            raise UserError(f"recording '{file}' line {number} is not a recorded call: "
                            f"{exc}") from None
    return rows


def recorded_calls(file: Path, rows: list[tuple[int, Any]]) -> list[RecordedCall]:
    """The model calls among a recording's lines (its tool tape's lines are skipped)."""
    calls = []
    for number, row in rows:
        if isinstance(row, dict) and "mcp" in row:
            continue
        try:
            if not isinstance(row, dict):
                raise ValueError("the line is not a JSON object")
            call = RecordedCall(key=_field(row, "key", str, None),
                                index=_field(row, "index", int, None),
                                request=_field(row, "request", dict, None),
                                response=load_response(row.get("response")))
        except ValueError as exc:
            raise UserError(f"recording '{file}' line {number} is not a recorded call: "
                            f"{exc}") from None
        calls.append(call)
    return calls


def responses_from_file(path: str | os.PathLike[str]) -> list[ModelResponse]:
    """The recorded responses in file order (e.g. to script a ``ScriptedModel``)."""
    return [call.response for call in read_recording(path)]
