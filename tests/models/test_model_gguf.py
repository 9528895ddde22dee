"""GGUFModel with a stand-in llama.cpp server, and (opt-in) with a real GGUF file."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from orchestra._errors import ModelAPIError, UserError
from orchestra._types import Message
from orchestra.models.base import ModelRequest, ModelSettings, OutputSchema, ToolSchema
from orchestra.models.gguf import GGUFModel

PERSON = OutputSchema("Person", {"type": "object", "properties": {"name": {"type": "string"},
                                                                   "age": {"type": "integer"}},
                                 "required": ["name", "age"]})
WEATHER = ToolSchema("get_weather", "Weather for a city",
                     {"type": "object", "properties": {"city": {"type": "string"}}})


class FakeServer:
    """Answers like xllamacpp.Server.handle_chat_completions and records the bodies."""

    def __init__(self, reply: Any = None, error: Exception | None = None) -> None:
        self.reply = reply or {"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "hi"}}], "usage": {
            "prompt_tokens": 9, "completion_tokens": 1}, "model": "q.gguf"}
        self.error = error
        self.bodies: list[dict[str, Any]] = []
        self.threads: list[int] = []

    def handle_chat_completions(self, body: dict[str, Any]) -> Any:
        self.bodies.append(body)
        self.threads.append(threading.get_ident())
        if self.error is not None:
            raise self.error
        return self.reply


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def ask(**kw: Any) -> ModelRequest:
    return ModelRequest((Message("system", "s"), Message("user", "hi")), **kw)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=str(tmp_path / "absent.gguf")):
        GGUFModel(tmp_path / "absent.gguf")


def test_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"PK\x03\x04 zip, not a model")
    with pytest.raises(UserError, match="not a GGUF model file"):
        GGUFModel(path)


async def test_request_runs_in_a_worker_thread(gguf_file: Path) -> None:
    server = FakeServer()
    model = GGUFModel(gguf_file, server_factory=lambda: server)
    response = await model.request(ask(settings=ModelSettings(temperature=0, seed=1)))
    assert response.text == "hi" and response.usage.input_tokens == 9
    assert server.threads[0] != threading.get_ident()
    assert server.bodies[0] == {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        "temperature": 0, "seed": 1, "max_tokens": 1024}
    assert model.name == f"gguf:{gguf_file}"


async def test_a_reply_asked_cold_turns_off_llama_cpps_prompt_cache(gguf_file: Path) -> None:
    """A reused prompt cache changes a greedy answer (``ModelSettings.prompt_cache``): the
    coder's first answer is asked cold in-process too, as over HTTP."""
    server = FakeServer()
    model = GGUFModel(gguf_file, server_factory=lambda: server)
    await model.request(ask(settings=ModelSettings(temperature=0, prompt_cache=False)))
    assert server.bodies[-1]["cache_prompt"] is False
    for warm in (None, True):  # the server's default: its cache reused
        await model.request(ask(settings=ModelSettings(prompt_cache=warm)))
        assert "cache_prompt" not in server.bodies[-1]


async def test_structured_output_is_schema_constrained_unless_tools(gguf_file: Path) -> None:
    server = FakeServer()
    model = GGUFModel(gguf_file, server_factory=lambda: server)
    await model.request(ask(output=PERSON))
    assert server.bodies[-1]["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Person", "schema": PERSON.json_schema, "strict": False}}
    await model.request(ask(output=PERSON, tools=(WEATHER,)))
    assert "response_format" not in server.bodies[-1]
    assert server.bodies[-1]["tools"][0]["function"]["name"] == "get_weather"


async def test_rejected_request_is_a_model_api_error(gguf_file: Path) -> None:
    model = GGUFModel(gguf_file, server_factory=lambda: FakeServer(error=ValueError("bad body")))
    with pytest.raises(ModelAPIError, match="rejected: bad body") as info:
        await model.request(ask())
    assert info.value.status == 400 and not info.value.retryable
    broken = GGUFModel(gguf_file, server_factory=lambda: FakeServer(reply={"code": 500}))
    with pytest.raises(ModelAPIError, match=r"llama\.cpp returned an error"):
        await broken.request(ask())


@pytest.mark.llama
@pytest.mark.skipif(not os.environ.get("ORCHESTRA_GGUF_PATH"),
                    reason="set ORCHESTRA_GGUF_PATH to a small .gguf model")
async def test_real_gguf_chat_and_structured_output() -> None:
    model = GGUFModel(os.environ["ORCHESTRA_GGUF_PATH"], n_ctx=2048)
    try:
        chat = await model.request(ask(settings=ModelSettings(temperature=0, max_tokens=16)))
        assert chat.text and chat.usage.output_tokens > 0
        person = await model.request(ModelRequest(
            (Message("user", "Make up a person named Ann aged 31."),), output=PERSON,
            settings=ModelSettings(temperature=0, max_tokens=64)))
        data = json.loads(person.text)
        assert isinstance(data["name"], str) and isinstance(data["age"], int)
    finally:
        model.close()


async def test_structured_option_and_context(gguf_file: Path) -> None:
    server = FakeServer()
    loose = GGUFModel(gguf_file, server_factory=lambda: server, structured="json_object",
                      n_ctx=8192)
    assert loose.context_tokens == 8192  # what the runtime compacts requests to fit
    await loose.request(ask(output=PERSON))
    assert server.bodies[-1]["response_format"] == {"type": "json_object"}
    forced = GGUFModel(gguf_file, server_factory=lambda: server, structured="json_schema")
    await forced.request(ask(output=PERSON, tools=(WEATHER,)))
    assert server.bodies[-1]["response_format"]["type"] == "json_schema"
    with pytest.raises(UserError, match="structured='xml'"):
        GGUFModel(gguf_file, server_factory=lambda: server, structured="xml")
    with pytest.raises(UserError, match="n_ctx=100: too small"):
        GGUFModel(gguf_file, server_factory=lambda: server, n_ctx=100)
