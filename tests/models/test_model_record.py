"""Record real calls to JSON lines, replay them offline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from model_wire import SECRET, Reply, WireServer

from orchestra._errors import UserError
from orchestra._types import Message, ToolCallRecord
from orchestra.models._http import Backoff
from orchestra.models.base import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSchema,
    ToolSchema,
    Usage,
)
from orchestra.models.openai import OpenAIModel
from orchestra.models.record import (
    RecordingModel,
    ReplayMismatchError,
    ReplayModel,
    canonical_request,
    dump_response,
    load_response,
    read_recording,
    request_key,
    responses_from_file,
)

TOOL = ToolSchema("search", "Search notes", {"type": "object"})


class StubModel:
    """Answers with ``fn(request)`` and counts its calls."""

    def __init__(self, fn: Callable[[ModelRequest], ModelResponse]) -> None:
        self.name = "stub"
        self.fn = fn
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return self.fn(request)


def ask(text: str, **kw: object) -> ModelRequest:
    return ModelRequest((Message("system", "sys"), Message("user", text)), **kw)  # type: ignore[arg-type]


def echo(request: ModelRequest) -> ModelResponse:
    last = request.messages[-1].content
    return ModelResponse(text=f"echo {last}", usage=Usage(3, 2), model="stub-1")


async def test_record_then_replay_offline(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    stub = StubModel(echo)
    recorder = RecordingModel(stub, path)
    recorded = [await recorder.request(ask(t)) for t in ("a", "b", "a")]
    assert stub.calls == 3 and recorder.name == "stub"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2]
    assert lines[0]["key"] == lines[2]["key"] == request_key(ask("a"))
    assert lines[0]["request"] == canonical_request(ask("a"))
    assert lines[1]["response"] == dump_response(recorded[1])
    assert list(lines[0]) == ["key", "index", "request", "response"]

    replay = ReplayModel(path)
    # Keyed, so a different order still gets the right answers.
    assert (await replay.request(ask("b"))).text == "echo b"
    assert await replay.request(ask("a")) == recorded[0]
    assert await replay.request(ask("a")) == recorded[2]
    assert replay.remaining == 0 and stub.calls == 3


async def test_replay_of_http_calls_needs_no_network(tmp_path: Path, wire: WireServer) -> None:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "search", "arguments": '{"q": "x"}'}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "model": "served"}
    wire.add(Reply(body=body))
    path = tmp_path / "http.jsonl"
    live = OpenAIModel("m", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=Backoff())
    request = ask("find x", tools=(TOOL,))
    live_response = await RecordingModel(live, path).request(request)
    assert wire.count == 1 and SECRET not in path.read_text()
    replayed = await ReplayModel(path).request(request)
    assert replayed == live_response and wire.count == 1
    assert replayed.tool_calls == (ToolCallRecord("call_9", "search", '{"q": "x"}'),)


async def test_strict_mismatch_names_key_index_and_first_differing_field(
        tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    recorder = RecordingModel(StubModel(echo), path)
    await recorder.request(ask("hello"))
    await recorder.request(ask("plan the work", output=OutputSchema("Plan", {"type": "object"})))
    replay = ReplayModel(path)
    await replay.request(ask("hello"))
    changed = ask("plan the work!", output=OutputSchema("Plan", {"type": "object"}))
    with pytest.raises(ReplayMismatchError) as info:
        await replay.request(changed)
    error = info.value
    assert isinstance(error, UserError)
    assert (error.index, error.key, error.field) == (1, request_key(changed),
                                                     "messages[1].content")
    message = str(error)
    assert request_key(changed) in message and "call 1" in message
    assert 'messages[1].content: recorded "plan the work", now "plan the work!"' in message
    assert "strict=False" in message


async def test_task_keyed_mismatch_points_at_the_same_conversation_and_the_changed_stretch(
        tmp_path: Path) -> None:
    """A tool output that changed deep inside: the error shows that stretch, not its start."""
    path = tmp_path / "calls.jsonl"
    recorder = RecordingModel(StubModel(echo), path)
    output = "x" * 300 + " 2 failed " + "y" * 300

    def conversation(task: str, tool_output: str) -> ModelRequest:
        return ModelRequest((Message("system", "sys"), Message("user", task, name="task"),
                             Message("assistant", "running"), Message("user", tool_output)))

    await recorder.request(ask("other"))
    await recorder.request(conversation("module a", output))
    await recorder.request(conversation("module b", "short"))
    replay = ReplayModel(path, key="task")
    changed = conversation("module a", output.replace("2 failed", "3 failed"))
    with pytest.raises(ReplayMismatchError) as info:
        await replay.request(changed)
    message = str(info.value)
    assert info.value.field == "messages[3].content"
    assert "nearest recorded request (call 1," in message
    assert "(character 301)" in message
    assert "2 failed" in message and "3 failed" in message


async def test_a_fallback_model_answers_what_the_recording_lacks(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    await RecordingModel(StubModel(echo), path).request(ask("a"))
    live = StubModel(lambda r: ModelResponse(text="live", usage=Usage(1, 1), model="f"))
    replay = ReplayModel(path, fallback=live)
    assert (await replay.request(ask("a"))).text == "echo a"  # recorded: no fallback call
    assert (await replay.request(ask("b"))).text == "live"
    assert (await replay.request(ask("a"))).text == "live"  # recorded once, served once
    assert (replay.fallbacks, live.calls, replay.remaining) == (2, 2, 0)


async def test_strict_reports_a_request_repeated_more_often_than_recorded(
        tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    await RecordingModel(StubModel(echo), path).request(ask("a"))
    replay = ReplayModel(path)
    await replay.request(ask("a"))
    with pytest.raises(ReplayMismatchError, match=r"recorded 1 time\(s\)"):
        await replay.request(ask("a"))


async def test_non_strict_falls_back_to_file_order(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    recorder = RecordingModel(StubModel(echo), path)
    for text in ("one", "two", "three"):
        await recorder.request(ask(text))
    replay = ReplayModel(path, strict=False)
    assert (await replay.request(ask("two"))).text == "echo two"
    assert (await replay.request(ask("something new"))).text == "echo one"
    assert (await replay.request(ask("three"))).text == "echo three"
    with pytest.raises(UserError, match="all 3 recorded responses have been served"):
        await replay.request(ask("more"))


def test_canonical_request_ignores_bookkeeping_and_timeout() -> None:
    plain = ModelRequest((Message("user", "x"),), settings=ModelSettings(temperature=0))
    noisy = ModelRequest((Message("user", "x", agent_id="a1", seq=4, task_id="t"),),
                         settings=ModelSettings(temperature=0, timeout=3))
    assert request_key(plain) == request_key(noisy)
    assert request_key(plain) != request_key(ModelRequest((Message("user", "x"),)))
    described = ModelRequest((Message("user", "x"),), tools=(TOOL,))
    other_schema = ModelRequest((Message("user", "x"),),
                                tools=(ToolSchema("search", "Search notes", {"type": "array"}),))
    assert request_key(described) != request_key(other_schema)


def test_dump_and_load_response_round_trip() -> None:
    response = ModelResponse(text="t", tool_calls=(ToolCallRecord("i", "n", "{bad"),),
                             usage=Usage(1, 2, 0.5), finish_reason="length", model="m")
    assert load_response(json.loads(json.dumps(dump_response(response)))) == response
    assert load_response({}) == ModelResponse()
    bad_shapes = ([], {"finish_reason": "done"}, {"tool_calls": [1]},
                  {"usage": {"input_tokens": "1"}}, {"text": None})
    for bad in bad_shapes:
        with pytest.raises(ValueError):
            load_response(bad)


def test_bad_lines_are_reported_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    good = {"key": "k", "index": 0, "request": {}, "response": {"text": "ok"}}
    path.write_text(json.dumps(good) + "\n\n" + '{"key": "k"}\n')
    with pytest.raises(UserError, match="line 3"):
        read_recording(path)
    path.write_text(json.dumps(good) + "\n")
    assert [r.text for r in responses_from_file(path)] == ["ok"]
    with pytest.raises(UserError, match="does not exist"):
        ReplayModel(tmp_path / "nope.jsonl")


async def test_concurrent_recorders_share_a_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    a, b = RecordingModel(StubModel(echo), path), RecordingModel(StubModel(echo), path)
    await asyncio.gather(*(m.request(ask(str(i))) for i in range(10) for m in (a, b)))
    assert [c.index for c in read_recording(path)] == list(range(20))
