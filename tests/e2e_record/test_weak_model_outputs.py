"""The stock pipeline fed the raw replies of a real weak model (offline, scripted).

Every ``QWEN_*`` text below is verbatim what Qwen2.5-Coder-0.5B-Instruct (Q4_K_M,
llama.cpp's OpenAI-compatible server) wrote in runs of the stock pipeline. The
script replays those replies in an order that walks one module through every way
the model failed, then lets it recover, and checks what the framework told it at
each turn: a reply that is no plan gives way to the plan the spec states (no further
call), code fenced inside a JSON string is read as code (then run against its tests), a
cut-off answer is said to be cut off, a block for another role's file is refused
naming the allowed one, tests that leave out the spec's example are taken as they are
(they are probes), and a copied schema is named as such.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agents.pipeline import build_pipeline
from agents.testsplit import guard_imports, split_tests
from orchestra import Coordinator, FunctionModel, SQLiteBlackboard, reply
from orchestra.models.base import ModelRequest, ModelResponse

# the architect's first reply to the one-module calc spec: a plan, shaped like a call
QWEN_PLAN_AS_PURE_CALL = (
    '{\n  "name": "calc/add.py",\n  "arguments": {\n    "path": "./calc",\n'
    '    "purpose": "A simple module to add two integers",\n    "public_api": ["add"],\n'
    '    "test_path": "./tests"\n  }\n}')
# a tester writing a test file that does not assert the spec's example
WEAK_TESTS = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\n"
              "def test_add():\n    assert add(2, 2) == 4\n```\n")
# the coder's code inside a JSON string, fenced within the string (seen with Qwen 1.5B)
QWEN_CODE_IN_JSON = json.dumps({"module_code": "```python\nclass Add:\n    def add(self, a, b):"
                                               "\n        return a + b\n```",
                                "summary": "add"})
# a reply cut off at the token limit inside its block
CUT_OFF = "calc/add.py\n```python\ndef add(a: int, b: int) -> int:\n    return a +"
# a block for a file the coder does not own
FOREIGN = ("tests/test_add.py\n```python\ndef test_x():\n    pass\n```\n")
# a reviewer copying the output schema it was sent
QWEN_SCHEMA_ECHO = (
    '```json\n{\n  "description": "The reviewer\'s verdict.",\n  "properties": {\n'
    '    "module": {"title":"Module","type":"string"},\n'
    '    "approved": {"title":"Approved","type":"boolean"}}\n  },\n'
    '  "required": ["module", "approved"],\n  "title": "Review",\n'
    '  "type": "object"\n}\n```')

CODE = "def add(a: int, b: int) -> int:\n    return a + b\n"


def _schema_echo_valid() -> str:
    """The same copy, as valid JSON (the model did both)."""
    return QWEN_SCHEMA_ECHO.replace('"boolean"}}\n  },', '"boolean"}\n  },')


def _fenced(path: str, code: str) -> str:
    return f"Here it is.\n\n{path}\n```python\n{code}```\n"


# per role: the replies in turn; a reply may first check the previous feedback
Step = tuple[str | None, Callable[[], ModelResponse]]
SCRIPT: dict[str, list[Step]] = {
    "architect": [(None, lambda: reply(QWEN_PLAN_AS_PURE_CALL))],
    "tester": [(None, lambda: reply(WEAK_TESTS))],
    "coder": [
        # unwrapped and run: a method, so its test fails, and a new sample is asked for
        (None, lambda: reply(QWEN_CODE_IN_JSON)),
        ("passed 0 of its 1 tests", lambda: ModelResponse(CUT_OFF, finish_reason="length")),
        ("cut off at the token limit", lambda: reply(FOREIGN)),
        # two unusable replies in a row: a fresh start, told the last problem briefly
        ("not one of calc/add.py", lambda: reply(_fenced("calc/add.py", CODE))),
    ],
    "reviewer": [
        (None, lambda: reply(_schema_echo_valid())),
        ("You replied with the JSON schema itself", lambda: reply(json.dumps(
            {"module": "calc/add.py", "approved": True, "comments": []}))),
    ],
}


def _role(request: ModelRequest) -> str:
    system = request.messages[0].content
    for role, opening in (("architect", "You are the architect"), ("tester", "You write"),
                          ("reviewer", "You review"), ("coder", "You are a helpful assistant")):
        if system.startswith(opening):
            return role
    raise AssertionError(system[:80])


class Script:
    """Serves SCRIPT in turn per role; records every feedback text it was checked
    against, and the requests themselves."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], str] = {}
        self.turns: dict[str, int] = {}
        self.requests: dict[tuple[str, int], ModelRequest] = {}

    def __call__(self, request: ModelRequest) -> ModelResponse:
        role = _role(request)
        start = max(i for i, m in enumerate(request.messages) if m.name == "task")
        after = request.messages[start + 1:]
        turn = self.turns.get(role, 0)
        self.turns[role] = turn + 1
        self.requests[(role, turn)] = request
        expect, make = SCRIPT[role][turn]
        if expect is not None:
            # started afresh, the note is in the task's own message
            last = (after or request.messages[start:])[-1].content
            assert expect in last, f"{role} turn {turn}: expected {expect!r} in {last!r}"
            self.seen[(role, turn)] = last
        return make()


async def test_weak_model_replies_are_fed_back_and_recovered(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run_input = {"spec": "Build calc/add.py: `add(a: int, b: int) -> int`, so that "
                         "`'1 + 2 = 3'` holds, and its tests.",
                 "workspace": str(workspace), "max_rounds": 3, "review": "always"}
    pipeline = build_pipeline(run_input)
    script = Script()
    model = FunctionModel(script, name="qwen-replies")
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await Coordinator(store, pipeline,
                                models={r.name: model for r in pipeline.roles}).run(run_input)
        tasks = await store.list_tasks(run.id)
        events = await store.events(run.id, limit=10_000)
    finally:
        await store.close()

    assert run.status == "completed", run.error
    assert sorted((t.role, t.status, t.retries) for t in tasks) == [
        ("architect", "completed", 0), ("coder", "completed", 0),
        ("reviewer", "completed", 0), ("tester", "completed", 0)]
    assert (workspace / "calc" / "add.py").read_text() == CODE
    assert (workspace / "tests" / "test_add.py").read_text() == split_tests(
        guard_imports(WEAK_TESTS.split("```python\n")[1].split("```")[0], "calc.add"))
    assert any(e.kind == "module.approved" for e in events)
    feedback = script.seen
    # the plan shaped like a call was no plan: the spec's own was taken, with no retry
    assert script.turns["architect"] == 1 and script.turns["tester"] == 1
    (architect,) = [t for t in tasks if t.role == "architect"]
    assert [m["path"] for m in architect.result["modules"]] == ["calc/add.py"]
    # code fenced inside a JSON string was read as code (and then run against its
    # tests), never refused as "not valid Python (line 1: '```python')"
    assert "not valid Python" not in feedback[("coder", 1)]
    # the function it never wrote is named (not "'NoneType' object is not callable")
    assert "'add' is not defined in module 'calc.add'" in feedback[("coder", 1)]
    # a cut-off answer is said to be cut off, and what to do
    assert "shorter" in feedback[("coder", 2)] and "not valid" not in feedback[("coder", 2)]
    # a block for another role's file names the allowed one
    assert "a block for 'tests/test_add.py'" in feedback[("coder", 3)]
    # an answer that ran and failed its tests is followed by a new sample, asked afresh
    # (what failed said in its note, the failed answer out of view)
    after_run = script.requests[("coder", 1)].messages
    assert not any(m.role == "assistant" and "class Add" in m.content for m in after_run)
    # a copied schema is not answered with the schema again
    assert '"properties"' not in feedback[("reviewer", 1)]
