"""The coder may answer with the code itself: one JSON object, no tool calls.

A small model writes a module and its tests as one structured reply far more reliably
than as a sequence of tool calls (Qwen2.5-Coder-0.5B wrote the module's code into the
test path, then the same call again). The answer's code is checked as Python, written
at the task's own paths (whatever path the model typed), and reviewed like any files.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.pipeline import build_pipeline
from orchestra import Coordinator, FunctionModel, SQLiteBlackboard, reply
from orchestra.models.base import ModelRequest, ModelResponse

PLAN = {"modules": [{"path": "calc/add.py", "purpose": "add two integers",
                     "public_api": ["add(a: int, b: int) -> int"],
                     "test_path": "tests/test_add.py"}]}
CODE = "def add(a: int, b: int) -> int:\n    return a + b\n"
TESTS = "from calc.add import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
BAD = 'def add(a, b):\n    return f"{a if a else "zero"}"\n'


def _role(request: ModelRequest) -> str:
    system = request.messages[0].content
    if "architect" in system.split(".")[0]:
        return "architect"
    return "reviewer" if system.startswith("You review") else "coder"


async def test_a_coder_answer_with_code_is_checked_written_and_reviewed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run_input = {"spec": "Build calc/add.py: add(a, b), tested in tests/test_add.py.",
                 "workspace": str(workspace), "max_rounds": 2}
    coder_turns: list[str] = []
    reviewer_inputs: list[dict[str, object]] = []

    def model(request: ModelRequest) -> ModelResponse:
        role = _role(request)
        if role == "architect":
            return reply(json.dumps(PLAN))
        if role == "reviewer":
            task = next(m for m in reversed(request.messages) if m.name == "task")
            reviewer_inputs.append(json.loads(task.content))
            return reply(json.dumps({"module": "calc/add.py", "approved": True}))
        coder_turns.append(request.messages[-1].content)
        code = BAD if len(coder_turns) == 1 else CODE
        # the model names the module loosely ("calc"): the task's paths are used
        return reply(json.dumps({"module": "calc", "module_code": code, "test_code": TESTS,
                                 "summary": "add and its test"}))

    pipeline = build_pipeline(run_input)
    fn = FunctionModel(model, name="coder-with-code")
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await Coordinator(store, pipeline,
                                models={r.name: fn for r in pipeline.roles}).run(run_input)
        coder = [t for t in await store.list_tasks(run.id) if t.role == "coder"]
    finally:
        await store.close()
    assert run.status == "completed", run.error
    # invalid code is refused before it is written, with the line and what to do
    assert len(coder_turns) == 2
    feedback = coder_turns[1]
    assert "module_code is not valid Python (line 2:" in feedback
    assert "'return f\"{a if a else \"zero\"}\"'" in feedback or "quote" in feedback
    assert (workspace / "calc" / "add.py").read_text() == CODE
    assert (workspace / "tests" / "test_add.py").read_text() == TESTS
    # the review task names both files, and the approval was backed by a real test run
    assert reviewer_inputs[0]["files"] == ["calc/add.py", "tests/test_add.py"]
    assert coder[0].result is not None and coder[0].result["module_code"] == CODE


async def test_an_answer_with_neither_code_nor_files_is_refused(tmp_path: Path) -> None:
    from agents.roles import CodeResult

    result = CodeResult(module="calc/add.py", module_code="", test_code=" ", summary="did it")
    assert result.written({"module": PLAN["modules"][0]}) == []  # type: ignore[index]
    with_code = CodeResult(module="x", module_code=CODE, test_code="", summary="s",
                           files=["extra.txt"])
    assert with_code.written({"module": PLAN["modules"][0]}) == [  # type: ignore[index]
        "extra.txt", "calc/add.py"]


def test_the_architect_is_told_which_files_exist(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full" / "kata").mkdir(parents=True)
    (tmp_path / "full" / "kata" / "old.py").write_text("x = 1\n")
    for name, expect in (("empty", []), ("full", ["kata/old.py"])):
        run_input = {"spec": "s", "workspace": str(tmp_path / name)}
        (first,) = build_pipeline(run_input).start(run_input)
        assert first.role == "architect"
        assert first.input == {"spec": "s", "workspace_files": expect}


async def test_a_rejection_without_comments_is_sent_back(tmp_path: Path) -> None:
    from agents.roles import Review, Reviewer
    from agents.workspace import Workspace
    from orchestra import ModelRetry, ToolContext

    reviewer = Reviewer(Workspace(tmp_path))
    ctx = ToolContext(run_id="r", task_id="t", agent_id="r/reviewer", role="reviewer",
                      step=1, idempotency_key="k", board=None,  # type: ignore[arg-type]
                      task_input={"module": PLAN["modules"][0]})  # type: ignore[index]
    import pytest

    with pytest.raises(ModelRetry, match="without saying which"):
        await reviewer.check_output(ctx, Review(module="calc/add.py", approved=False,
                                                comments=["  "]))
    await reviewer.check_output(ctx, Review(module="calc/add.py", approved=False,
                                            comments=["add(1, 2) returns 4; return a + b"]))


def test_code_must_be_a_module_or_a_test_file_not_just_python() -> None:
    from agents.checks import code_problem

    # a path typed where code belongs parses (as a division): it is still refused
    assert "defines no test function" in code_problem("tests/test_add.py",
                                                      "tests/test_add.py", tests=True)
    assert "defines no function or class" in code_problem("calc/add.py", "calc/add.py",
                                                          tests=False)
    assert code_problem("tests/test_add.py", TESTS, tests=True) == ""
    assert code_problem("calc/add.py", CODE, tests=False) == ""
    assert "not valid Python" in code_problem("calc/add.py", "def f(:", tests=False)
