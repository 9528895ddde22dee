"""Routes: postings to unknown roles fail at once, typed targets and inputs, returned posts,
and the pipeline reference derived for resuming in another process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    RoleDefinitionError,
    ScriptedModel,
    SQLiteBlackboard,
    ToolContext,
    UserError,
    fan_out,
    handoff,
    reply,
    tool,
    tool_call,
)


class Draft(BaseModel):
    text: str


class Verdict(BaseModel):
    ok: bool


class Writer(Role[Any, Draft]):
    """You write a draft as JSON {"text": ...}."""


class Editor(Role[Draft, Verdict]):
    """You judge a draft as JSON {"ok": true|false}."""


def _model() -> FunctionModel:
    def answer(req: ModelRequest) -> str:
        system = req.messages[0].content
        return '{"text": "hello"}' if "write" in system else '{"ok": true}'
    return FunctionModel(answer)


def _pipeline(route: Any) -> Pipeline:
    return Pipeline("edit", roles=[Writer(), Editor()],
                    start=lambda inp: [NewTask("writer", inp, max_attempts=1)],
                    routes={Writer: route}, model=_model())


async def _run(tmp_path: Path, pipeline: Pipeline) -> tuple[Any, list[tuple[str, str]]]:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await asyncio.wait_for(Coordinator(store, pipeline).run({"topic": "x"}), 30)
        tasks = [(t.role, t.status) for t in await store.list_tasks(run.id)]
        return run, tasks
    finally:
        await store.close()


def test_role_generic_sets_input_and_output() -> None:
    assert Editor.input is Draft and Editor.output is Verdict
    assert Writer.input is None and Writer.output is Draft


def test_bad_input_declaration_fails_at_class_definition() -> None:
    with pytest.raises(RoleDefinitionError, match="input"):
        class Bad(Role):
            """x"""
            input = dict  # type: ignore[assignment]


@pytest.mark.parametrize("post", [
    lambda out, task, w: w.handoffs.append(NewHandoff("editr", out.model_dump())),
    lambda out, task, w: [NewTask("editr", {})],
    lambda out, task, w: fan_out(w, "editr", [1, 2]),
])
async def test_posting_to_an_unknown_role_fails_the_task_at_once(tmp_path: Path,
                                                                  post: Any) -> None:
    run, tasks = await _run(tmp_path, _pipeline(post))
    assert run.status == "failed"
    assert "'editr'" in (run.error or "") and "['editor', 'writer']" in (run.error or "")
    assert tasks == [("writer", "failed")]  # nothing left pending forever


async def test_returned_typed_handoff_is_validated_and_committed(tmp_path: Path) -> None:
    run, tasks = await _run(tmp_path, _pipeline(lambda out, task, w: handoff(Editor, out)))
    assert run.status == "completed", run.error
    assert tasks == [("writer", "completed"), ("editor", "completed")]


async def test_payload_not_matching_the_input_model_fails_naming_the_field(
        tmp_path: Path) -> None:
    run, tasks = await _run(tmp_path, _pipeline(lambda out, task, w: [
        NewHandoff("editor", {"txt": "typo"})]))
    assert run.status == "failed"
    assert "Draft" in (run.error or "") and "text" in (run.error or "")
    assert tasks == [("writer", "failed")]


async def test_route_may_be_a_role_class(tmp_path: Path) -> None:
    run, tasks = await _run(tmp_path, _pipeline(Editor))
    assert run.status == "completed", run.error
    assert tasks == [("writer", "completed"), ("editor", "completed")]


def test_route_targets_are_checked_when_the_pipeline_is_built() -> None:
    class Stranger(Role):
        """x"""
    with pytest.raises(UserError, match=r"unknown role 'stranger'.*'editor', 'writer'"):
        _pipeline(Stranger)
    with pytest.raises(UserError, match="routes for unknown role 'stranger'"):
        Pipeline("p", roles=[Writer()], start=lambda i: [], routes={Stranger: Writer})


def test_start_payload_is_validated() -> None:
    p = Pipeline("p", roles=[Editor()], start=lambda i: [NewTask("editor", i)])
    with pytest.raises(UserError, match="Draft"):
        p.first_tasks({"nope": 1})
    assert p.first_tasks({"text": "t"})[0].input == {"text": "t"}


class Dispatcher(Role):
    """You dispatch work with the send tool."""

    @tool
    async def send(self, ctx: ToolContext, to: str) -> str:
        """Hand the work to a role."""
        ctx.handoff(to, {"text": "hi"})
        return "sent"


def make_pipeline(run_input: Any) -> Pipeline:
    return Pipeline("made", roles=[Writer()], start=lambda i: [NewTask("writer", i)])


MODULE_LEVEL = Pipeline("module", roles=[Writer()], start=lambda i: [NewTask("writer", i)])


def test_reference_is_derived_from_a_factory_or_a_module_name() -> None:
    assert make_pipeline({}).reference() == f"{__name__}:make_pipeline"
    assert MODULE_LEVEL.reference() == f"{__name__}:MODULE_LEVEL"

    def closure() -> Pipeline:
        return Pipeline("c", roles=[Writer()], start=lambda i: [NewTask("writer", i)])
    assert closure().reference() is None


def test_resume_of_an_unreferenced_pipeline_says_what_to_add(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import asyncio, sys
        from orchestra import (Coordinator, FunctionModel, NewTask, Pipeline, Role,
                               SQLiteBlackboard)

        class Solo(Role):
            \"\"\"x\"\"\"

        async def main():
            p = Pipeline("inline", roles=[Solo()], start=lambda i: [NewTask("solo", i)],
                         model=FunctionModel(lambda r: "done"))
            store = await SQLiteBlackboard.open(sys.argv[1])
            run = await Coordinator(store, p).start({})
            print(run.id)
            await store.close()

        asyncio.run(main())
    """))
    db = tmp_path / "o.db"
    run_id = subprocess.run([sys.executable, str(script), str(db)], capture_output=True,
                            text=True, check=True, cwd=tmp_path, timeout=60).stdout.strip()
    out = subprocess.run([sys.executable, "-m", "orchestra.cli.main", "--json", "resume",
                          run_id, "--db", str(db)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    error = json.loads(out.stdout)["error"]
    assert "def make_pipeline(run_input)" in error and "ref=" in error, error


async def test_a_tools_handoff_to_an_unknown_role_is_refused_to_the_model(
        tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("send", {"to": "editr"})),
                           reply("", tool_call("send", {"to": "editor"})), reply("done")])
    pipeline = Pipeline("d", roles=[Dispatcher(), Editor()],
                        start=lambda i: [NewTask("dispatcher", i)],
                        model=FunctionModel(lambda r: '{"ok": true}'))
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        coordinator = Coordinator(store, pipeline, models={"dispatcher": model})
        run = await asyncio.wait_for(coordinator.run({}), 30)
        assert run.status == "completed", run.error
        refused = model.calls[1].messages[-1].content
        assert "'editr'" in refused and "does not have" in refused
        assert [(t.role, t.status) for t in await store.list_tasks(run.id)] == [
            ("dispatcher", "completed"), ("editor", "completed")]
    finally:
        await store.close()
