"""A new sample a check asks for is asked as the role says (``render_sample``), not as the
task is: a revision round's task shows the answer it revises, and a small model copies
it (seen: a 1.5B at temperature 0.7, reseeded, sent its module back byte for byte)."""

from __future__ import annotations

import asyncio
from typing import Any

from test_answers import _sampled

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRetry,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
)
from orchestra.answers import FileBlocks
from orchestra.models.base import ModelRequest, ModelResponse

PATH = "kata/roman.py"
CODE = "def to_roman(n: int) -> str:\n    return 'I' * n\n"
BAD = f"{PATH}\n```python\ndef to_roman(n):\n    return ''\n```"
BAD2 = f"{PATH}\n```python\ndef to_roman(n):\n    return 'V'\n```"
GOOD = f"{PATH}\n```python\n{CODE}```"


class Reviser(Role):
    """Revise the file."""

    answer = FileBlocks(paths=lambda _: [PATH])

    def render_task(self, task_input: Any) -> str:
        return f"Revise this module:\n{task_input['current']}"

    def render_sample(self, task_input: Any) -> str | None:
        return "Write the module from the start." if task_input["current"] else None

    async def check_output(self, ctx: Any, output: Any) -> None:
        if "return 'I' * n" in output.files[PATH]:
            return
        if len(ctx.rejections) == 1:  # after a sample, a revision: still the sample's view
            raise ModelRetry("Still wrong: fix it.")
        raise ModelRetry("Write it again, a new version.", fresh=True)


def _pipeline() -> Pipeline:
    return Pipeline("p", roles=[Reviser()], start=lambda inp: [NewTask("reviser", inp)])


async def test_a_new_sample_is_asked_without_the_answer_in_view(tmp_path: Any) -> None:
    run, requests = await _sampled(tmp_path, Reviser(), [BAD, BAD2, GOOD],
                                   {"current": "def to_roman(n): return 'X'"})
    assert run.status == "completed", run.error
    assert "Revise this module:\ndef to_roman(n): return 'X'" in requests[0].messages[-1].content
    sample = requests[1].messages
    assert [m.role for m in sample] == ["system", "user"]
    assert sample[-1].content.startswith("Write the module from the start.")
    assert sample[-1].content.endswith("# Note\n\nWrite it again, a new version.")
    assert "return 'X'" not in sample[-1].content  # the module revised is out of view
    # a revision of the sample keeps the sample's view: its request, its answer, the note
    revision = requests[2].messages
    assert revision[1].content == sample[-1].content
    assert [m.content for m in revision[2:]] == [BAD2, "Still wrong: fix it."]


async def test_with_no_render_sample_a_sample_is_the_task_again(tmp_path: Any) -> None:
    run, requests = await _sampled(tmp_path, Reviser(), [BAD, GOOD], {"current": ""})
    assert run.status == "completed", run.error
    assert requests[1].messages[-1].content.startswith("Revise this module:\n")


async def test_a_resumed_task_asks_its_sample_as_it_was_asked(tmp_path: Any) -> None:
    """Stopped while the model answers the revision after a sample, and resumed: the
    completed calls replay, and the next request is the one the first process made."""
    first: list[ModelRequest] = []
    asked = asyncio.Event()

    async def stalls(request: ModelRequest) -> ModelResponse:
        first.append(request)
        if len(first) == 3:
            asked.set()
            await asyncio.Event().wait()  # stopped here
        return ModelResponse([BAD, BAD2][len(first) - 1])

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        coordinator = Coordinator(store, _pipeline(), models={"reviser": FunctionModel(stalls)})
        running = asyncio.ensure_future(coordinator.run({"current": "def to_roman(n): 1"},
                                                        run_id="r1"))
        await asyncio.wait_for(asked.wait(), 30)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        again: list[ModelRequest] = []

        def answers(request: ModelRequest) -> ModelResponse:
            again.append(request)
            return ModelResponse(GOOD)

        run = await Coordinator(store, _pipeline(), models={
            "reviser": FunctionModel(answers)}).resume("r1")
    finally:
        await store.close()
    assert run.status == "completed", run.error
    assert [r.messages for r in again] == [first[2].messages]
    assert first[1].messages[-1].content.startswith("Write the module from the start.")
