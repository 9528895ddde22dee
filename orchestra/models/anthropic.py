"""Anthropic's Messages API, on the official ``anthropic`` SDK's ``AsyncAnthropic``.

Structured output is asked for by offering one extra tool named after the output
schema whose input schema is the answer. It is forced when the role has no other
tools; with tools, ``tool_choice: any`` makes every turn a tool call, so a turn is
either a real call or the answer through that tool (never free text). Its input is
returned as JSON text so the runtime validates it like any other model's JSON.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestra._errors import ModelAPIError, UserError
from orchestra._secrets import mask_url
from orchestra._types import Message
from orchestra.models._chat_format import schema_name
from orchestra.models._guard import check_allowed
from orchestra.models._http import (
    Backoff,
    Endpoint,
    Failure,
    call_with_retries,
    classify_sdk_error,
    load_key,
)
from orchestra.models.base import (
    DeltaSink,
    FinishReason,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from orchestra.models.usage import usage_from_anthropic

if TYPE_CHECKING:
    import anthropic as anthropic_sdk

__all__ = ["AnthropicModel"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_DUMMY_KEY = "orchestra-no-key"
_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
    "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter",
}


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise UserError("the Anthropic adapter needs the anthropic SDK: "
                        "pip install -e '.[anthropic]' (from an orchestra checkout)") from None
    return anthropic


def _tool_input(arguments: str) -> dict[str, Any]:
    # tool_use.input must be an object; a history from another model may hold bad JSON.
    try:
        value = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                 "content": message.content}]
    blocks: list[dict[str, Any]] = []
    if message.content:  # the API rejects empty text blocks
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls if message.role == "assistant" else ():
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                       "input": _tool_input(call.arguments)})
    return blocks


def to_anthropic_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the alternating user/assistant turns for ``messages``.

    System messages are joined into the system prompt; tool results become
    ``tool_result`` blocks of a user turn, and consecutive turns of one role are
    merged (so several tool results travel in one user message).
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return "\n\n".join(s for s in system if s), turns


class AnthropicModel:
    """A Claude model over the Messages API.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (required for
    api.anthropic.com); the base URL from ``base_url`` or ``ANTHROPIC_BASE_URL``.
    ``max_tokens`` is the reply budget when a request's settings do not set one
    (the API requires it). ``temperature`` and ``seed`` are not sent: the current
    Messages API (and SDK) no longer takes sampling settings.
    """

    name: str

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_retries: int = 4, timeout: float = 120.0, max_tokens: int = 4096,
                 name: str | None = None, backoff: Backoff | None = None,
                 context_tokens: int | None = None) -> None:
        if not model:
            raise UserError("AnthropicModel needs a model name, e.g. "
                            "AnthropicModel('claude-sonnet-4-5')")
        self._sdk = _import_sdk()
        self.model = model
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL")
                         or ANTHROPIC_BASE_URL).rstrip("/")
        key = load_key(api_key, "ANTHROPIC_API_KEY")
        if not key and self.base_url == ANTHROPIC_BASE_URL:
            raise UserError(f"Anthropic model {model!r}: no API key. Set ANTHROPIC_API_KEY "
                            "(or pass api_key=...).")
        self.__api_key = key or _DUMMY_KEY
        self.max_retries = max_retries
        self.timeout = timeout
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self.backoff = backoff or Backoff()
        self.name = name or f"anthropic:{model}"
        self._endpoint = Endpoint(model=model, base_url=self.base_url, provider="Anthropic",
                                  key_env="ANTHROPIC_API_KEY (or api_key=...)",
                                  secrets=(self.__api_key,))
        self._client: anthropic_sdk.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (f"AnthropicModel(model={self.model!r}, base_url={mask_url(self.base_url)!r}, "
                f"name={self.name!r})")

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one Messages call, retrying transient failures (529 overloaded too)."""
        check_allowed(self.name)
        body, output_tool = self._body(request)
        return await call_with_retries(
            lambda: self._attempt(body, output_tool, request),
            lambda exc: self._classify(exc, request),
            max_retries=self.max_retries, backoff=self.backoff, model=self.name)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``, streamed: text and tool-input JSON told to ``sink`` as they arrive
        (the answer through the output tool as text, since that is what it becomes).
        The reply is the SDK's final message, read as ``request`` reads it."""
        check_allowed(self.name)
        body, output_tool = self._body(request)
        tries = [0]

        async def attempt() -> ModelResponse:
            if tries[0]:
                sink.retry()
            tries[0] += 1
            return await self._streamed(body, output_tool, request, sink)

        return await call_with_retries(
            attempt, lambda exc: self._classify(exc, request),
            max_retries=self.max_retries, backoff=self.backoff, model=self.name)

    async def aclose(self) -> None:
        """Close the HTTP connections (the model stays usable; a new client is made)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _body(self, request: ModelRequest) -> tuple[dict[str, Any], str | None]:
        system, turns = to_anthropic_messages(request.messages)
        settings = request.settings
        body: dict[str, Any] = {"model": self.model, "messages": turns,
                                "max_tokens": settings.max_tokens or self.max_tokens}
        if system:
            body["system"] = system
        if settings.stop:
            body["stop_sequences"] = list(settings.stop)
        tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                 for t in request.tools]
        output_tool = None
        if request.output is not None:
            taken = {t.name for t in request.tools}
            output_tool = schema_name(request.output.name)
            while output_tool in taken:
                output_tool += "_result"
            tools.append({
                "name": output_tool,
                "description": request.output.description
                or "Give your final answer by calling this tool with it.",
                "input_schema": request.output.json_schema,
            })
            body["tool_choice"] = ({"type": "tool", "name": output_tool} if not request.tools
                                   else {"type": "any"})
        if tools:
            body["tools"] = tools
        return body, output_tool

    async def _sdk_client(self) -> anthropic_sdk.AsyncAnthropic:
        # An httpx pool is bound to the loop that opened it; a new loop gets a new client.
        # It is built in a thread: loading the TLS certificates reads files.
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        client: anthropic_sdk.AsyncAnthropic = await asyncio.to_thread(functools.partial(
            self._sdk.AsyncAnthropic, api_key=self.__api_key, base_url=self.base_url,
            max_retries=0, timeout=self.timeout))
        self._client, self._client_loop = client, loop
        return client

    async def _attempt(self, body: dict[str, Any], output_tool: str | None,
                       request: ModelRequest) -> ModelResponse:
        client = await self._sdk_client()
        reply = await client.messages.create(**body, timeout=self._timeout(request))
        data = reply.model_dump() if hasattr(reply, "model_dump") else reply
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise self._endpoint.bad_shape("the body has no 'content' list")
        return self._response(data, output_tool)

    async def _streamed(self, body: dict[str, Any], output_tool: str | None,
                        request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        client = await self._sdk_client()
        tools: dict[int, tuple[int, str]] = {}  # content block -> (tool call, its name)
        try:
            async with client.messages.stream(**body, timeout=self._timeout(request)) as stream:
                async for event in stream:
                    _report(event, sink, tools, output_tool)
                reply = await stream.get_final_message()
        except Exception as exc:  # the SDK maps errors of the send, not of the body
            names = {k.__name__ for k in type(exc).__mro__}
            if "TimeoutException" in names:
                raise self._endpoint.timed_out(self._timeout(request)).error from None
            if "TransportError" in names:  # the server closed mid-answer
                raise self._endpoint.malformed(exc).error from None
            raise
        data = reply.model_dump() if hasattr(reply, "model_dump") else reply
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise self._endpoint.bad_shape("the body has no 'content' list")
        return self._response(data, output_tool)

    def _response(self, data: Mapping[str, Any], output_tool: str | None) -> ModelResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        answer: str | None = None
        for block in data["content"]:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                arguments = json.dumps(block.get("input") or {})
                if block.get("name") == output_tool:
                    answer = arguments
                else:
                    calls.append(ToolCall(id=str(block.get("id") or f"call_{len(calls)}"),
                                          name=str(block.get("name") or ""),
                                          arguments=arguments))
        finish = _FINISH.get(str(data.get("stop_reason")), "stop")
        # Real tool calls win over a simultaneous final answer: the model answers again
        # after seeing their results.
        if answer is not None and not calls:
            text = answer
            finish = "length" if finish == "length" else "stop"
        else:
            text = "".join(texts)
        return ModelResponse(text=text, tool_calls=tuple(calls),
                             usage=usage_from_anthropic(data.get("usage")),
                             finish_reason=finish, model=str(data.get("model") or self.model))

    def _timeout(self, request: ModelRequest) -> float:
        return request.settings.timeout or self.timeout

    def _classify(self, exc: Exception, request: ModelRequest) -> Failure | None:
        if isinstance(exc, ModelAPIError):  # already worded (a stream cut off mid-answer)
            return Failure(exc)
        return classify_sdk_error(self._sdk, self._endpoint, exc, self._timeout(request))


def _report(event: Any, sink: DeltaSink, tools: dict[int, tuple[int, str]],
            output_tool: str | None) -> None:
    """Tell ``sink`` what one raw stream event adds: a text delta, or a piece of a tool's
    input JSON (of the output tool: answer text)."""
    kind = getattr(event, "type", None)
    if kind == "content_block_start":
        block = event.content_block
        if getattr(block, "type", None) == "tool_use":
            tools[event.index] = (len(tools), str(block.name))
    elif kind == "content_block_delta":
        delta = event.delta
        if delta.type == "text_delta" and delta.text:
            sink.text(delta.text)
        elif delta.type == "input_json_delta" and delta.partial_json:
            call, name = tools.get(event.index, (0, ""))
            if name == output_tool:
                sink.text(delta.partial_json)
            else:
                sink.arguments(call, name, delta.partial_json)
