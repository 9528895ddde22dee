"""OpenTelemetry spans: run → task → model call / tool call, GenAI attributes, and a resumed
run's span linked to the span of the drive before it (in-memory exporter, no network)."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    Summarize,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.tracing import Tracing


class Adder(Role):
    """You add with the add tool, then say the sum."""

    needs_approval = frozenset({"publish"})

    @tool
    async def add(self, ctx: ToolContext, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def publish(self, ctx: ToolContext, value: int) -> str:
        """Publish the sum."""
        return "ok"


def _tracing() -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider), exporter


async def test_spans_nest_and_carry_genai_attributes_and_resume_links(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("add", {"a": 2, "b": 3})),
                           reply("", tool_call("publish", {"value": 5})),
                           reply("the sum is 5")], name="scripted-7b")
    pipeline = Pipeline("adder", roles=[Adder()], start=lambda i: [NewTask("adder", i)],
                        model=model)
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        tracing, exporter = _tracing()
        run = await Coordinator(store, pipeline, tracing=tracing).run({"x": 1})
        assert run.status == "waiting"
        spans = {s.name: s for s in exporter.get_finished_spans()}
        run_span, task_span = spans["orchestra.run"], spans["orchestra.task"]
        chat, tool_span = spans["chat scripted-7b"], spans["execute_tool add"]
        assert task_span.parent.span_id == run_span.context.span_id
        assert chat.parent.span_id == task_span.context.span_id
        assert tool_span.parent.span_id == task_span.context.span_id
        assert run_span.attributes["orchestra.run.id"] == run.id
        assert task_span.attributes["orchestra.agent.id"] == f"{run.id}/adder"
        assert chat.attributes["gen_ai.request.model"] == "scripted-7b"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
        assert tool_span.attributes["gen_ai.tool.name"] == "add"

        [pending] = await store.list_approvals(run.id, status="pending")
        await store.decide_approval(pending.id, approved=True, by="test")
        again, exporter2 = _tracing()  # a new process: only the store connects the two
        run = await Coordinator(store, pipeline, tracing=again).resume(run.id)
        assert run.status == "completed"
        resumed = next(s for s in exporter2.get_finished_spans() if s.name == "orchestra.run")
        assert [link.context.span_id for link in resumed.links] == [run_span.context.span_id]
        assert resumed.attributes["orchestra.run.resumed"] is True
        names = [s.name for s in exporter2.get_finished_spans()]
        # the replayed model calls make no span; the one after the approval does
        assert names.count("chat scripted-7b") == 1 and "execute_tool publish" in names
    finally:
        await store.close()


async def test_tracing_off_wraps_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([reply("done")])
    pipeline = Pipeline("adder", roles=[Adder()], start=lambda i: [NewTask("adder", i)],
                        model=model)
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        coordinator = Coordinator(store, pipeline)
        assert coordinator.models["adder"] is model
        run = await coordinator.run({})
        kinds = [e.kind for e in await store.events(run.id)]
        assert "trace.span" not in kinds
    finally:
        await store.close()


class Reader(Role):
    """You read pages with the page tool, then say what you read."""

    compaction = Summarize(threshold=120, keep_tokens=40, summary_tokens=16)
    concurrency = 1

    @tool
    async def page(self, ctx: ToolContext, n: int) -> str:
        """Read one page."""
        return f"page {n}: " + "words " * 60


def _reader() -> FunctionModel:
    calls: dict[str, int] = {}

    def answer(request: ModelRequest) -> object:
        if request.messages[0].content.startswith("You write faithful"):
            return "read some pages"
        book = next(m.content for m in request.messages if m.name == "task")
        calls[book] = n = calls.get(book, 0) + 1
        return reply("", tool_call("page", {"n": n}, id=f"p{n}")) if n <= 2 \
            else reply("done reading")
    return FunctionModel(answer, name="fn")


async def test_a_summary_is_a_compaction_span_around_its_model_call(tmp_path: Path) -> None:
    pipeline = Pipeline("reader", roles=[Reader()],  # two tasks, one after the other
                        start=lambda i: [NewTask("reader", {"book": 1}, key="b1"),
                                         NewTask("reader", {"book": 2}, key="b2")],
                        model=_reader())
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        tracing, exporter = _tracing()
        run = await Coordinator(store, pipeline, tracing=tracing).run({})
        assert run.status == "completed", run.error
        spans = exporter.get_finished_spans()
        compactions = [s for s in spans if s.name == "orchestra.compaction"]
        assert compactions, [s.name for s in spans]
        inner = [s for s in spans if s.parent is not None
                 and s.parent.span_id == compactions[0].context.span_id]
        assert [s.name for s in inner] == ["chat fn"]
        tasks = {s.context.span_id for s in spans if s.name == "orchestra.task"}
        assert compactions[0].parent.span_id in tasks
    finally:
        await store.close()
