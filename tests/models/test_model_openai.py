"""OpenAIModel against a scripted chat-completions server on loopback."""

from __future__ import annotations

import asyncio
import errno
import json
from typing import Any

import pytest
from model_wire import SECRET, Reply, SleepRecorder, WireServer
from structlog.testing import capture_logs

from orchestra._errors import ModelAPIError, UserError
from orchestra._types import Message, ToolCallRecord
from orchestra.models import _guard
from orchestra.models._chat_format import chat_body
from orchestra.models._http import Backoff, parse_retry_after
from orchestra.models.base import ModelRequest, ModelSettings, OutputSchema, ToolSchema
from orchestra.models.openai import OpenAIModel

WEATHER = ToolSchema("get_weather", "Weather for a city",
                     {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]})
PERSON = OutputSchema("Person record", {"type": "object",
                                        "properties": {"name": {"type": "string"}}})


def completion(content: str | None = "hello", *, tool_calls: list[dict[str, Any]] | None = None,
               finish: str = "stop", usage: tuple[int, int] = (11, 7)) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "served-m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)}}


def call(name: str, arguments: str, id: str = "call_1") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def ask(text: str = "hi", **kw: Any) -> ModelRequest:
    return ModelRequest(messages=(Message("system", "be brief"), Message("user", text)), **kw)


def model(wire: WireServer, backoff: Backoff, **kw: Any) -> OpenAIModel:
    kw.setdefault("api_key", SECRET)
    return OpenAIModel("m1", base_url=f"{wire.url}/v1", backoff=backoff, **kw)


async def test_plain_chat(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion("hello there")))
    settings = ModelSettings(temperature=0.2, max_tokens=50, seed=7)
    response = await model(wire, backoff).request(ask(settings=settings))
    assert response.text == "hello there"
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.model == "served-m"
    sent = wire.received[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.body["model"] == "m1"
    assert sent.body["messages"] == [{"role": "system", "content": "be brief"},
                                     {"role": "user", "content": "hi"}]
    assert (sent.body["temperature"], sent.body["max_tokens"], sent.body["seed"]) == (0.2, 50, 7)
    assert "tools" not in sent.body and "response_format" not in sent.body


async def test_tool_calls_both_ways(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion(None, tool_calls=[call("get_weather", '{"city": "Oslo"}')],
                                   finish="tool_calls")))
    history = (
        Message("system", "s"), Message("user", "weather?"),
        Message("assistant", "",
                tool_calls=(ToolCallRecord("c0", "get_weather", '{"city":"Rome"}'),)),
        Message("tool", "sunny", tool_call_id="c0", name="get_weather"),
    )
    response = await model(wire, backoff).request(ModelRequest(history, tools=(WEATHER,)))
    assert response.tool_calls == (ToolCallRecord("call_1", "get_weather", '{"city": "Oslo"}'),)
    assert response.finish_reason == "tool_calls" and response.text == ""
    body = wire.last
    assert body["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": WEATHER.parameters}}]
    assert body["messages"][2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}}]}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c0", "content": "sunny"}


async def test_tool_arguments_that_are_not_json_pass_through(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion(None, tool_calls=[call("get_weather", "{city: Oslo")])))
    response = await model(wire, backoff).request(ask(tools=(WEATHER,)))
    assert response.tool_calls[0].arguments == "{city: Oslo"


async def test_length_finish_is_reported_not_raised(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion('{"name": "An', finish="length")))
    response = await model(wire, backoff).request(ask(output=PERSON))
    assert response.finish_reason == "length" and response.text == '{"name": "An'


async def test_structured_output_uses_json_schema(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion('{"name": "Ann"}')))
    response = await model(wire, backoff).request(ask(output=PERSON))
    assert response.text == '{"name": "Ann"}'
    assert wire.last["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Person_record", "schema": PERSON.json_schema, "strict": False}}


PLAN = OutputSchema("Plan", {
    "$defs": {"Step": {"type": "object", "properties": {"what": {"type": "string"},
                                                        "done": {"type": "boolean",
                                                                 "default": False}}}},
    "type": "object", "title": "Plan",
    "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/Step"}}}})


async def test_openai_gets_the_strict_schema(wire: WireServer, backoff: Backoff,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("orchestra.models.openai.is_official_openai", lambda url: True)
    wire.add(Reply(body=completion('{"steps": []}')))
    await model(wire, backoff).request(ask(output=PLAN))
    sent = wire.last["response_format"]["json_schema"]
    assert sent["strict"] is True and "max_completion_tokens" not in wire.last
    step = sent["schema"]["properties"]["steps"]["items"]
    # every object closed, every property required, no defaults, references inlined
    assert step == {"type": "object", "properties": {"what": {"type": "string"},
                                                     "done": {"type": "boolean"}},
                    "required": ["what", "done"], "additionalProperties": False}
    assert sent["schema"]["required"] == ["steps"] and "$defs" not in sent["schema"]


async def test_a_free_form_object_is_sent_without_strict(wire: WireServer, backoff: Backoff,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("orchestra.models.openai.is_official_openai", lambda url: True)
    free = OutputSchema("Tags", {"type": "object", "properties": {"tags": {
        "type": "object", "additionalProperties": {"type": "string"}}}})
    wire.add(Reply(body=completion('{"tags": {}}')))
    await model(wire, backoff).request(ask(output=free))
    sent = wire.last["response_format"]["json_schema"]
    assert sent["strict"] is False and sent["schema"] == free.json_schema


async def test_auto_mode_with_tools_on_a_local_server_sends_no_format(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion("{}")), Reply(body=completion("{}")))
    await model(wire, backoff).request(ask(output=PERSON, tools=(WEATHER,)))
    assert "response_format" not in wire.last
    await model(wire, backoff, json_schema_mode="json_schema").request(
        ask(output=PERSON, tools=(WEATHER,)))
    assert wire.last["response_format"]["type"] == "json_schema"


async def test_rejected_response_format_falls_back_and_is_remembered(
        wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    rejection = {"error": {"code": 400, "type": "invalid_request_error", "message":
                           'response_format type must be one of "text" or "json_object"'}}
    wire.add(Reply(400, rejection),
             Reply(400, {"error": {"message": "response_format json_object unsupported"}}),
             Reply(body=completion('{"name": "Ann"}')), Reply(body=completion('{"name": "Bo"}')))
    adapter = model(wire, backoff)
    response = await adapter.request(ask(output=PERSON))
    assert response.text == '{"name": "Ann"}'
    formats = [r.body.get("response_format", {}).get("type") for r in wire.received]
    assert formats == ["json_schema", "json_object", None]
    await adapter.request(ask(output=PERSON))
    assert "response_format" not in wire.last and wire.count == 4
    assert sleeps.delays == []  # a fallback is not a retry


async def test_401_is_not_retried_and_names_the_key_variable(
        wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    wire.add(Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}))
    with pytest.raises(ModelAPIError) as info:
        await model(wire, backoff).request(ask())
    error = info.value
    assert (error.status, error.retryable, wire.count, sleeps.delays) == (401, False, 1, [])
    text = str(error)
    assert "OPENAI_COMPATIBLE_API_KEY" in text and "'m1'" in text and wire.url in text
    assert SECRET not in text and "***" in text
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.parametrize("status", [400, 403, 404, 422])
async def test_client_errors_are_not_retried(
        wire: WireServer, backoff: Backoff, status: int) -> None:
    wire.add(Reply(status, {"error": {"message": "nope"}}))
    with pytest.raises(ModelAPIError) as info:
        await model(wire, backoff).request(ask())
    assert info.value.status == status and not info.value.retryable and wire.count == 1


async def test_429_honours_retry_after(
        wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    wire.add(Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.05"}),
             Reply(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "30"}),
             Reply(body=completion("ok")))
    response = await model(wire, backoff).request(ask())
    assert response.text == "ok" and wire.count == 3
    assert sleeps.delays == [0.05, 0.03]


async def test_real_sleep_waits_out_retry_after(wire: WireServer) -> None:
    wire.add(Reply(429, {"error": {"message": "slow"}}, {"Retry-After": "0.05"}),
             Reply(body=completion("ok")))
    adapter = OpenAIModel("m1", base_url=f"{wire.url}/v1")
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await adapter.request(ask())).text == "ok"
    assert loop.time() - started >= 0.05


async def test_500_then_success_backs_off(
        wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    wire.add(Reply(500, {"error": {"message": "boom"}}), Reply(body=completion("ok")))
    assert (await model(wire, backoff).request(ask())).text == "ok"
    assert wire.count == 2 and len(sleeps.delays) == 1 and 0.005 <= sleeps.delays[0] <= 0.01


async def test_retries_run_out(wire: WireServer, backoff: Backoff, sleeps: SleepRecorder) -> None:
    wire.add(*[Reply(503, {"error": {"message": "busy"}}) for _ in range(3)])
    with pytest.raises(ModelAPIError) as info:
        await model(wire, backoff, max_retries=2).request(ask())
    assert info.value.retryable and info.value.status == 503
    assert "gave up after 3 attempts" in str(info.value)
    assert wire.count == 3 and len(sleeps.delays) == 2


async def test_retry_after_beyond_the_cap_is_raised_not_waited(
        wire: WireServer, sleeps: SleepRecorder) -> None:
    wire.add(Reply(429, {"error": {"message": "later"}}, {"Retry-After": "3600"}))
    adapter = model(wire, Backoff(max_retry_after=10, sleep=sleeps))
    with pytest.raises(ModelAPIError) as info:
        await adapter.request(ask())
    assert info.value.retryable and sleeps.delays == [] and wire.count == 1


async def test_malformed_json_body(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=b'{"choices": [ this is not json'))
    with pytest.raises(ModelAPIError) as info:
        await model(wire, backoff, max_retries=0).request(ask())
    assert "malformed JSON" in str(info.value) and wire.url in str(info.value)


async def test_body_without_choices(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body={"object": "chat.completion"}))
    with pytest.raises(ModelAPIError, match="no 'choices'"):
        await model(wire, backoff).request(ask())


async def test_connection_refused(closed_port: int, backoff: Backoff,
                                  sleeps: SleepRecorder) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    adapter = OpenAIModel("m1", base_url=url, max_retries=2, backoff=backoff)
    with pytest.raises(ModelAPIError) as info:
        await adapter.request(ask())
    # nothing listens on this machine: fail at once, naming the URL and the model
    assert f"nothing listens at {url}" in str(info.value) and "'m1'" in str(info.value)
    assert not info.value.retryable and sleeps.delays == []


def test_a_refusal_elsewhere_is_still_worth_retrying() -> None:
    from orchestra.models._http import Endpoint

    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    remote = Endpoint("m1", "http://models.example:8080/v1", "KEY").unreachable(refused)
    local = Endpoint("m1", "http://localhost:8080/v1", "KEY").unreachable(refused)
    assert remote.error.retryable and not local.error.retryable


async def test_timeout(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion("late"), delay=1.0))
    adapter = model(wire, backoff, max_retries=0, timeout=0.2)
    with pytest.raises(ModelAPIError, match=r"no answer within 0.2 s") as info:
        await adapter.request(ask())
    assert info.value.retryable


def test_missing_key_for_openai_names_the_variable() -> None:
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4.1-mini")


def test_local_servers_need_no_key() -> None:
    adapter = OpenAIModel("qwen", base_url="http://127.0.0.1:11434/v1")
    assert adapter.name == "openai-compatible:http://127.0.0.1:11434/v1#qwen"


async def test_key_never_in_repr_logs_or_errors(
        wire: WireServer, backoff: Backoff, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    echo = {"error": {"message": f"bad things with key {SECRET}"}}
    wire.add(Reply(500, echo), Reply(500, echo))
    adapter = OpenAIModel("m1", max_retries=1, backoff=backoff)
    with capture_logs() as logs, pytest.raises(ModelAPIError) as info:
        await adapter.request(ask())
    assert wire.received[0].headers["authorization"] == f"Bearer {SECRET}"
    seen = [repr(adapter), str(adapter), str(info.value), repr(info.value), json.dumps(logs)]
    assert logs and logs[0]["event"] == "model.retry"
    assert all(SECRET not in text for text in seen)


async def test_guard_blocks_requests(wire: WireServer, backoff: Backoff,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_guard, "ALLOW_MODEL_REQUESTS", False)
    with pytest.raises(UserError, match="disabled"):
        await model(wire, backoff).request(ask())
    assert wire.count == 0


def test_one_model_across_event_loops(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion("one")), Reply(body=completion("two")))
    adapter = model(wire, backoff)
    assert asyncio.run(adapter.request(ask())).text == "one"
    assert asyncio.run(adapter.request(ask())).text == "two"


def test_official_api_gets_max_completion_tokens() -> None:
    body = chat_body(ask(settings=ModelSettings(max_tokens=5)), mode="none",
                     max_tokens_field="max_completion_tokens")
    assert body["max_completion_tokens"] == 5 and "max_tokens" not in body


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after({"Retry-After": date}, now=1445412480.0) == 10.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_a_reply_asked_cold_turns_off_the_servers_prompt_cache(
        wire: WireServer, backoff: Backoff, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp's reused prompt cache changes a greedy answer: ``prompt_cache=False`` asks
    it to compute the prompt afresh; OpenAI's API, which has no such field, is not sent it."""
    for _ in range(3):
        wire.add(Reply(body=completion("ok")))
    cold = ModelSettings(temperature=0, prompt_cache=False)
    await model(wire, backoff).request(ask(settings=cold))
    assert wire.last["cache_prompt"] is False
    await model(wire, backoff).request(ask(settings=ModelSettings(temperature=0)))
    assert "cache_prompt" not in wire.last
    monkeypatch.setattr("orchestra.models.openai.is_official_openai", lambda url: True)
    await model(wire, backoff).request(ask(settings=cold))
    assert "cache_prompt" not in wire.last
