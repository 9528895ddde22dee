"""A project of eight modules in a package, some built on others, runs end to end with
default settings (issue 46: the same brief failed at the plan with nothing written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_plans import MODULES, PLAN, SPEC
from test_team import role_of

from agents.pipeline import build_pipeline
from orchestra import Coordinator, FunctionModel, SQLiteBlackboard, reply
from orchestra.models.base import ModelRequest, ModelResponse

_WRITES = re.compile(r"this task (?:writes|may change): (\S+?\.py)|^Write `(\S+?\.py)`\. Reply",
                     re.M)
_BY_PATH = {f"textkit/{n}.py": (sig.split("(")[0], uses) for n, sig, uses in MODULES}


def _answer(request: ModelRequest, coded: list[str]) -> ModelResponse:
    role = role_of(request)
    if role == "architect":
        return reply(json.dumps(PLAN))
    path = "".join(_WRITES.findall("\n".join(m.content for m in request.messages))[-1])
    if role == "tester":
        module = next(p for p in _BY_PATH if path == f"tests/test_{Path(p).stem}.py")
        fn = _BY_PATH[module][0]
        tests = (f"from textkit.{Path(module).stem} import {fn}\n\n\ndef test_{fn}():\n"
                 f"    assert {fn}(1, 2) == 2\n")
        return reply(f"{path}\n```python\n{tests}```\n")
    fn, uses = _BY_PATH[path]
    coded.append(path)
    imports = "".join(f"from textkit.{u} import {_BY_PATH[f'textkit/{u}.py'][0]}\n"
                      for u in uses)
    code = f"{imports}\n\ndef {fn}(*args: object) -> int:\n    return len(args)\n"
    return reply(f"{path}\n```python\n{code}```\n")


async def test_eight_modules_are_written_each_after_those_it_builds_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "textkit").mkdir()
    (ws / "textkit/__init__.py").write_text("")
    coded: list[str] = []
    run_input = {"spec": SPEC, "workspace": str(ws), "module_budget": 600}  # the CLI's default
    pipeline = build_pipeline(run_input)
    model = FunctionModel(lambda r: _answer(r, coded), name="scripted")
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await Coordinator(store, pipeline, models={r.name: model for r in pipeline.roles}
                                ).run(run_input)
        assert run.status == "completed", run.error
        approved = await store.search_notes(run.id, tag="approval", limit=50)
    finally:
        await store.close()
    assert sorted(set(coded)) == sorted(_BY_PATH)
    assert len(approved) == 8
    first = {p: coded.index(p) for p in _BY_PATH}
    for path, (_, uses) in _BY_PATH.items():
        assert all(first[f"textkit/{u}.py"] < first[path] for u in uses), path
    assert all((ws / p).is_file() for p in _BY_PATH)


def test_a_module_budget_gives_each_module_its_own_share() -> None:
    """Given no run budget, each module's rounds end by 600 s more than the one before
    (less the run end's reserve); a run budget is shared by the modules instead."""
    from agents.pipeline import RESERVE_S, _ends

    assert _ends(None, 600.0, 100.0, 3) == [100 + 600 * i - RESERVE_S for i in (1, 2, 3)]
    assert _ends(900.0, None, 0.0, 3) == [300.0, 600.0, 900.0]
    assert _ends(None, None, 5.0, 2) == [None, None]


async def test_the_default_budget_is_per_module_so_a_project_gets_second_rounds(
        tmp_path: Path) -> None:
    """Each module's tester task carries its own end: a 7-module project is not held to
    the 450 s one module gets (a share of 64 s each left no second round)."""
    ws = tmp_path / "ws"
    (ws / "textkit").mkdir(parents=True)
    run_input = {"spec": SPEC, "workspace": str(ws), "module_budget": 600}
    pipeline = build_pipeline(run_input)
    model = FunctionModel(lambda r: _answer(r, []), name="scripted")
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await Coordinator(store, pipeline, models={r.name: model for r in pipeline.roles}
                                ).run(run_input)
        tasks = [t for t in await store.list_tasks(run.id) if t.role == "tester"]
    finally:
        await store.close()
    ends = sorted(t.input["until"] - t.input["worked"] for t in tasks)
    assert len(ends) == 8
    assert [round(e) for e in ends] == [600 * i - 150 for i in range(1, 9)]


def test_the_stock_pipeline_carries_its_version(tmp_path: Path) -> None:
    """A change to what its checks journal raises VERSION: runs in flight keep theirs."""
    from agents.pipeline import VERSION

    pipeline = build_pipeline({"spec": SPEC, "workspace": str(tmp_path / "ws")})
    assert pipeline.fingerprint.id.startswith(f"{VERSION}@")
