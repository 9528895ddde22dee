"""An MCP call is a tool step like a Python tool's (issue 47): the same ``execute_tool``
span under the task's, an error result failing it, and no span for a replayed call."""

from __future__ import annotations

from pathlib import Path

from mcp_helpers import effects, pipeline
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from orchestra import Coordinator, Role, ScriptedModel, SQLiteBlackboard, reply, tool_call
from orchestra.tracing import Tracing


class Worker(Role):
    """You use the tools you are given."""

    recall = False


async def test_an_mcp_call_has_the_span_of_a_tool_step(tmp_path: Path) -> None:
    role = type("Worker", (Worker,), {"mcp": [effects(tmp_path)], "__doc__": Worker.__doc__})()
    model = ScriptedModel([reply("", tool_call("append", {"text": "one"})),
                           reply("", tool_call("shaped", {"sides": 3, "broken": True})),
                           reply("done")])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    coord = Coordinator(store, pipeline(role, model), tracing=Tracing(provider))
    try:
        run = await coord.run("go", run_id="r1")
        assert run.status == "completed", run.error
        spans = {s.name: s for s in exporter.get_finished_spans()}
        task, append, shaped = (spans["orchestra.task"], spans["execute_tool append"],
                                spans["execute_tool shaped"])
        assert append.parent is not None and append.parent.span_id == task.context.span_id
        assert append.attributes is not None and shaped.attributes is not None
        assert append.attributes["gen_ai.tool.name"] == "append"
        assert append.attributes["orchestra.step"] == 3  # after the tool list and the model
        assert append.status.status_code != StatusCode.ERROR
        assert shaped.status.status_code == StatusCode.ERROR  # the server's error result
        assert "MCP tool 'shaped' (server 'effects') failed" in str(shaped.status.description)

        # a fork from before the last model call replays both calls: no span, none sent
        at = max(e.seq for e in await store.events("r1")
                 if e.kind == "step.completed" and e.data["kind"] == "tool")
        await store.fork_run("r1", at, fork_id="f1")
        exporter.clear()
        again = Coordinator(store, pipeline(role, ScriptedModel([reply("done")])),
                            tracing=Tracing(provider), mcp=coord.mcp)
        fork = await again.resume("f1")
        assert fork.status == "completed", fork.error
        assert "orchestra.task" in [s.name for s in exporter.get_finished_spans()]
        assert not [s.name for s in exporter.get_finished_spans()
                    if s.name.startswith("execute_tool")]
        assert len((tmp_path / "effects.log").read_text().splitlines()) == 1
    finally:
        await coord.mcp.aclose()
        await store.close()
