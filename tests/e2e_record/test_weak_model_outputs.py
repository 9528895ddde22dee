"""The stock pipeline fed the raw replies of a real weak model (offline, scripted).

Every ``QWEN_*`` text below is verbatim what Qwen2.5-Coder-0.5B-Instruct (Q4_K_M,
llama.cpp's OpenAI-compatible server) wrote in runs of the stock pipeline. The
script replays those replies in an order that walks one module through every way
the model failed, then lets it recover, and checks what the framework told it at
each turn: an answer is not mistaken for a tool call, a JSON error points inside
the fenced block, a copied schema is named as such, a text tool call runs, and an
approval of a module whose tests were never written is fed back (not a crash).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.pipeline import build_pipeline
from orchestra import Coordinator, FunctionModel, SQLiteBlackboard, reply, tool_call
from orchestra.models.base import ModelRequest, ModelResponse

# the architect's first replies to the one-module calc spec: a plan, shaped like a call
QWEN_PLAN_AS_CALL = (
    '```json\n{\n  "name": "calc/add.py",\n  "arguments": {\n    "path": "./calc/add.py",\n'
    '    "purpose": "Build a module named \'calc/add.py\' with a single function \'add(a: int, '
    'b: int) -> int\'. This function returns the sum of two integers."\n  },\n'
    '  "public_api": "add",\n  "test_path": "./tests/test_add.py"\n}\n```')
# the same, with the module spec wrapped whole in "arguments" (another seed)
QWEN_PLAN_AS_PURE_CALL = (
    '{\n  "name": "calc/add.py",\n  "arguments": {\n    "path": "./calc",\n'
    '    "purpose": "A simple module to add two integers",\n    "public_api": ["add"],\n'
    '    "test_path": "./tests"\n  }\n}')
# a coder calling a function of the module it should write, as if it were a tool
QWEN_INVENTED_CALL = '```json\n{\n  "name": "slugify",\n  "arguments": {\n    "text": "Hello, World!"\n  }\n}\n```'  # noqa: E501
# a coder's text tool call (the tool exists; the test file does not yet)
QWEN_TEXT_RUN_TESTS = '```json\n{\n  "name": "run_tests",\n  "arguments": {\n    "path": "tests/test_add.py"\n  }\n}\n```'  # noqa: E501
# a coder copying the output schema it was sent, with one brace too many
QWEN_SCHEMA_ECHO = (
    '```json\n{\n  "description": "What the coder did for one module.",\n  "properties": {\n'
    '    "module": {"description":"the module path","title":"Module","type":"string"},\n'
    '    "files": {"description":"files written or changed","items":{"type":"string"},'
    '"title":"Files","type":"array"},\n    "summary": {"title":"Summary","type":"string"}}\n'
    '  },\n  "required": ["module", "files", "summary"],\n  "title": "CodeResult",\n'
    '  "type": "object"\n}\n```')

PLAN = {"modules": [{"path": "calc/add.py", "purpose": "add two integers",
                     "public_api": ["add(a: int, b: int) -> int"],
                     "test_path": "tests/test_add.py"}]}
CODE = "def add(a: int, b: int) -> int:\n    return a + b\n"
TESTS = ("from calc.add import add\n\n\ndef test_add() -> None:\n"
         "    assert add(1, 2) == 3\n    assert add(-1, 1) == 0\n")


def _schema_echo_valid() -> str:
    """The same copy, as valid JSON (the model did both)."""
    return QWEN_SCHEMA_ECHO.replace('"string"}}\n  },', '"string"}\n  },')


def _claim(summary: str) -> str:
    return json.dumps({"module": "calc/add.py", "module_code": "", "test_code": "",
                       "files": ["calc/add.py", "tests/test_add.py"],
                       "summary": summary})


# per (role, round): the replies in turn; a reply may first check the previous feedback
Step = tuple[str | None, Callable[[], ModelResponse]]
SCRIPT: dict[tuple[str, int], list[Step]] = {
    ("architect", 1): [
        (None, lambda: reply(QWEN_PLAN_AS_PURE_CALL)),
        ("does not match the ProjectPlan schema", lambda: reply(QWEN_PLAN_AS_CALL)),
        ("does not match the ProjectPlan schema", lambda: reply(json.dumps(PLAN))),
    ],
    ("coder", 1): [
        (None, lambda: reply(QWEN_INVENTED_CALL)),
        ("unknown tool(s) ['slugify']", lambda: reply(QWEN_TEXT_RUN_TESTS)),
        # two unusable turns in a row: the model starts afresh, told the last problem
        ("'tests/test_add.py' does not exist", lambda: reply(QWEN_SCHEMA_ECHO)),
        ("Extra data at line 7 column 4", lambda: reply(_claim("implemented add"))),  # a lie
        # the lie is refused (no file was written) and the attempt's retries are spent:
        # the task's second attempt starts from its input alone
        (None, lambda: reply(json.dumps({"name": "write_file", "arguments": {
            "path": "calc/add.py", "content": CODE}}))),
        ("\"sha256\"", lambda: reply("", tool_call("write_file", {"path": "tests/test_add.py",
                                                               "content": TESTS}))),
        ("\"sha256\"", lambda: reply(_claim("wrote add and its tests"))),
    ],
    ("reviewer", 1): [
        (None, lambda: reply(_schema_echo_valid())),
        ("You replied with the JSON schema itself", lambda: reply(QWEN_TEXT_RUN_TESTS)),
        ('"passed": true', lambda: reply(json.dumps(
            {"module": "calc/add.py", "approved": True, "comments": []}))),
    ],
}


def _role(request: ModelRequest) -> str:
    system = request.messages[0].content
    if "architect" in system.split(".")[0]:
        return "architect"
    return "reviewer" if system.startswith("You review") else "coder"


class Script:
    """Serves SCRIPT in turn per (role, round); records every feedback text it was
    checked against, and the requests themselves."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int, str]] = []
        self.turns: dict[tuple[str, int], int] = {}
        self.requests: dict[tuple[str, int, int], ModelRequest] = {}

    def __call__(self, request: ModelRequest) -> ModelResponse:
        role = _role(request)
        start = max(i for i, m in enumerate(request.messages) if m.name == "task")
        task: dict[str, Any] = json.loads(request.messages[start].content)
        after = request.messages[start + 1:]
        rnd = int(task.get("round", 1))
        turn = self.turns.get((role, rnd), 0)
        self.turns[(role, rnd)] = turn + 1
        self.requests[(role, rnd, turn)] = request
        expect, make = SCRIPT[(role, rnd)][turn]
        if expect is not None:
            last = after[-1].content
            assert expect in last, f"{role} turn {turn}: expected {expect!r} in {last!r}"
            self.seen.append((role, rnd, turn, last))
        return make()


async def test_weak_model_replies_are_fed_back_and_recovered(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run_input = {"spec": "Build calc/add.py: add(a, b) and its tests.",
                 "workspace": str(workspace), "max_rounds": 3}
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
        ("architect", "completed", 0), ("coder", "completed", 1),
        ("reviewer", "completed", 0)]
    assert (workspace / "calc" / "add.py").read_text() == CODE
    assert any(e.kind == "module.approved" for e in events)
    feedback = {(role, rnd, turn): text for role, rnd, turn, text in script.seen}
    # the plan shaped like a call was not sent back as "unknown tool"
    assert "unknown tool" not in feedback[("architect", 1, 1)] + feedback[("architect", 1, 2)]
    # an invented call is told what the tools are, and how to give the answer
    assert "final answer itself, not as a tool call" in feedback[("coder", 1, 1)]
    # the JSON error points inside the fence, not at its first character
    assert "line 1 column 1" not in feedback[("coder", 1, 3)]
    # after two unusable turns the model sees its task and the last problem, nothing else
    fresh = script.requests[("coder", 1, 2)].messages
    assert [m.role for m in fresh] == ["system", "user", "user"]
    assert "does not exist" in fresh[-1].content and "\n" not in fresh[-1].content
    # the second attempt sees none of the first attempt's exchange
    retry = script.requests[("coder", 1, 4)].messages
    assert [m.role for m in retry] == ["system", "user"] and retry[1].name == "task"
    # a copied schema is not answered with the schema again
    assert '"properties"' not in feedback[("reviewer", 1, 1)]
