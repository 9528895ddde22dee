"""Stop sequences (``ModelSettings.stop``): sent to every provider in its own field,
honoured by the test doubles as a server honours them, part of a recording's key only
when set, and no change to any fingerprint taken before they existed."""

from __future__ import annotations

from typing import Any

import pytest
from model_wire import SECRET, Reply, WireServer

from orchestra import FunctionModel, Role, ScriptedModel
from orchestra._errors import UserError
from orchestra._types import Message
from orchestra.coordinator.versions import _role_parts
from orchestra.models._http import Backoff
from orchestra.models.anthropic import AnthropicModel
from orchestra.models.base import ModelRequest, ModelResponse, ModelSettings
from orchestra.models.openai import OpenAIModel
from orchestra.models.record import canonical_request

STOP = ("\ndef test_", "\nif __name__")
CODE = "def f(x):\n    return x\n"
REPLY = f"```python\n{CODE}\ndef test_f():\n    assert f(1) == 1\n```\n"


def ask(settings: ModelSettings) -> ModelRequest:
    return ModelRequest((Message("system", "be brief"), Message("user", "write f")),
                        settings=settings)


async def test_an_openai_compatible_server_is_sent_the_stops(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body={"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "```python\n" + CODE}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9}}))
    model = OpenAIModel("m1", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=backoff)
    response = await model.request(ask(ModelSettings(max_tokens=50, stop=STOP)))
    assert wire.received[0].body["stop"] == list(STOP)
    assert response.finish_reason == "stop"


async def test_no_stop_field_is_sent_unless_one_is_set(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body={"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "hi"}}]}))
    model = OpenAIModel("m1", base_url=f"{wire.url}/v1", api_key=SECRET, backoff=backoff)
    await model.request(ask(ModelSettings(max_tokens=50)))
    assert "stop" not in wire.received[0].body


async def test_anthropic_is_sent_them_as_stop_sequences(
        wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body={"id": "msg_1", "type": "message", "role": "assistant",
                         "model": "claude-x", "content": [{"type": "text", "text": CODE}],
                         "stop_reason": "stop_sequence", "stop_sequence": STOP[0],
                         "usage": {"input_tokens": 5, "output_tokens": 9}}))
    model = AnthropicModel("claude-x", api_key=SECRET, base_url=wire.url, backoff=backoff)
    response = await model.request(ask(ModelSettings(max_tokens=50, stop=STOP)))
    assert wire.received[0].body["stop_sequences"] == list(STOP)
    assert response.finish_reason == "stop" and response.text == CODE


@pytest.mark.parametrize("double", ["scripted", "function"])
async def test_the_doubles_end_a_reply_where_a_server_would(double: str) -> None:
    model: Any = (ScriptedModel([REPLY, REPLY]) if double == "scripted"
                  else FunctionModel(lambda _: REPLY))
    stopped = await model.request(ask(ModelSettings(stop=STOP)))
    assert stopped.text == "```python\n" + CODE and stopped.finish_reason == "stop"
    assert stopped.usage.output_tokens > 0
    whole = await model.request(ask(ModelSettings()))
    assert whole.text == REPLY


async def test_tool_calls_are_not_cut() -> None:
    from orchestra import reply, tool_call

    model = ScriptedModel([reply("\ndef test_ here", tool_call("t", {"a": 1}))])
    response: ModelResponse = await model.request(ask(ModelSettings(stop=STOP)))
    assert response.text == "\ndef test_ here" and response.tool_calls


@pytest.mark.parametrize("stop", ["\ndef test_", ("",), tuple("abcde"), (1,)])
def test_stops_that_no_provider_takes_are_refused(stop: Any) -> None:
    with pytest.raises(UserError, match="at most four non-empty strings"):
        ModelSettings(stop=stop)


def test_a_recording_is_keyed_by_its_stops_only_when_there_are_some() -> None:
    plain = canonical_request(ask(ModelSettings(max_tokens=9)))
    assert plain["settings"] == {"temperature": None, "max_tokens": 9, "seed": None}
    assert canonical_request(ask(ModelSettings(max_tokens=9, stop=STOP)))["settings"][
        "stop"] == list(STOP)


def test_a_role_without_stops_keeps_the_fingerprint_it_had() -> None:
    """Fields added to ModelSettings later are left out at their default: upgrading
    orchestra changes no fingerprint of a run in flight."""

    class Plain(Role):
        """Answer."""

        name = "plain"
        settings = ModelSettings(temperature=0.0, max_tokens=100)

    class Stopping(Plain):
        """Answer."""

        settings = ModelSettings(temperature=0.0, max_tokens=100, stop=STOP)

    assert _role_parts(Plain(), patched=True)["model"]["settings"] == {
        "temperature": 0.0, "max_tokens": 100, "timeout": None, "seed": None,
        "prompt_cache": None}
    assert _role_parts(Stopping(), patched=True)["model"]["settings"]["stop"] == STOP
