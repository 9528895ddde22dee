"""The architect's plan is refused only when it is unusable as data (issue 46): test
files and helpers the spec does not name are the plan's own choice, and a reply that is
no plan gives way to the plan the spec states, with no further model call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.roles import Architect, PlanTask
from agents.specplan import complete_plan, package_inits
from agents.workspace import Workspace
from orchestra import Coordinator, FunctionModel, NewTask, Pipeline, SQLiteBlackboard, reply
from orchestra.models.base import ModelRequest, ModelResponse

MODULES = [("tokens", "tokenize(text: str) -> list[str]", []),
           ("normalize", "normalize(tokens: list[str]) -> list[str]", ["tokens"]),
           ("stopwords", "remove_stopwords(tokens: list[str]) -> list[str]", []),
           ("stem", "stem(word: str) -> str", []),
           ("ngrams", "ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]", []),
           ("tfidf", "tfidf(docs: list[list[str]]) -> list[dict[str, float]]",
            ["normalize", "stopwords"]),
           ("similarity", "cosine(a: dict[str, float], b: dict[str, float]) -> float",
            ["tfidf"]),
           ("summary", "summarize(text: str, k: int) -> list[str]", ["tokens", "tfidf"])]
SPEC = ("# textkit\n\nA small text-processing library, the package `textkit/__init__.py` "
        "and eight modules. Put pytest tests for each module under `tests/` (for example "
        "`tests/test_tokens.py`).\n\n" + "\n".join(
            f"## `textkit/{name}.py`\n\n`{sig}`" + (
                " builds on " + ", ".join(f"`textkit/{u}.py`" for u in uses) if uses else "")
            + "\n" for name, sig, uses in MODULES))
# the plan the 1.5B wrote: a test file per module, the spec names only the first
PLAN = {"modules": [{"path": f"textkit/{name}.py", "purpose": name, "public_api": [sig],
                     "test_path": f"tests/test_{name}.py",
                     "uses": [f"textkit/{u}.py" for u in uses]}
                    for name, sig, uses in MODULES]}


async def _plan(tmp_path: Path, replies: list[str], spec: str = SPEC, db: str = "o.db"
                ) -> tuple[dict[str, Any], int]:
    """The architect alone, on ``spec``, answering ``replies`` in turn: its accepted
    plan and the model calls it made."""
    (tmp_path / "ws").mkdir(exist_ok=True)  # a test may put the user's files there first
    workspace = Workspace(tmp_path / "ws")
    calls: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        calls.append(request)
        return reply(replies[len(calls) - 1])

    pipeline = Pipeline("plan", roles=[Architect(workspace)], start=lambda i: [
                            NewTask("architect", PlanTask(spec=i["spec"]).model_dump())],
                        model=FunctionModel(model, name="scripted"))
    store = await SQLiteBlackboard.open(tmp_path / db)
    try:
        run = await Coordinator(store, pipeline).run({"spec": spec})
        assert run.status == "completed", run.error
        (task,) = await store.list_tasks(run.id)
    finally:
        await store.close()
    return task.result, len(calls)


async def test_the_eight_module_brief_plan_is_accepted_as_the_model_made_it(
        tmp_path: Path) -> None:
    """The spec gives `tests/test_tokens.py` "for example"; the plan's tests/test_normalize.py
    and the rest were refused twelve times, and the run failed with nothing written."""
    plan, calls = await _plan(tmp_path, [json.dumps(PLAN)])
    assert calls == 1
    assert [(m["path"], m["test_path"]) for m in plan["modules"]] == [
        (m["path"], m["test_path"]) for m in PLAN["modules"]]


async def test_a_reply_that_is_no_plan_gives_way_to_the_specs_own_at_once(
        tmp_path: Path) -> None:
    plan, calls = await _plan(tmp_path, ["I would write eight modules: first the"])
    assert calls == 1
    assert [m["path"] for m in plan["modules"]] == [f"textkit/{n}.py" for n, _, _ in MODULES]
    assert plan["modules"][0]["test_path"] == "tests/test_tokens.py"
    assert plan["modules"][1]["test_path"] == "tests/test_normalize.py"
    assert plan["modules"][5]["public_api"] == [MODULES[5][1]]


async def test_only_paths_outside_the_workspace_are_dropped(tmp_path: Path) -> None:
    """A module outside the workspace goes (the spec's own takes its place); a helper
    the spec does not name and a test file outside the workspace are kept and mended."""
    spec = "Build `calc/add.py` with `add(a, b)`, tested in `tests/test_add.py`."
    helper = {"path": "calc/util.py", "purpose": "h", "public_api": [],
              "test_path": "/etc/test_util.py"}
    outside = {"path": "../add.py", "purpose": "a", "public_api": [], "test_path": "t.py"}
    plan, calls = await _plan(tmp_path, [json.dumps({"modules": [outside, helper]})], spec)
    assert calls == 1
    assert [(m["path"], m["test_path"]) for m in plan["modules"]] == [
        ("calc/add.py", "tests/test_add.py"), ("calc/util.py", "tests/test_util.py")]


async def test_a_plan_of_nothing_usable_from_a_spec_naming_nothing_is_asked_again(
        tmp_path: Path) -> None:
    bad = {"modules": [{"path": "/abs.py", "purpose": "", "public_api": [],
                        "test_path": "t.py"}]}
    good = {"modules": [{"path": "solution.py", "purpose": "", "public_api": [],
                         "test_path": "test_solution.py"}]}
    plan, calls = await _plan(tmp_path, [json.dumps(bad), json.dumps(good)],
                              "Write a function that adds two numbers.")
    assert calls == 2 and plan["modules"][0]["path"] == "solution.py"


def test_a_completed_plan_lists_each_module_once_with_a_test_file_of_its_own() -> None:
    spec = "Build `a.py` and `b.py`."
    plan = complete_plan({"modules": [
        {"path": "./a.py", "purpose": "", "public_api": [], "test_path": "tests/t.py"},
        {"path": "a.py", "purpose": "", "public_api": [], "test_path": "tests/t.py"},
        {"path": "c.py", "purpose": "", "public_api": [], "test_path": "tests/t.py"}]}, spec)
    assert [(m["path"], m["test_path"]) for m in plan["modules"]] == [
        ("a.py", "tests/t.py"), ("b.py", "tests/test_b.py"), ("c.py", "tests/test_c.py")]
    assert "added b.py" in plan["decisions"][-1]["decision"]


@pytest.mark.parametrize("crowded", [False, True])
async def test_a_workspace_holding_a_module_whose_tests_pass_keeps_it(
        tmp_path: Path, crowded: bool) -> None:
    """`orchestra run --spec` on a workspace part built plans around what is there: the
    module whose tests pass is not written again; the one whose tests fail is. Crowded:
    past the 50 files the architect is shown (sorted before them), it is kept all the same."""
    from test_team import role_of

    from agents.pipeline import build_pipeline

    spec = ("# calc\n\n## `calc/add.py`\n\n`add(a: int, b: int) -> int`\n\n"
            "## `calc/neg.py`\n\n`neg(a: int) -> int`\n")
    ws = tmp_path / "ws"
    if crowded:
        (ws / "a_docs").mkdir(parents=True)
        for i in range(60):
            (ws / f"a_docs/n{i:02}.md").write_text("notes\n")
    for path, text in {
        "calc/add.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
        "tests/test_add.py": "from calc.add import add\n\n\ndef test_add():\n"
                             "    assert add(1, 2) == 3\n",
        "calc/neg.py": "def neg(a: int) -> int:\n    return a\n",
        "tests/test_neg.py": "from calc.neg import neg\n\n\ndef test_neg():\n"
                             "    assert neg(1) == -1\n"}.items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text)
    plan = {"modules": [{"path": f"calc/{n}.py", "purpose": n, "public_api": [sig],
                         "test_path": f"tests/test_{n}.py"}
                        for n, sig in (("add", "add(a: int, b: int) -> int"),
                                       ("neg", "neg(a: int) -> int"))]}
    neg_tests = "from calc.neg import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
    replies = {"architect": [json.dumps(plan)],
               "tester": [f"tests/test_neg.py\n```python\n{neg_tests}```\n"],
               "coder": ["calc/neg.py\n```python\ndef neg(a: int) -> int:\n    return -a\n```\n"],
               "reviewer": []}
    seen: dict[str, int] = {}

    def model(request: ModelRequest) -> ModelResponse:
        role = role_of(request)
        seen[role] = seen.get(role, 0) + 1
        return reply(replies[role][seen[role] - 1])

    run_input = {"spec": spec, "workspace": str(ws), "review": "failures"}
    pipeline = build_pipeline(run_input)
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        fn = FunctionModel(model, name="scripted")
        run = await Coordinator(store, pipeline, models={r.name: fn for r in pipeline.roles}
                                ).run(run_input)
        assert run.status == "completed", run.error
        tasks = await store.list_tasks(run.id)
        notes = await store.search_notes(run.id, tag="kept")
    finally:
        await store.close()
    assert sorted(t.role for t in tasks) == ["architect", "coder", "tester"]
    assert seen == {"architect": 1, "tester": 1, "coder": 1}
    assert (ws / "calc/add.py").read_text() == "def add(a: int, b: int) -> int:\n    return a + b\n"
    assert "return -a" in (ws / "calc/neg.py").read_text()
    assert [n.body for n in notes] == ["calc/add.py is kept as the workspace holds it: its "
                                       "tests pass"]


def test_the_packages_of_a_plans_modules_need_their_init_files() -> None:
    assert package_inits(["tally/money.py", "tally/items.py", "calc.py", "a/b/c.py",
                          "tests/helpers.py", "my-pkg/x.py", "pkg/__init__.py", "pkg/m.py"]
                         ) == ["tally/__init__.py", "a/__init__.py", "a/b/__init__.py"]


async def test_a_package_the_workspace_lacks_gets_an_empty_init_file(tmp_path: Path) -> None:
    """The plan's modules live in textkit/: the workspace gets textkit/__init__.py, empty
    (a user expects it; without it textkit imports as a namespace package). Run again
    (a resumed step), it writes nothing; a user's own is never replaced."""
    made = tmp_path / "ws/textkit/__init__.py"
    plan, _ = await _plan(tmp_path, [json.dumps(PLAN)])
    assert made.read_text() == ""
    assert plan["files"] == {"textkit/__init__.py": ""}  # recorded: a fork rebuilds it
    made.write_text(USERS)  # now as a user has it
    plan, _ = await _plan(tmp_path, [json.dumps(PLAN)], db="again.db")
    assert made.read_text() == USERS and not plan.get("files")
    assert sorted(p.name for p in made.parent.iterdir()) == ["__init__.py"]


USERS = '"""The textkit of its user."""\n'
