"""Orchestra requests to and from the OpenAI chat-completions JSON format.

Shared by the OpenAI-compatible HTTP adapter and the in-process GGUF adapter (whose
llama.cpp server speaks the same JSON). Pure functions on plain dicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from orchestra._types import Message
from orchestra.models._schema import strict_schema
from orchestra.models.base import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    ToolCall,
)
from orchestra.models.usage import usage_from_openai

ResponseFormatMode = Literal["json_schema", "json_object", "none"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class ShapeError(ValueError):
    """The response JSON is not a chat completion; the message says what is missing."""


def schema_name(name: str) -> str:
    """``name`` reduced to what providers accept for tool and schema names."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
    return cleaned or "output"


def message_to_chat(message: Message) -> dict[str, Any]:
    """One orchestra message as a chat-completions message."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "",
                "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments}}
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def response_format(output: OutputSchema, mode: ResponseFormatMode, *,
                    strict: bool = False) -> dict[str, Any] | None:
    """The ``response_format`` body field for ``mode`` (``None`` for ``"none"``).

    With ``strict`` (OpenAI's structured outputs) the schema is sent in its strict
    form when it has one, so decoding is constrained to it; otherwise as is.
    """
    if mode == "json_schema":
        strict_form = strict_schema(output.json_schema) if strict else None
        spec: dict[str, Any] = {"name": schema_name(output.name),
                                "schema": strict_form or output.json_schema,
                                "strict": strict_form is not None}
        if output.description:
            spec["description"] = output.description
        return {"type": "json_schema", "json_schema": spec}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def chat_body(request: ModelRequest, *, mode: ResponseFormatMode,
              max_tokens_field: str = "max_tokens", strict: bool = False) -> dict[str, Any]:
    """The chat-completions request body (without ``model``) for ``request``."""
    body: dict[str, Any] = {"messages": [message_to_chat(m) for m in request.messages]}
    if request.tools:
        body["tools"] = [
            {"type": "function",
             "function": {"name": t.name, "description": t.description,
                          "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.output is not None:
        fmt = response_format(request.output, mode, strict=strict)
        if fmt is not None:
            body["response_format"] = fmt
    settings = request.settings
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        body[max_tokens_field] = settings.max_tokens
    if settings.seed is not None:
        body["seed"] = settings.seed
    if settings.stop:
        body["stop"] = list(settings.stop)
    return body


def _arguments(raw: object) -> str:
    # Some servers send arguments as an object; the runtime wants the raw text.
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw)


def chat_response(data: object, *, model: str) -> ModelResponse:
    """A :class:`ModelResponse` from a decoded chat-completions response body.

    Tool-call arguments are passed through as raw text even when they are not valid
    JSON: the runtime feeds the parse error back to the model.
    """
    if not isinstance(data, Mapping):
        raise ShapeError(f"the body is a {type(data).__name__}, not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ShapeError("the body has no 'choices'")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ShapeError("choices[0] has no 'message'")
    calls: list[ToolCall] = []
    for index, raw in enumerate(message.get("tool_calls") or ()):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("function"), Mapping):
            raise ShapeError(f"tool_calls[{index}] has no 'function'")
        function = raw["function"]
        calls.append(ToolCall(id=str(raw.get("id") or f"call_{index}"),
                              name=str(function.get("name") or ""),
                              arguments=_arguments(function.get("arguments"))))
    finish = _FINISH.get(str(choice.get("finish_reason")), "stop")
    if calls and finish == "stop":
        finish = "tool_calls"
    if message.get("refusal") and not message.get("content"):
        finish = "content_filter"
    timings = data.get("timings")  # llama.cpp's server: its prompt-cache reuse
    content = message.get("content")
    return ModelResponse(
        text=content if isinstance(content, str) else "",
        tool_calls=tuple(calls),
        usage=usage_from_openai(data.get("usage"),
                                timings=timings if isinstance(timings, Mapping) else None),
        finish_reason=finish,
        model=str(data.get("model") or model),
    )
