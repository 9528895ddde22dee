"""Streamed chat completions: chunks fold into one response, the timeout is a limit on
silence (not on length), and a timed-out call is never resent unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from model_wire import SECRET, Reply, WireServer

from orchestra._errors import ModelAPIError
from orchestra._types import Message
from orchestra.models._chat_format import chat_response
from orchestra.models._http import Backoff
from orchestra.models._stream import LoopGuard, fold_chunks
from orchestra.models.base import ModelRequest, ModelSettings
from orchestra.models.openai import OpenAIModel


def chunk(content: str | None = None, *, finish: str | None = None, **extra: Any
          ) -> dict[str, Any]:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    return {"id": "c1", "model": "served-m", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def ask(max_tokens: int | None = None) -> ModelRequest:
    return ModelRequest((Message("system", "be brief"), Message("user", "hi")),
                        settings=ModelSettings(max_tokens=max_tokens))


def local(wire: WireServer, backoff: Backoff, **kw: Any) -> OpenAIModel:
    return OpenAIModel("m1", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=backoff, **kw)


async def test_a_streamed_answer_is_folded_with_usage_and_timings(
        wire: WireServer, backoff: Backoff) -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}
    wire.add(Reply(events=[(0, chunk("Hel")), (0, chunk("lo")), (0, chunk(finish="stop")),
                           (0, {"id": "c1", "choices": [], "usage": usage,
                                "timings": {"prompt_n": 4, "cache_n": 26}})]))
    response = await local(wire, backoff).request(ask(100))
    assert (response.text, response.finish_reason) == ("Hello", "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 3)
    sent = wire.last
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_tool_call_deltas_fold_into_whole_calls() -> None:
    parts = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "function": {"name": "write_file", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"path": '}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '"a.py"}'}}]}, "finish_reason": "tool_calls"}]},
    ]
    response = chat_response(fold_chunks(parts), model="m")
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "write_file", '{"path": "a.py"}')]
    assert response.finish_reason == "tool_calls"


async def test_a_slow_but_steady_stream_outlives_the_timeout(
        wire: WireServer, backoff: Backoff) -> None:
    # 8 chunks 0.1 s apart: 0.8 s in all, never 0.5 s of silence
    wire.add(Reply(events=[(0.1, chunk("x")) for _ in range(8)]
                   + [(0.1, chunk(finish="stop"))]))
    response = await local(wire, backoff, timeout=0.5, max_retries=0).request(ask())
    assert response.text == "x" * 8


async def test_silence_times_out_and_the_retry_asks_for_less(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(events=[(0, chunk("a")), (1.0, chunk("b"))]),
             Reply(events=[(0, chunk("short")), (0, chunk(finish="stop"))]))
    response = await local(wire, backoff, timeout=0.3, max_retries=1).request(ask(2000))
    assert response.text == "short"
    assert [r.body["max_tokens"] for r in wire.received] == [2000, 1000]


async def test_silence_past_the_retries_names_the_timeout(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(events=[(1.0, chunk("late"))]))
    with pytest.raises(ModelAPIError, match=r"no answer within 0.3 s") as info:
        await local(wire, backoff, timeout=0.3, max_retries=0).request(ask(800))
    assert info.value.retryable


async def test_an_error_event_mid_stream_is_a_model_error(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(events=[(0, chunk("a")), (0, {"error": {"message": "slot died"}})]))
    with pytest.raises(ModelAPIError, match="slot died"):
        await local(wire, backoff, max_retries=0).request(ask())


async def test_official_openai_is_not_streamed_by_default() -> None:
    assert OpenAIModel("gpt-4.1-mini", api_key=SECRET).stream is False
    assert OpenAIModel("m", base_url="http://127.0.0.1:1/v1").stream is True


async def test_a_local_server_gets_one_request_at_a_time(
        wire: WireServer, backoff: Backoff) -> None:
    """A one-slot server queues a second request in silence: it waits here instead, so
    its silence timeout starts when the server begins on it."""
    import asyncio

    slow = [(0.15, chunk("x")) for _ in range(4)] + [(0, chunk(finish="stop"))]
    wire.add(Reply(events=slow), Reply(events=slow))
    model = local(wire, backoff, timeout=0.4, max_retries=0)
    assert model.concurrency == 1
    a, b = await asyncio.gather(model.request(ask()), model.request(ask()))
    assert a.text == b.text == "xxxx"  # each streamed 0.6 s; neither waited in silence
    assert wire.max_in_flight == 1
    assert OpenAIModel("m", base_url="http://127.0.0.1:1/v1", concurrency=4).concurrency == 4
    assert OpenAIModel("gpt-4.1-mini", api_key=SECRET).concurrency is None


def test_concurrency_is_a_spec_option() -> None:
    from orchestra.errors import UserError
    from orchestra.models.spec import load_model

    model = load_model("openai-compatible:http://127.0.0.1:1/v1#m?concurrency=3&tools=native")
    assert isinstance(model, OpenAIModel) and model.concurrency == 3
    with pytest.raises(UserError, match="concurrency"):
        load_model("openai-compatible:http://127.0.0.1:1/v1#m?concurrency=0")


async def test_a_looping_reply_is_cut_off_where_it_loops(
        wire: WireServer, backoff: Backoff) -> None:
    """A reply whose end repeats itself (a small model writing asserts until its cap)
    ends the stream: it reads as cut off at its cap, the code before the loop kept, and
    the rest of the stream is not read."""
    code = "def f(x):\n    return x\n\n\ndef test_f():\n"
    loop = [chunk(f"    assert not f([1.0, 2.0, 3.0], 0.{'0' * i}1)\n") for i in range(1, 200)]
    wire.add(Reply(events=[(0, chunk("```python\n")), (0, chunk(code))]
                   + [(0, c) for c in loop] + [(0, chunk(finish="stop"))]))
    response = await local(wire, backoff).request_stream(ask(2000), _Quiet())
    assert response.finish_reason == "length"
    assert response.text.startswith("```python\n" + code)
    assert 20 < response.text.count("assert not f(") < 100
    streamed = 2 + response.text.count("assert not f(")  # one token a chunk, as sent
    assert response.usage.output_tokens == streamed  # the stream's usage chunk never came
    assert response.usage.input_tokens > 0


@pytest.mark.parametrize("source", ["agents/coder.py", "tests/agents/test_floor.py",
                                    "orchestra/models/openai.py"])
async def test_code_and_tests_are_never_cut(wire: WireServer, backoff: Backoff,
                                            source: str) -> None:
    text = (Path(__file__).parents[2] / source).read_text()
    lines = text.splitlines(keepends=True)
    wire.add(Reply(events=[(0, chunk(line)) for line in lines] + [(0, chunk(finish="stop"))]))
    response = await local(wire, backoff).request_stream(ask(8000), _Quiet())
    assert response.finish_reason == "stop" and response.text == text


async def test_a_loop_inside_one_line_is_cut_too(wire: WireServer, backoff: Backoff) -> None:
    """A 0.5B architect said one sentence 40 times in one line until its cap (1,500
    tokens): with no line end to check at, the guard still ends the stream."""
    said = ("We also need to ensure that the `lexer.py` module does not contain any "
            "`if` or `else` statements that are not defined. ")
    words = [f"{w} " for w in said.split()] * 40
    wire.add(Reply(events=[(0, chunk('{"modules": [], "decisions": "'))]
                   + [(0, chunk(w)) for w in words] + [(0, chunk(finish="stop"))]))
    response = await local(wire, backoff).request_stream(ask(4000), _Quiet())
    assert response.finish_reason == "length" and "\n" not in response.text
    assert len(response.text) < len(said) * 40 / 2


def test_a_loop_of_digits_in_one_line_is_a_loop() -> None:
    guard = LoopGuard()
    assert any(guard.looping(chunk("1234567890.")) for _ in range(400))


def test_one_long_line_of_prose_is_not() -> None:
    """The check every 200 characters does not fire on text merely without line ends."""
    guard = LoopGuard()
    text = (Path(__file__).parents[2] / "README.md").read_text().replace("\n", " ")
    assert not any(guard.looping(chunk(text[i:i + 7])) for i in range(0, len(text), 7))


def test_a_growing_list_is_a_loop_too() -> None:
    guard = LoopGuard()
    lines = [f"    assert g({list(range(n))}) == {list(range(n))}\n" for n in range(3, 40)]
    assert any(guard.looping(chunk(line)) for line in lines)


class _Quiet:
    def text(self, piece: str) -> None:
        pass

    def arguments(self, index: int, name: str, piece: str) -> None:
        pass

    def retry(self) -> None:
        pass
