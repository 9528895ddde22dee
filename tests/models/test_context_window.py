"""A served model's context window is learned when the spec names none: asked of the
server once (llama.cpp ``/props``, vLLM's and llama.cpp's ``/v1/models``, LM Studio's
``/api/v0/models``), or read from a refusal for size, after which the runtime refits the
request and sends it once more. Against the loopback wire server, never a real model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from model_wire import SECRET, Reply, WireServer
from pydantic import BaseModel
from structlog.testing import capture_logs

from orchestra import Coordinator, NewTask, Pipeline, Role, SQLiteBlackboard, ToolContext, tool
from orchestra._types import Message
from orchestra.errors import ContextOverflowError
from orchestra.models import _context
from orchestra.models._context import refusal_sizes
from orchestra.models.base import ModelRequest, ModelResponse, context_window_of
from orchestra.models.json_tools import JSONToolModel
from orchestra.models.openai import OpenAIModel
from orchestra.models.record import RecordingModel
from orchestra.models.spec import load_model
from orchestra.runtime.context_fit import ContextWindow, refit_window

PROPS = {"default_generation_settings": {"params": {"n_predict": -1}, "n_ctx": 2048},
         "total_slots": 1, "model_alias": "qwen.gguf"}


def overflow(n_ctx: int, prompt: int) -> Reply:
    """llama.cpp's refusal of a request longer than its context, as it sends it."""
    return Reply(400, {"error": {
        "code": 400, "type": "exceed_context_size_error", "n_ctx": n_ctx,
        "n_prompt_tokens": prompt, "message": f"request ({prompt} tokens) exceeds the "
        f"available context size ({n_ctx} tokens), try increasing it"}})


def chat(text: str | None, calls: list[dict[str, Any]] | None = None) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return Reply(body={"id": "c", "object": "chat.completion", "created": 1, "model": "local",
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": "tool_calls" if calls else "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5}})


def served(wire: WireServer, **kw: Any) -> OpenAIModel:
    return OpenAIModel("local", base_url=f"{wire.url}/v1", **kw)


async def test_llama_props_say_the_window_asked_once_by_concurrent_first_calls(
        wire: WireServer) -> None:
    wire.pages["/props"] = Reply(body=PROPS)
    model = served(wire)
    assert model.context_tokens is None  # nothing is asked before it is needed
    windows = await asyncio.gather(*(model.context_window() for _ in range(5)))
    assert windows == [2048] * 5 and model.context_tokens == 2048
    assert await model.context_window() == 2048
    assert [g.path for g in wire.fetched] == ["/props"]


@pytest.mark.parametrize(("path", "listing", "name"), [
    ("/v1/models", {"object": "list", "data": [  # vLLM: the entry named by the spec
        {"id": "other", "max_model_len": 32768},
        {"id": "Qwen/Qwen2.5-Coder-1.5B", "max_model_len": 4096}]}, "Qwen/Qwen2.5-Coder-1.5B"),
    ("/v1/models", {"object": "list", "data": [  # llama.cpp: its one model, any alias
        {"id": "/models/qwen.gguf", "meta": {"n_ctx": 4096, "n_ctx_train": 32768}}]}, "local"),
    ("/api/v0/models", {"object": "list", "data": [  # LM Studio: the loaded window
        {"id": "qwen2.5-coder", "max_context_length": 32768,
         "loaded_context_length": 4096}]}, "qwen2.5-coder"),
])
async def test_model_lists_say_the_window(wire: WireServer, path: str, listing: Any,
                                          name: str) -> None:
    wire.pages[path] = Reply(body=listing)
    model = OpenAIModel(name, base_url=f"{wire.url}/v1", api_key=SECRET)
    assert await model.context_window() == 4096
    assert wire.fetched[-1].path == path
    assert all(g.headers["authorization"] == f"Bearer {SECRET}" for g in wire.fetched)


@pytest.fixture
def plain_logs() -> Iterator[None]:
    """Info lines reach capture_logs: an in-process CLI test run before configures
    structlog to drop them (its level is warning), for the rest of the session."""
    saved = structlog.get_config()
    structlog.reset_defaults()
    yield
    structlog.configure(**saved)


@pytest.mark.usefixtures("plain_logs")
async def test_a_failed_probe_leaves_none_logged_once_without_the_key(
        wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    wire.pages["/props"] = Reply(body=b"<html>not json</html>")
    wire.pages["/v1/models"] = Reply(body={"object": "list", "data": [
        {"id": "a"}, {"id": "b"}]})  # no size, and not ours to pick
    model = served(wire, api_key=SECRET)
    with capture_logs() as logs:
        assert await model.context_window() is None
        assert await model.context_window() is None
    assert [g.path for g in wire.fetched] == ["/props", "/v1/models", "/api/v0/models"]
    unknown = [e for e in logs if e["event"] == "model.context_unknown"]
    assert len(unknown) == 1 and unknown[0]["model"] == model.name
    assert "/props: not JSON" in unknown[0]["asked"] and "HTTP 404" in unknown[0]["asked"]
    assert SECRET not in json.dumps(logs, default=str)

    monkeypatch.setattr(_context, "PROBE_TIMEOUT", 0.2)
    slow = WireServer()  # a server that does not answer in time is asked nothing more
    try:
        slow.pages["/props"] = Reply(body=PROPS, delay=1.0)
        assert await served(slow).context_window() is None
        assert [g.path for g in slow.fetched] == ["/props"]
    finally:
        slow.close()


@pytest.mark.usefixtures("plain_logs")
async def test_a_server_that_is_down_leaves_none(closed_port: int) -> None:
    model = OpenAIModel("local", base_url=f"http://127.0.0.1:{closed_port}/v1")
    with capture_logs() as logs:
        assert await model.context_window() is None
    assert "ConnectError" in logs[0]["asked"] and "/v1/models" not in logs[0]["asked"]


async def test_an_explicit_context_wins_and_wrappers_forward(wire: WireServer) -> None:
    wire.pages["/props"] = Reply(body=PROPS)
    given = load_model(f"openai-compatible:{wire.url}/v1#local?context=8192")
    assert isinstance(given, JSONToolModel)
    assert await context_window_of(given) == 8192 and wire.fetched == []
    learned = load_model(f"openai-compatible:{wire.url}/v1#local")  # JSON tools by default
    assert isinstance(learned, JSONToolModel) and learned.context_tokens is None
    assert await context_window_of(learned) == 2048 == learned.context_tokens
    recorded = RecordingModel(served(wire), "unused.jsonl")
    assert await context_window_of(recorded) == 2048


def test_refusals_for_size_are_read_from_every_server() -> None:
    assert refusal_sizes({"code": 400, "type": "exceed_context_size_error", "n_ctx": 8192,
                          "n_prompt_tokens": 8245, "message": "..."}, "") == (8192, 8245)
    vllm = ("This model's maximum context length is 2048 tokens. However, you requested "
            "2100 tokens (1076 in the messages, 1024 in the completion). Please reduce the "
            "length of the messages or completion.")
    assert refusal_sizes({"object": "error", "message": vllm, "type": "BadRequestError"},
                         vllm) == (2048, 2100)
    assert refusal_sizes({"type": "invalid_request_error", "message": "prompt is too long: "
                          "210000 tokens > 200000 maximum"}, "") == (200000, 210000)
    assert refusal_sizes({"message": "request (8245 tokens) exceeds the available context "
                          "size (8192 tokens), try increasing it"}, "") == (8192, 8245)
    assert refusal_sizes({"message": "response_format is not supported"}, "") is None


async def test_a_refusal_for_size_is_typed_and_narrows_the_model(wire: WireServer) -> None:
    wire.add(overflow(8192, 8245))
    model = served(wire)
    with pytest.raises(ContextOverflowError) as caught:
        await model.request(ModelRequest((Message("user", "hi"),)))
    assert (caught.value.context_tokens, caught.value.prompt_tokens) == (8192, 8245)
    assert "8245 tokens" in str(caught.value) and wire.count == 1  # not retried blindly
    assert model.context_tokens == 8192


async def test_a_request_refused_again_after_its_refit_fails_saying_so() -> None:
    sent: list[ModelRequest] = []

    async def send(model: Any, request: ModelRequest, n: int) -> ModelResponse:
        sent.append(request)
        raise ContextOverflowError("too long", context_tokens=1000, prompt_tokens=1400)

    window = ContextWindow(object())
    with pytest.raises(ContextOverflowError, match="refitted once, to a 1000-token window"):
        await window.ask(send, ModelRequest((Message("user", "x"),)), 1)
    assert len(sent) == 2
    fitted = ContextOverflowError("", context_tokens=1000, prompt_tokens=1250)
    assert refit_window(fitted, None) == 1000 == refit_window(fitted, 8192)
    assert refit_window(fitted, 1000) == 800  # fitted to it already: the count fell short
    assert refit_window(ContextOverflowError(""), None) is None


class Draft(BaseModel):
    text: str


class Reader(Role[Draft, Draft]):
    """You read the parts of a document with the tool, then answer."""

    @tool
    async def read(self, ctx: ToolContext, part: int) -> str:
        """One part of the document."""
        return f"part {part}: " + "a line of the document to read\n" * 100


def call(part: int) -> dict[str, Any]:
    return {"id": f"call_{part}", "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"part": part})}}


async def run_reader(model: Any, path: Path) -> tuple[Any, list[Any]]:
    pipeline = Pipeline("reading", roles=[Reader()],
                        start=lambda spec: [NewTask("reader", spec)])
    store = await SQLiteBlackboard.open(path)
    try:
        run = await Coordinator(store, pipeline, models={"reader": model}).run({"text": "doc"})
        steps = [s for t in await store.list_tasks(run.id)
                 for s in await store.get_steps(t.id, 0)]
    finally:
        await store.close()
    return run, steps


async def test_a_refused_request_is_refitted_and_sent_once_more_in_the_same_step(
        wire: WireServer, tmp_path: Path) -> None:
    wire.add(chat(None, [call(1)]), chat(None, [call(2)]), overflow(1500, 2600),
             chat('{"text": "done"}'))
    model = served(wire)  # the server says no size: requests go whole, until refused
    run, steps = await run_reader(model, tmp_path / "refit.db")
    assert run.status == "completed", run.error
    third, fourth = wire.received[2].body["messages"], wire.received[3].body["messages"]
    assert len(fourth) < len(third)  # the oldest exchange left the view
    assert fourth[0]["role"] == "system" and fourth[1]["content"] == third[1]["content"]
    assert fourth[-1] == third[-1] and "part 1:" not in json.dumps(fourth)
    assert model.context_tokens == 1500
    # one journaled model step per answer: the refused send is not a step of its own
    assert [(s.kind, s.status) for s in steps if s.kind == "model"] == [
        ("model", "completed")] * 3
    assert all(s.status == "completed" for s in steps)


async def test_a_history_past_the_servers_2k_context_completes_compacted(
        wire: WireServer, tmp_path: Path) -> None:
    """Default settings, no ``?context=``: the window is asked of the server, and every
    request fits it, though the task's exchange grows to twice that."""
    wire.pages["/props"] = Reply(body=PROPS)
    refused: list[int] = []

    def judge(body: Any) -> Reply | None:  # a server counting a token per 4 characters
        tokens = sum(len(str(m.get("content") or "")) // 4 + 8 for m in body["messages"])
        if tokens > 2048:
            refused.append(tokens)
            return overflow(2048, tokens)
        return None

    wire.judge = judge
    steps = [json.dumps({"name": "read", "arguments": {"part": n}}) for n in range(1, 6)]
    wire.add(*(chat(text) for text in steps),
             chat(json.dumps({"name": "final_answer", "arguments": {"text": "read all"}})))
    run, _ = await run_reader(load_model(f"openai-compatible:{wire.url}/v1#local"),
                              tmp_path / "e2e.db")
    assert run.status == "completed", run.error
    assert refused == [] and wire.count == 6
    results = sum("Result of read" in str(m["content"]) for m in wire.last["messages"])
    assert 1 <= results < 5  # five results were read; the last request shows fewer
