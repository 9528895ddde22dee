"""The tool loop end to end on a real store: tools, structured output, journal, approval."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
    tool_call,
)


class Answer(BaseModel):
    value: int


class Calc(Role):
    """You add numbers with the add tool, then answer {"value": n}."""

    output = Answer
    max_turns = 6
    output_retries = 2
    tool_timeout = 0.5

    @tool
    async def add(self, ctx: ToolContext, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def boom(self, ctx: ToolContext) -> str:
        """Always fails."""
        raise RuntimeError("the disk is on fire")

    @tool
    async def hang(self, ctx: ToolContext) -> str:
        """Never returns."""
        await asyncio.sleep(60)
        return "late"


def pipeline(model: object, role: Role | None = None) -> Pipeline:
    return Pipeline("calc", roles=[role or Calc()],
                    start=lambda inp: [NewTask("calc", inp, max_attempts=1)],
                    model=model)  # type: ignore[arg-type]


async def run_with(tmp_path: Path, model: object, role: Role | None = None,
                   **settings: object) -> tuple[SQLiteBlackboard, str]:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    coord = Coordinator(store, pipeline(model, role),
                        settings=CoordinatorSettings(**settings))  # type: ignore[arg-type]
    run = await coord.run("add 2 and 3")
    return store, run.id


async def test_tool_then_structured_answer(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("add", {"a": 2, "b": 3})),
                           reply('```json\n{"value": 5}\n```')])
    store, run_id = await run_with(tmp_path, model)
    model.assert_complete()
    run = await store.get_run(run_id)
    assert run.status == "completed", run.error
    (task,) = await store.list_tasks(run_id)
    assert task.result == {"value": 5}
    # the second call saw the tool result
    assert model.calls[1].messages[-1].role == "tool"
    assert model.calls[1].messages[-1].content == "5"
    msgs = await store.get_messages(f"{run_id}/calc")
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    steps = await store.get_steps(task.id, 0)
    assert [(s.kind, s.name, s.status) for s in steps] == [
        ("model", "model", "completed"), ("tool", "add", "completed"),
        ("model", "model", "completed")]
    assert run.tokens_in > 0 and run.steps == 3
    await store.close()


@pytest.mark.parametrize("bad,expect", [
    ("this is not json", "not valid JSON"),
    ('{"value": "five"}', "does not match the Answer schema"),
    ("x" * (1 << 20), "far too long"),
])
async def test_invalid_output_is_fed_back_then_fails(tmp_path: Path, bad: str, expect: str
                                                     ) -> None:
    model = FunctionModel(lambda req: bad)
    store, run_id = await run_with(tmp_path, model)
    run = await store.get_run(run_id)
    assert run.status == "failed"
    (task,) = await store.list_tasks(run_id)
    assert task.status == "failed"
    assert "no usable answer after 3 tries (output_retries=2)" in (task.error or "")
    # the error is one readable line: the problem, never the schema sent as feedback
    assert "\n" not in (task.error or "") and '"properties"' not in (task.error or "")
    assert len(task.error or "") < 400 and expect in (task.error or "")
    assert len(model.calls) == 3  # first try + 2 retries
    assert expect in model.calls[1].messages[-1].content
    # after two unusable replies the model starts afresh: the task and the last problem
    fresh = model.calls[2].messages
    # in one user message (two in a row get the first echoed by small models)
    assert [m.role for m in fresh] == ["system", "user"]
    assert fresh[1].name == "task" and expect in fresh[1].content
    note = fresh[1].content.split("\n\n# Note\n\n")[1]
    assert expect in note and "\n" not in note and len(note) < 400
    # everything the model was told is stored; the store stays consistent
    msgs = await store.get_messages(f"{run_id}/calc")
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant", "user",
                                      "assistant", "user"]
    assert [m.name for m in msgs if m.role == "user"] == [
        "task", "feedback", "feedback", "attempt_failed"]
    await store.close()


@pytest.mark.parametrize("call,expect", [
    (tool_call("nope", {}), "Unknown tool 'nope'"),
    (tool_call("add", {"a": "two", "b": 3}), "Invalid arguments for 'add'"),
    (tool_call("add", "{not json"), "not valid JSON"),
    (tool_call("boom", {}), "raised RuntimeError: the disk is on fire"),
    (tool_call("hang", {}), "timed out after 0.5 s"),
])
async def test_bad_tool_calls_are_fed_back(tmp_path: Path, call: object, expect: str) -> None:
    model = ScriptedModel([reply("", call), reply('{"value": 1}')])  # type: ignore[arg-type]
    store, run_id = await run_with(tmp_path, model)
    assert (await store.get_run(run_id)).status == "completed"
    assert expect in model.calls[1].messages[-1].content
    await store.close()


async def test_tool_errors_forever_fail_the_task(tmp_path: Path) -> None:
    model = FunctionModel(lambda req: reply("", tool_call("nope", {})))
    store, run_id = await run_with(tmp_path, model)
    (task,) = await store.list_tasks(run_id)
    assert task.status == "failed" and "Unknown tool 'nope'" in (task.error or "")
    await store.close()


async def test_max_turns(tmp_path: Path) -> None:
    model = FunctionModel(lambda req: reply("", tool_call("add", {"a": len(req.messages),
                                                                  "b": 1})))
    store, run_id = await run_with(tmp_path, model)
    (task,) = await store.list_tasks(run_id)
    assert task.status == "failed" and "max_turns=6" in (task.error or "")
    assert len(model.calls) == 6
    await store.close()


async def test_a_call_repeated_to_no_effect_is_fed_back_then_fails(tmp_path: Path) -> None:
    model = FunctionModel(lambda req: reply("", tool_call("add", {"a": 1, "b": 1})))
    store, run_id = await run_with(tmp_path, model)
    (task,) = await store.list_tasks(run_id)
    assert task.status == "failed"
    assert "repeated the call add with the same arguments" in (task.error or "")
    # the first call counts; the model is told about the first repeat, then starts afresh
    assert "You already made that call" in model.calls[2].messages[-1].content
    assert [m.role for m in model.calls[3].messages] == ["system", "user"]
    assert len(model.calls) == 4  # one good call + output_retries=2 repeats + 1
    await store.close()


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>',
    'Sure! {"name": "add", "arguments": {"a": 2, "b": 3}}',
])
async def test_text_tool_calls_are_recovered(tmp_path: Path, text: str) -> None:
    model = ScriptedModel([reply(text), reply('{"value": 5}')])
    store, run_id = await run_with(tmp_path, model)
    assert (await store.get_run(run_id)).status == "completed"
    assert model.calls[1].messages[-1].content == "5"
    await store.close()


async def test_text_tool_call_to_unknown_tool_is_fed_back(tmp_path: Path) -> None:
    model = ScriptedModel([reply('<tool_call>{"name": "mul", "arguments": {}}</tool_call>'),
                           reply('{"value": 5}')])
    store, _ = await run_with(tmp_path, model)
    assert "unknown tool(s) ['mul']" in model.calls[1].messages[-1].content
    await store.close()


class Deployer(Role):
    """You deploy."""

    needs_approval = frozenset({"deploy"})

    @tool
    async def deploy(self, ctx: ToolContext, target: str) -> str:
        """Deploy to a target."""
        return f"deployed to {target}"


@pytest.mark.parametrize("approve", [True, False])
async def test_approval_waits_and_survives_restart(tmp_path: Path, approve: bool) -> None:
    def script(req: ModelRequest) -> object:
        last = req.messages[-1]
        if last.role == "tool":
            return f"result: {last.content}"
        return reply("", tool_call("deploy", {"target": "prod"}))

    model = FunctionModel(script)
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    pipe = Pipeline("d", roles=[Deployer()], start=lambda i: [NewTask("deployer", i)],
                    model=model)
    run = await Coordinator(store, pipe).run("ship it")
    assert run.status == "waiting"
    (ap,) = await store.list_approvals(run.id, status="pending")
    assert ap.tool == "deploy" and ap.arguments == {"target": "prod"}
    await store.close()
    # a new store connection and a new coordinator: the approval survived
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    await store.decide_approval(ap.id, approved=approve, by="ops", reason="not on a Friday")
    run = await Coordinator(store, pipe).resume(run.id)
    assert run.status == "completed"
    (task,) = await store.list_tasks(run.id)
    if approve:
        assert task.result == "result: deployed to prod"
    else:
        assert "denied" in task.result and "not on a Friday" in task.result
    assert len(model.calls) == 2  # the first model call was replayed, not repeated
    await store.close()


async def test_usage_cap_stops_resumably(tmp_path: Path) -> None:
    class Capped(Calc):
        """You add."""

        name = "calc"
        max_tokens_per_agent = 1

    model = ScriptedModel([reply("", tool_call("add", {"a": 2, "b": 3})),
                           reply('{"value": 5}')])
    store, run_id = await run_with(tmp_path, model, Capped())
    run = await store.get_run(run_id)
    assert (run.status, run.reason) == ("paused", "budget") and "cap is 1 " in (run.error or "")
    assert len(model.calls) == 1
    Capped.max_tokens_per_agent = 10_000
    run = await Coordinator(store, pipeline(model, Capped())).resume(run_id)
    assert run.status == "completed" and len(model.calls) == 2
    await store.close()


async def test_role_records_all_messages_as_json_safe(tmp_path: Path) -> None:
    model = ScriptedModel([reply('{"value": 7}')])
    store, run_id = await run_with(tmp_path, model)
    events = await store.events(run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    kinds = [e.kind for e in events]
    assert kinds[0] == "run.created" and kinds[-1] == "run.completed"
    json.dumps([e.data for e in events])
    await store.close()


async def test_each_try_after_a_failure_is_another_sample(tmp_path: Path) -> None:
    """A small model asked the same thing at the same sampling repeats itself: after an
    unusable reply the request is warmer and reseeded, and no two tries share a seed."""
    replies = iter(["not json", "still not json", '{"value": 3}'])
    model = FunctionModel(lambda req: next(replies))
    store, run_id = await run_with(tmp_path, model)
    assert (await store.get_run(run_id)).status == "completed"
    first, second, third = (c.settings for c in model.calls)
    assert first.temperature is None and first.seed is None  # a clean try: the role's own
    assert second.temperature is not None and third.temperature is not None
    assert third.temperature > second.temperature
    assert second.seed is not None and third.seed is not None and second.seed != third.seed
    await store.close()


async def test_a_role_may_choose_each_task_s_sampling_from_its_input(tmp_path: Path) -> None:
    """``settings_for``: the settings of one task's calls, from its input (the class's
    ``settings`` when not overridden); a later failure still warms them."""
    from orchestra import ModelSettings

    class Picky(Calc):
        """You add numbers with the add tool, then answer {"value": n}."""

        name = "calc"
        settings = ModelSettings(max_tokens=99)

        def settings_for(self, task_input: object) -> ModelSettings | None:
            return ModelSettings(max_tokens=77, temperature=0.3, seed=len(str(task_input)))

    replies = iter(["not json", '{"value": 5}'])
    model = FunctionModel(lambda req: next(replies))
    store, run_id = await run_with(tmp_path, model, Picky())
    assert (await store.get_run(run_id)).status == "completed"
    first, second = (c.settings for c in model.calls)
    assert (first.max_tokens, first.temperature, first.seed) == (77, 0.3, len("add 2 and 3"))
    assert second.max_tokens == 77 and second.temperature is not None
    assert second.temperature > 0.3 and second.seed != first.seed
    await store.close()
    plain = FunctionModel(lambda req: '{"value": 5}')
    (tmp_path / "plain").mkdir()
    store, _ = await run_with(tmp_path / "plain", plain, type("Plain", (Calc,), {
        "__doc__": Calc.__doc__, "name": "calc", "settings": ModelSettings(max_tokens=99)})())
    assert plain.calls[0].settings.max_tokens == 99
    await store.close()


def test_retry_sampling_keeps_a_role_s_own_settings_until_a_failure() -> None:
    from orchestra.models.base import ModelSettings
    from orchestra.runtime.retry_sampling import retry_settings

    base = ModelSettings(temperature=0.95, max_tokens=100, seed=7)
    assert retry_settings(base, task_id="t", retries=0, failures=0) is base
    later = retry_settings(base, task_id="t", retries=1, failures=0)
    assert later.temperature == 0.95 and later.max_tokens == 100  # only ever raised
    assert later.seed != 7
    # deterministic (a replay asks with the same settings), distinct per try and per task
    assert later == retry_settings(base, task_id="t", retries=1, failures=0)
    seeds = {retry_settings(base, task_id=t, retries=r, failures=f).seed
             for t in "ab" for r in range(3) for f in range(3) if r + f}
    assert len(seeds) == 16


def test_a_new_sample_a_check_asks_for_is_sampled_warm_from_the_first_retry() -> None:
    from orchestra.models.base import ModelSettings
    from orchestra.runtime.retry_sampling import SAMPLE_TEMPERATURE, retry_settings

    greedy = ModelSettings(temperature=0.0)
    revision = retry_settings(greedy, task_id="t", retries=0, failures=1)
    sample = retry_settings(greedy, task_id="t", retries=0, failures=1, sample=True)
    assert revision.temperature is not None and revision.temperature < SAMPLE_TEMPERATURE
    assert sample.temperature == SAMPLE_TEMPERATURE and sample.seed == revision.seed
    later = retry_settings(greedy, task_id="t", retries=0, failures=3, sample=True)
    assert later.temperature is not None and later.temperature > SAMPLE_TEMPERATURE
    assert retry_settings(greedy, task_id="t", retries=0, failures=0, sample=True) is greedy
    # a greedy answer asked cold (its one answer); a sample has none, the cache may serve it
    cold = ModelSettings(temperature=0.0, prompt_cache=False)
    assert retry_settings(cold, task_id="t", retries=0, failures=0) is cold
    assert retry_settings(cold, task_id="t", retries=0, failures=1).prompt_cache is None
