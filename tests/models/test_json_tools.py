"""The JSON tool protocol: request and reply shapes, on the wire, and in a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_wire import Reply, WireServer
from test_model_openai import completion

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
)
from orchestra._types import Message, ToolCallRecord
from orchestra.models._http import Backoff
from orchestra.models.base import ModelResponse, OutputSchema, ToolSchema
from orchestra.models.json_tools import JSONToolModel, protocol_request, protocol_response
from orchestra.models.openai import OpenAIModel

WRITE = ToolSchema("write_file", "Create or replace a text file.", {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"]})
RESULT = OutputSchema("CodeResult", {
    "$defs": {"Note": {"type": "object", "properties": {"text": {"type": "string"}}}},
    "type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}},
                                     "note": {"$ref": "#/$defs/Note"}},
    "required": ["files"]})
HISTORY = (
    Message("system", "You write code."), Message("user", "write a.py", name="task"),
    Message("assistant", "", (ToolCallRecord("c1", "write_file",
                                             '{"path": "a.py", "content": "x = 1"}'),)),
    Message("tool", '{"path": "a.py", "bytes": 5}', tool_call_id="c1", name="write_file"),
)


def test_request_has_no_tools_and_a_union_schema_as_output() -> None:
    sent = protocol_request(ModelRequest(HISTORY, (WRITE,), RESULT))
    assert sent.tools == () and sent.output is not None
    branches = sent.output.json_schema["anyOf"]
    assert [b["properties"]["name"]["const"] for b in branches] == ["write_file", "final_answer"]
    assert branches[0]["properties"]["arguments"] == WRITE.parameters
    # the answer's $defs are inlined: the branch stands alone under anyOf
    answer = branches[1]["properties"]["arguments"]
    assert answer["properties"]["note"]["properties"] == {"text": {"type": "string"}}
    assert "$ref" not in json.dumps(sent.output.json_schema)
    assert all(b["required"] == ["name", "arguments"] and b["additionalProperties"] is False
               for b in branches)
    # the protocol and the tools are explained once, in the system prompt
    assert sent.messages[0].content.startswith("You write code.")
    assert "- write_file(path, content): Create or replace a text file." in (
        sent.messages[0].content)
    assert '{"name": "final_answer", "arguments":' in sent.messages[0].content
    # history: an earlier call is the JSON the model would write; its result a user turn
    assert [m.role for m in sent.messages] == ["system", "user", "assistant", "user"]
    assert json.loads(sent.messages[2].content) == {
        "name": "write_file", "arguments": {"path": "a.py", "content": "x = 1"}}
    assert sent.messages[3].content == 'Result of write_file:\n{"path": "a.py", "bytes": 5}'


def test_final_name_never_clashes_with_a_tool() -> None:
    clash = ToolSchema("final_answer", "a tool of that name", {"type": "object"})
    sent = protocol_request(ModelRequest(HISTORY[:2], (clash,), None))
    assert sent.output is not None
    names = [b["properties"]["name"]["const"] for b in sent.output.json_schema["anyOf"]]
    assert names == ["final_answer", "final_answer_"]


def test_replies_become_calls_or_the_answer() -> None:
    request = ModelRequest(HISTORY, (WRITE,), RESULT)
    call = protocol_response(request, ModelResponse(json.dumps(
        {"name": "write_file", "arguments": {"path": "b.py", "content": "y = 2"}})))
    assert call.text == "" and call.finish_reason == "tool_calls"
    (made,) = call.tool_calls
    assert (made.name, json.loads(made.arguments)) == (
        "write_file", {"path": "b.py", "content": "y = 2"})
    again = protocol_response(request, ModelResponse(json.dumps(
        {"name": "write_file", "arguments": {"path": "b.py", "content": "y = 2"}})))
    assert again.tool_calls[0].id == made.id  # stable: replays see the same id
    final = protocol_response(request, ModelResponse(
        '{"name": "final_answer", "arguments": {"files": ["b.py"]}}'))
    assert json.loads(final.text) == {"files": ["b.py"]} and not final.tool_calls
    text_answer = protocol_response(ModelRequest(HISTORY, (WRITE,), None), ModelResponse(
        '{"name": "final_answer", "arguments": {"answer": "done"}}'))
    assert text_answer.text == "done"
    for unusable in ('{"name": "rm_rf", "arguments": {}}', "not json", '["a"]'):
        assert protocol_response(request, ModelResponse(unusable)).text == unusable


async def test_on_the_wire_a_local_server_gets_a_schema_and_no_tools(
        wire: WireServer, backoff: Backoff) -> None:
    step = {"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1"}}
    wire.add(Reply(body=completion(json.dumps(step))))
    model = JSONToolModel(OpenAIModel("m", base_url=f"{wire.url}/v1", backoff=backoff,
                                      context_tokens=4096))
    assert model.context_tokens == 4096
    response = await model.request(ModelRequest(HISTORY[:2], (WRITE,), RESULT))
    assert response.tool_calls[0].name == "write_file"
    body = wire.last
    assert "tools" not in body and "tool_choice" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["anyOf"][0]["properties"][
        "name"] == {"type": "string", "const": "write_file"}


async def test_requests_without_tools_pass_through(wire: WireServer, backoff: Backoff) -> None:
    wire.add(Reply(body=completion('{"files": []}')))
    model = JSONToolModel(OpenAIModel("m", base_url=f"{wire.url}/v1", backoff=backoff))
    await model.request(ModelRequest(HISTORY[:2], (), RESULT))
    assert wire.last["response_format"]["json_schema"]["schema"] == RESULT.json_schema


class Deployer(Role):
    """You deploy."""

    needs_approval = frozenset({"deploy"})

    @tool
    async def deploy(self, ctx: ToolContext, target: str) -> str:
        """Deploy to a target."""
        return f"deployed to {target} with key {ctx.idempotency_key}"


@pytest.mark.parametrize("approve", [True, False])
async def test_approvals_and_replay_work_as_with_native_calls(tmp_path: Path,
                                                              approve: bool) -> None:
    def script(req: ModelRequest) -> object:
        assert not req.tools  # the protocol, not native calls
        last = req.messages[-1]
        if last.content.startswith("Result of deploy"):
            return reply(json.dumps({"name": "final_answer",
                                     "arguments": {"answer": last.content}}))
        return reply(json.dumps({"name": "deploy", "arguments": {"target": "prod"}}))

    inner = FunctionModel(script)
    pipe = Pipeline("d", roles=[Deployer()], start=lambda i: [NewTask("deployer", i)],
                    model=JSONToolModel(inner))
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    run = await Coordinator(store, pipe).run("ship it")
    assert run.status == "waiting"
    (ap,) = await store.list_approvals(run.id, status="pending")
    assert ap.tool == "deploy" and ap.arguments == {"target": "prod"}
    await store.close()
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    await store.decide_approval(ap.id, approved=approve, by="ops", reason="not on a Friday")
    run = await Coordinator(store, pipe).resume(run.id)
    assert run.status == "completed"
    (task,) = await store.list_tasks(run.id)
    if approve:
        assert task.result.startswith("Result of deploy:\ndeployed to prod with key ")
        assert task.result.endswith(f"{run.id}:{task.id}:0:2")  # (run, task, retry, step)
    else:
        assert "denied" in task.result and "not on a Friday" in task.result
    assert len(inner.calls) == 2  # the first model call was replayed, not repeated
    steps = await store.get_steps(task.id, 0)
    assert [(s.kind, s.name) for s in steps] == [("model", "model")] + (
        [("tool", "deploy")] if approve else []) + [("model", "model")]
    await store.close()
