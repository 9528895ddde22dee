"""A tool protocol for models without reliable native tool calls.

Small local models rarely make native tool calls: they write the call as text, or
repeat their input. :class:`JSONToolModel` wraps any model and turns a request
with tools into one that has *no* tools and a structured output instead: a union
schema "a call of one of these tools with its arguments, or the final answer".
The inner adapter constrains decoding to that schema (llama.cpp grammar, Ollama
``format``, OpenAI structured outputs), so every turn is one valid JSON object:

    {"name": "write_file", "arguments": {"path": "...", "content": "..."}}
    {"name": "final_answer", "arguments": {...the role's output...}}

The reply is turned back into an ordinary tool call or final text, so the runtime
journals, replays, approves and keys tool calls exactly as it does native ones.
History is rendered the same way: earlier calls as that JSON, results as user
messages. Requests without tools pass through untouched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from orchestra._types import Message
from orchestra.models._schema import SchemaError, inline_refs
from orchestra.models.base import (
    DeltaSink,
    Model,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    ToolCall,
    ToolSchema,
    context_window_of,
    streams,
)

__all__ = ["JSONToolModel", "protocol_request", "protocol_response"]

FINAL = "final_answer"
_STR_ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}},
               "required": ["answer"], "additionalProperties": False}


def _final_name(tools: tuple[ToolSchema, ...]) -> str:
    name = FINAL
    while name in {t.name for t in tools}:
        name += "_"
    return name


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        return inline_refs(schema)
    except SchemaError:  # recursive: left as is, the grammar builder copes or rejects it
        return schema


def union_schema(tools: tuple[ToolSchema, ...], output: OutputSchema | None) -> dict[str, Any]:
    """The schema of one turn: a call of one of ``tools``, or the final answer."""
    branches = []
    for tool in tools:
        branches.append({"type": "object", "properties": {
            "name": {"type": "string", "const": tool.name},
            "arguments": _inline(tool.parameters)},
            "required": ["name", "arguments"], "additionalProperties": False})
    answer = _inline(output.json_schema) if output is not None else _STR_ANSWER
    branches.append({"type": "object", "properties": {
        "name": {"type": "string", "const": _final_name(tools)}, "arguments": answer},
        "required": ["name", "arguments"], "additionalProperties": False})
    return {"anyOf": branches}


def _signature(tool: ToolSchema) -> str:
    params = ", ".join((tool.parameters.get("properties") or {}).keys())
    return f"- {tool.name}({params}): {tool.description}".rstrip(": ")


def _instructions(tools: tuple[ToolSchema, ...], output: OutputSchema | None) -> str:
    final = _final_name(tools)
    listed = "\n".join(_signature(t) for t in tools)
    answer = ("the answer described above" if output is not None
              else 'your answer as {"answer": "..."}')
    return ("\n\nEach of your replies is exactly one JSON object, one step at a time:\n"
            '- to use a tool: {"name": "<tool>", "arguments": {<its arguments>}}\n'
            f'- when you are done: {{"name": "{final}", "arguments": <{answer}>}}\n'
            f"Tools:\n{listed}\n"
            "After each tool call you get its result; then reply with the next JSON object.")


def _call_json(name: str, arguments: str) -> str:
    try:
        args: Any = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        args = arguments
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def _render(message: Message) -> Message:
    if message.role == "assistant" and message.tool_calls:
        text = "\n".join(_call_json(c.name, c.arguments) for c in message.tool_calls)
        return Message("assistant", text, name=message.name)
    if message.role == "tool":
        return Message("user", f"Result of {message.name or 'the tool'}:\n{message.content}")
    return message


def protocol_request(request: ModelRequest) -> ModelRequest:
    """``request`` as one with no tools and the union schema as its structured output."""
    messages = [_render(m) for m in request.messages]
    extra = _instructions(request.tools, request.output)
    if messages and messages[0].role == "system":
        messages[0] = replace(messages[0], content=messages[0].content + extra)
    else:
        messages.insert(0, Message("system", extra.strip()))
    description = "One step: a tool call or the final answer."
    output = OutputSchema("step", union_schema(request.tools, request.output), description)
    return replace(request, messages=tuple(messages), tools=(), output=output)


def protocol_response(request: ModelRequest, response: ModelResponse) -> ModelResponse:
    """The inner model's JSON turn as a tool call, or as the final answer's text.

    Text that is not one such object is passed on unchanged: the runtime feeds its
    problem back to the model as with any unusable reply.
    """
    if response.tool_calls:  # a server that made a native call after all
        return response
    try:
        data = json.loads(response.text)
    except json.JSONDecodeError:
        return response
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return response
    name, arguments = data["name"], data.get("arguments")
    if name == _final_name(request.tools):
        if request.output is None and isinstance(arguments, dict) and "answer" in arguments:
            return replace(response, text=str(arguments["answer"]), finish_reason="stop")
        return replace(response, text=json.dumps(arguments, ensure_ascii=False),
                       finish_reason="stop" if response.finish_reason != "length" else "length")
    if name not in {t.name for t in request.tools} or not isinstance(arguments, dict):
        return response
    raw = json.dumps(arguments, ensure_ascii=False)
    # an id stable across replays: derived from where the call stands in the conversation
    digest = hashlib.sha256(f"{len(request.messages)}:{name}:{raw}".encode()).hexdigest()[:12]
    return replace(response, text="", tool_calls=(ToolCall(f"call_{digest}", name, raw),),
                   finish_reason="tool_calls")


class JSONToolModel:
    """Wraps ``inner`` so tool turns are constrained JSON objects (see the module doc)."""

    def __init__(self, inner: Model, *, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name

    def __repr__(self) -> str:
        return f"JSONToolModel({self.inner!r})"

    @property
    def context_tokens(self) -> int | None:
        """The inner model's context window as known now (it may learn it later)."""
        window = getattr(self.inner, "context_tokens", None)
        return window if isinstance(window, int) else None

    async def context_window(self) -> int | None:
        """The inner model's context window, learned from its server if it can."""
        return await context_window_of(self.inner)

    async def request(self, request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return await self.inner.request(request)
        response = await self.inner.request(protocol_request(request))
        return protocol_response(request, response)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``, the inner model's answer streamed as it writes it (a tool turn's
        pieces are the JSON object it writes, before it becomes a tool call)."""
        if not streams(self.inner):
            return await self.request(request)
        if not request.tools:
            return await self.inner.request_stream(request, sink)
        response = await self.inner.request_stream(protocol_request(request), sink)
        return protocol_response(request, response)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
