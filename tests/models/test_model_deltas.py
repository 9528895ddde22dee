"""Every adapter streams its answer to a sink while it returns the very reply it would
return unstreamed: the pieces, concatenated, are the recorded answer. The provider
streams are built here in each provider's own wire shape (OpenAI chat-completion
chunks, Anthropic's named Messages events, llama.cpp's in-process chunk callback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from model_wire import SECRET, Reply, WireServer

from orchestra._types import Message
from orchestra.models._http import Backoff
from orchestra.models._stream import fold_chunks
from orchestra.models.anthropic import AnthropicModel
from orchestra.models.base import ModelRequest, ModelResponse, OutputSchema, ToolSchema
from orchestra.models.gguf import GGUFModel
from orchestra.models.json_tools import JSONToolModel
from orchestra.models.openai import OpenAIModel
from orchestra.models.record import RecordingModel, ReplayModel
from orchestra.models.testing import Chunks, ScriptedModel, reply, tool_call

WEATHER = ToolSchema("get_weather", "Weather for a city",
                     {"type": "object", "properties": {"city": {"type": "string"}}})
ANSWER = "Hello there, here is a longer answer: with several pieces."


class Sink:
    """Records what a model streams."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.calls: dict[int, list[str]] = {}
        self.names: dict[int, str] = {}
        self.retries = 0

    def text(self, delta: str) -> None:
        self.pieces.append(delta)

    def arguments(self, index: int, name: str, delta: str) -> None:
        if name:
            self.names[index] = name
        self.calls.setdefault(index, []).append(delta)

    def retry(self) -> None:
        self.retries += 1
        self.pieces.clear()
        self.calls.clear()

    def arguments_of(self, index: int) -> str:
        return "".join(self.calls.get(index, []))


def ask(**kw: Any) -> ModelRequest:
    return ModelRequest((Message("system", "s"), Message("user", "hi")), **kw)


# -- OpenAI and OpenAI-compatible ------------------------------------------------
def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "model": "served-m", "object": "chat.completion.chunk",
            "created": 1, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def openai_stream(text: str, arguments: str) -> list[tuple[float, Any]]:
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    events.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                         "function": {"name": "get_weather",
                                                      "arguments": ""}}]}))
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[i:i + 5]}}]})
               for i in range(0, len(arguments), 5)]
    events.append(chunk({}, finish="tool_calls"))
    events.append({"id": "c1", "model": "served-m", "object": "chat.completion.chunk",
                   "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 20,
                                            "total_tokens": 32}})
    return [(0.0, e) for e in events]


@pytest.mark.parametrize("official", [False, True])
async def test_openai_pieces_add_up_to_the_answer(wire: WireServer, backoff: Backoff,
                                                  official: bool) -> None:
    arguments = json.dumps({"city": "Oslo, the capital of Norway"})
    events = openai_stream(ANSWER, arguments)
    # OpenAI's own API is not streamed by request() (a plain JSON body); request_stream is
    wire.add(Reply(events=events), Reply(body=fold_chunks([e for _, e in events]))
             if official else Reply(events=events))
    model = OpenAIModel("m1", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=backoff)
    model.stream = not official
    sink = Sink()
    streamed = await model.request_stream(ask(tools=(WEATHER,)), sink)
    plain = await model.request(ask(tools=(WEATHER,)))
    assert streamed == plain  # the same reply, byte for byte
    assert "".join(sink.pieces) == streamed.text == ANSWER
    assert sink.arguments_of(0) == streamed.tool_calls[0].arguments == arguments
    assert sink.names == {0: "get_weather"}
    assert len(sink.pieces) > 3  # in pieces, as they came
    assert all(r.body["stream"] is True for r in wire.received[:1])


async def test_an_openai_retry_tells_the_sink(wire: WireServer, backoff: Backoff) -> None:
    cut = openai_stream(ANSWER, "{}")[:4]  # then a 500 on the retry path below
    wire.add(Reply(events=[*cut, (0.0, {"error": {"message": "slot crashed"}})]),
             Reply(events=openai_stream(ANSWER, "{}")))
    model = OpenAIModel("m1", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=backoff)
    sink = Sink()
    response = await model.request_stream(ask(tools=(WEATHER,)), sink)
    assert sink.retries == 1
    assert "".join(sink.pieces) == response.text == ANSWER


# -- Anthropic ---------------------------------------------------------------------
def anthropic_stream(text: str, tool_input: dict[str, Any], *, tool: str = "get_weather"
                     ) -> list[tuple[float, Any]]:
    raw = json.dumps(tool_input)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                      "text": ""}},
        {"type": "ping"},
    ]
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text[i:i + 6]}}
               for i in range(0, len(text), 6)]
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "content_block_start", "index": 1, "content_block": {
                   "type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}}]
    events += [{"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": raw[i:i + 4]}}
               for i in range(0, len(raw), 4)]
    events += [{"type": "content_block_stop", "index": 1},
               {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                   "stop_sequence": None},
                "usage": {"output_tokens": 30}},
               {"type": "message_stop"}]
    return [(0.0, e) for e in events]


def anthropic_body(text: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": text},
                        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                         "input": tool_input}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 30}}


async def test_anthropic_pieces_add_up_to_the_answer(wire: WireServer, backoff: Backoff
                                                     ) -> None:
    tool_input = {"city": "Oslo, the capital of Norway"}
    wire.add(Reply(events=anthropic_stream(ANSWER, tool_input), named=True),
             Reply(body=anthropic_body(ANSWER, tool_input)))
    model = AnthropicModel("claude-x", api_key=SECRET, base_url=wire.url, backoff=backoff)
    sink = Sink()
    streamed = await model.request_stream(ask(tools=(WEATHER,)), sink)
    plain = await model.request(ask(tools=(WEATHER,)))
    assert streamed == plain
    assert wire.received[0].body["stream"] is True
    assert "".join(sink.pieces) == streamed.text == ANSWER
    assert sink.arguments_of(0) == streamed.tool_calls[0].arguments == json.dumps(tool_input)
    assert sink.names == {0: "get_weather"} and len(sink.pieces) > 3


async def test_anthropic_output_tool_streams_as_answer_text(wire: WireServer,
                                                             backoff: Backoff) -> None:
    person = OutputSchema("Person", {"type": "object",
                                     "properties": {"name": {"type": "string"}}})
    wire.add(Reply(events=anthropic_stream("", {"name": "Ann"}, tool="Person"), named=True))
    model = AnthropicModel("claude-x", api_key=SECRET, base_url=wire.url, backoff=backoff)
    sink = Sink()
    response = await model.request_stream(ask(output=person), sink)
    assert json.loads(response.text) == {"name": "Ann"}
    assert "".join(sink.pieces) == response.text and not sink.calls


# -- in-process llama.cpp (GGUF) ------------------------------------------------------
class StreamingServer:
    """Answers like ``xllamacpp.Server.handle_chat_completions(body, callback)`` with
    ``stream: true``: each chunk (a dict) handed to the callback in the calling thread."""

    def __init__(self, chunks: list[dict[str, Any]]) -> None:
        self.chunks = chunks
        self.bodies: list[dict[str, Any]] = []

    def handle_chat_completions(self, body: dict[str, Any], callback: Any = None) -> Any:
        self.bodies.append(body)
        if not body.get("stream"):
            return fold_chunks(self.chunks)
        for c in self.chunks:
            if callback(c):
                break
        return None


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


async def test_gguf_pieces_add_up_to_the_answer(gguf_file: Path) -> None:
    arguments = json.dumps({"city": "Oslo"})
    chunks = [e for _, e in openai_stream(ANSWER, arguments)]
    server = StreamingServer(chunks)
    model = GGUFModel(gguf_file, server_factory=lambda: server)
    sink = Sink()
    streamed = await model.request_stream(ask(tools=(WEATHER,)), sink)
    plain = await model.request(ask(tools=(WEATHER,)))
    assert streamed == plain
    assert server.bodies[0]["stream"] is True and "stream" not in server.bodies[1]
    assert "".join(sink.pieces) == ANSWER == streamed.text
    assert sink.arguments_of(0) == arguments


# -- test doubles and wrappers ----------------------------------------------------------
async def test_a_scripted_model_streams_only_when_asked() -> None:
    answer = reply(ANSWER, tool_call("get_weather", {"city": "Oslo"}))
    streaming = ScriptedModel([answer], stream=Chunks(size=5))
    sink = Sink()
    response = await streaming.request_stream(ask(), sink)
    assert "".join(sink.pieces) == response.text == ANSWER
    assert sink.arguments_of(0) == response.tool_calls[0].arguments
    quiet, silent = ScriptedModel([answer]), Sink()
    assert (await quiet.request_stream(ask(), silent)) == response
    assert silent.pieces == [] and silent.calls == {}


async def test_wrappers_pass_the_stream_on_and_record_the_same_reply(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    inner = ScriptedModel([ANSWER, ANSWER], stream=Chunks(size=9))
    recorder = RecordingModel(JSONToolModel(inner), path)
    sink = Sink()
    streamed = await recorder.request_stream(ask(), sink)
    plain = await recorder.request(ask())
    assert "".join(sink.pieces) == streamed.text == ANSWER and streamed == plain
    replay, replayed = ReplayModel(path), Sink()
    assert isinstance(await replay.request(ask()), ModelResponse)  # a replay has no stream
    assert replayed.pieces == []


async def test_a_replay_streams_its_recorded_answer_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recorder = RecordingModel(ScriptedModel([ANSWER]), path)
    await recorder.request(ask())
    sink = Sink()
    streamed = await ReplayModel(path, stream=Chunks(size=7)).request_stream(ask(), sink)
    assert "".join(sink.pieces) == streamed.text == ANSWER and len(sink.pieces) > 1
    silent = Sink()
    assert await ReplayModel(path).request_stream(ask(), silent) == streamed
    assert silent.pieces == []
