"""The model interface: one async method, requests and responses as frozen data.

Adapters (OpenAI-compatible, Anthropic, GGUF) and the test doubles implement
:class:`Model`. The runtime never sees a provider SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeGuard, runtime_checkable

from orchestra._errors import UserError
from orchestra._types import Message, ToolCallRecord

ToolCall = ToolCallRecord
"""A tool call as the model wrote it: id, name and the raw JSON argument text."""


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as offered to the model: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The structured final answer the role expects (a JSON schema of its pydantic model)."""

    name: str
    json_schema: dict[str, Any]
    description: str = ""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Per-call settings; ``None`` means the provider's default."""

    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    """Seconds before one HTTP request is abandoned (adapters retry it when it helps)."""
    seed: int | None = None
    prompt_cache: bool | None = None
    """False: the server computes the whole prompt afresh (llama.cpp's ``cache_prompt``),
    so a greedy reply is the one this prompt gives on a cold server. A reused prompt cache
    changes llama.cpp's logits and with them a greedy answer (seen: one 434-token prompt
    at temperature 0 gave a module passing 12 of 13 hidden tests cold, and one passing 3
    after other requests). Sent to OpenAI-compatible servers other than OpenAI's
    and to the in-process GGUF model (the same llama.cpp server code)."""
    stop: tuple[str, ...] = ()
    """Up to four strings at whose first appearance the reply ends (the string left out;
    ``finish_reason`` "stop"): the server stops writing there, so what would follow is
    neither waited for nor paid for. Every adapter and test double honours it."""

    def __post_init__(self) -> None:
        if isinstance(self.stop, str) or len(self.stop) > 4 or not all(
                isinstance(s, str) and s for s in self.stop):
            raise UserError(f"ModelSettings(stop={self.stop!r}): give a tuple of at most "
                            "four non-empty strings (the limit OpenAI's API sets)")


@dataclass(frozen=True, slots=True)
class Usage:
    """What one call was billed for: tokens by kind, and its cost in USD.

    ``input_tokens`` is the whole prompt, cached parts included (OpenAI's
    ``prompt_tokens``; for Anthropic the sum of its three input counts), so the
    uncached part is ``input_tokens - cached_input_tokens - cache_write_tokens``.
    ``reasoning_tokens`` are part of ``output_tokens`` (they are billed as output).
    ``cost`` is filled by the runtime from a price table at the time of the call.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cached_input_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache (billed at the cached price)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the cache (Anthropic bills them above the input price)."""
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens, self.cost + other.cost,
                     self.cached_input_tokens + other.cached_input_tokens,
                     self.cache_write_tokens + other.cache_write_tokens,
                     self.reasoning_tokens + other.reasoning_tokens)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a model needs for one call.

    ``messages`` starts with the system prompt. ``output`` is set when the role
    wants a structured answer: the model should reply with JSON text matching it
    (adapters may use the provider's native JSON-schema mode) or call a tool.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    output: OutputSchema | None = None
    settings: ModelSettings = ModelSettings()  # immutable: one shared default


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model answered: text and/or tool calls, with token usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()  # immutable: one shared default
    finish_reason: FinishReason = "stop"
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """One async method. ``name`` identifies the model in logs and errors.

    A model may also say ``local = True``: it runs on this machine or is a test double
    (see :func:`runs_locally`), so its calls cost nothing to count; and how large its
    context window is, as ``context_tokens`` or, when it learns it from its server, an
    async ``context_window()`` (see :func:`context_window_of`)."""

    name: str

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the reply; raise ``ModelAPIError`` on failure."""
        ...


class DeltaSink(Protocol):
    """Where a streaming model reports its answer while it is written.

    Called on the event loop's thread (an adapter that reads in a worker thread hops
    back first) and never blocks: the sink only buffers. What it is told is for
    people watching; the response the call returns is still the whole answer, the
    same bytes as without streaming, and only that is journaled.
    """

    def text(self, delta: str) -> None:
        """More of the answer's text."""
        ...

    def arguments(self, index: int, name: str, delta: str) -> None:
        """More of tool call ``index``'s argument text (``name``: the tool, once known)."""
        ...

    def retry(self) -> None:
        """The answer so far is abandoned (the adapter tries the call again)."""
        ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also report its answer as it is written (see :class:`DeltaSink`).

    ``request_stream`` returns what ``request`` would: streaming changes who sees the
    answer early, never the answer."""

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """Like ``request``, telling ``sink`` each piece of the answer as it arrives."""
        ...


def runs_locally(model: object) -> bool:
    """Whether ``model`` runs on this machine or is scripted (weights here, a server on
    this host, a test double, a replay): a call bills nothing, so no price is missing.
    Its ``local`` attribute says; a wrapper without one (``inner``) answers for the
    model it wraps."""
    local = getattr(model, "local", None)
    if local is None:
        inner = getattr(model, "inner", None)
        return inner is not None and runs_locally(inner)
    return local is True


def streams(model: object) -> TypeGuard[StreamingModel]:
    """Whether ``model`` has ``request_stream`` (what ``isinstance(model, StreamingModel)``
    tells, in a tenth of a microsecond instead of twenty: it is asked per task)."""
    return callable(getattr(model, "request_stream", None))


async def context_window_of(model: object) -> int | None:
    """How many tokens ``model``'s context holds, None when unknown: its async
    ``context_window()`` (which may ask its server, once), else its ``context_tokens``;
    a wrapper without either (``inner``) answers for the model it wraps."""
    learn = getattr(model, "context_window", None)
    if callable(learn):
        window = await learn()
    else:
        window = getattr(model, "context_tokens", None)
        inner = getattr(model, "inner", None)
        if window is None and inner is not None:
            return await context_window_of(inner)
    return window if isinstance(window, int) and window > 0 else None
