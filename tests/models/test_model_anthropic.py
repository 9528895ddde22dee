"""AnthropicModel against a scripted Messages API server on loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from model_wire import SECRET, Reply, SleepRecorder, WireServer

from orchestra._errors import ModelAPIError, UserError
from orchestra._types import Message, ToolCallRecord
from orchestra.models._http import Backoff
from orchestra.models.anthropic import AnthropicModel, to_anthropic_messages
from orchestra.models.base import ModelRequest, ModelSettings, OutputSchema, ToolSchema

WEATHER = ToolSchema("get_weather", "Weather for a city",
                     {"type": "object", "properties": {"city": {"type": "string"}}})
PERSON = OutputSchema("Person", {"type": "object", "properties": {"name": {"type": "string"}}},
                      "The person found")


def message(*blocks: dict[str, Any], stop: str = "end_turn",
            usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": list(blocks), "stop_reason": stop, "stop_sequence": None,
            "usage": usage or {"input_tokens": 20, "output_tokens": 4}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, args: dict[str, Any], id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": args}


def model(wire: WireServer, backoff: Backoff, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-x", api_key=SECRET, base_url=wire.url, backoff=backoff, **kw)


def ask(*extra: Message, **kw: Any) -> ModelRequest:
    return ModelRequest((Message("system", "be brief"), Message("user", "hi"), *extra), **kw)


async def test_plain_chat_separates_the_system_prompt(wire: WireServer, backoff: Backoff) -> None:
    usage = {"input_tokens": 20, "output_tokens": 4, "cache_read_input_tokens": 5,
             "cache_creation_input_tokens": 1}
    wire.add(Reply(body=message(text("hello "), text("there"), usage=usage)))
    response = await model(wire, backoff).request(
        ask(settings=ModelSettings(temperature=0.1, max_tokens=99)))
    assert response.text == "hello there" and response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (26, 4)
    sent = wire.received[0]
    assert sent.path == "/v1/messages"
    assert SECRET in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.body["system"] == "be brief"
    assert sent.body["messages"] == [{"role": "user", "content": [text("hi")]}]
    assert sent.body["max_tokens"] == 99 and "temperature" not in sent.body


def test_tool_results_are_merged_into_one_user_turn() -> None:
    calls = (ToolCallRecord("t1", "get_weather", '{"city": "Oslo"}'),
             ToolCallRecord("t2", "get_weather", "not json"))
    system, turns = to_anthropic_messages((
        Message("system", "s1"), Message("user", "weather?"),
        Message("assistant", "checking", tool_calls=calls),
        Message("tool", "cold", tool_call_id="t1"), Message("tool", "warm", tool_call_id="t2"),
        Message("user", "thanks"), Message("system", "s2"),
    ))
    assert system == "s1\n\ns2"
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        text("checking"),
        {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "t2", "name": "get_weather",
         "input": {"_raw_arguments": "not json"}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "cold"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "warm"},
        text("thanks"),
    ]


async def test_tool_calls(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=message(text("let me look"), tool_use("get_weather", {"city": "Oslo"}),
                                stop="tool_use")))
    response = await model(wire, backoff).request(ask(tools=(WEATHER,)))
    assert response.tool_calls == (ToolCallRecord("toolu_1", "get_weather", '{"city": "Oslo"}'),)
    assert response.finish_reason == "tool_calls"
    assert wire.last["tools"] == [{"name": "get_weather", "description": "Weather for a city",
                                   "input_schema": WEATHER.parameters}]
    assert "tool_choice" not in wire.last


async def test_structured_output_forces_the_output_tool(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=message(tool_use("Person", {"name": "Ann"}), stop="tool_use")))
    response = await model(wire, backoff).request(ask(output=PERSON))
    assert json.loads(response.text) == {"name": "Ann"}
    assert response.tool_calls == () and response.finish_reason == "stop"
    assert wire.last["tool_choice"] == {"type": "tool", "name": "Person"}
    assert wire.last["tools"] == [{"name": "Person", "description": "The person found",
                                   "input_schema": PERSON.json_schema}]


async def test_structured_output_with_tools_forces_a_call_or_the_answer(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=message(tool_use("get_weather", {"city": "Oslo"}), stop="tool_use")),
             Reply(body=message(text("done:"), tool_use("Person", {"name": "Bo"}, "toolu_2"),
                                stop="tool_use")))
    adapter = model(wire, backoff)
    first = await adapter.request(ask(tools=(WEATHER,), output=PERSON))
    assert first.tool_calls[0].name == "get_weather" and first.text == ""
    assert wire.last["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in wire.last["tools"]] == ["get_weather", "Person"]
    second = await adapter.request(ask(tools=(WEATHER,), output=PERSON))
    assert json.loads(second.text) == {"name": "Bo"} and second.tool_calls == ()


async def test_max_tokens_stop_is_length(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=message(text("cut"), stop="max_tokens")))
    assert (await model(wire, backoff).request(ask())).finish_reason == "length"


async def test_529_overloaded_is_retried(
        wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    wire.add(Reply(529, overloaded), Reply(429, overloaded, {"retry-after": "0.05"}),
             Reply(body=message(text("ok"))))
    assert (await model(wire, backoff).request(ask())).text == "ok"
    assert wire.count == 3 and len(sleeps.delays) == 2 and sleeps.delays[1] == 0.05


async def test_401_is_not_retried(wire: WireServer, backoff: Backoff,
                                  sleeps: SleepRecorder) -> None:
    wire.add(Reply(401, {"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {SECRET}"}}))
    with pytest.raises(ModelAPIError) as info:
        await model(wire, backoff).request(ask())
    text_ = str(info.value)
    assert "ANTHROPIC_API_KEY" in text_ and "'claude-x'" in text_ and wire.url in text_
    assert SECRET not in text_ and SECRET not in repr(model(wire, backoff))
    assert wire.count == 1 and sleeps.delays == [] and not info.value.retryable


async def test_malformed_body(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=b"<html>gateway</html>"))
    with pytest.raises(ModelAPIError, match="malformed JSON"):
        await model(wire, backoff, max_retries=0).request(ask())


async def test_connection_refused(closed_port: int, backoff: Backoff) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    adapter = AnthropicModel("claude-x", base_url=url, max_retries=0, backoff=backoff)
    with pytest.raises(ModelAPIError, match=f"nothing listens at {url}"):
        await adapter.request(ask())


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-x")
