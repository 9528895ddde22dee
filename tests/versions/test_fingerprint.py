"""A pipeline's version (``orchestra.coordinator.versions``): what changes it, what does
not, that it is the same in another process, and that a run records it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pydantic

from orchestra import (
    Coordinator,
    FunctionModel,
    NewTask,
    On,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
)
from orchestra.tools import ToolContext, tool


class Writer(Role):
    """You write."""

    name = "writer"
    output = str


class Reworded(Role):
    """You write, briefly."""

    name = "writer"
    output = str


class Brief(pydantic.BaseModel):
    text: str


class Typed(Role):
    """You write."""

    name = "writer"
    output = Brief


class WithTool(Role):
    """You write."""

    name = "writer"
    output = str

    @tool
    async def count(self, ctx: ToolContext, text: str) -> int:
        """How many characters ``text`` has."""
        return len(text)


class Critic(Role):
    """You review."""

    name = "critic"
    output = str


def _model() -> FunctionModel:
    return FunctionModel(lambda _r: reply("ok"))


def _pipeline(writer: Role, *, version: str | None = None, route: bool = False) -> Pipeline:
    return Pipeline("p", roles=[writer, Critic()], model=_model(), version=version,
                    start=lambda inp: [NewTask("writer", inp)],
                    routes={"writer": Critic} if route else {})


def test_the_same_declaration_has_the_same_version_and_each_change_another() -> None:
    base = _pipeline(Writer()).fingerprint
    assert _pipeline(Writer()).fingerprint == base
    changed = {
        "instructions": _pipeline(Reworded()).fingerprint,
        "output": _pipeline(Typed()).fingerprint,
        "tools": _pipeline(WithTool()).fingerprint,
        "route": _pipeline(Writer(), route=True).fingerprint,
        "label": _pipeline(Writer(), version="2").fingerprint,
    }
    assert len({v.id for v in changed.values()} | {base.id}) == len(changed) + 1
    # each change shows in the part it touched, and only there
    assert [k for k in base.parts if base.parts[k] != changed["instructions"].parts[k]] == \
        ["role:writer:instructions"]
    assert set(changed["route"].parts) - set(base.parts) == {"route:writer"}
    assert changed["label"].id.startswith("2@") and changed["label"].parts == base.parts


class Reader(Role[Brief, str]):
    """You read briefs."""

    name = "critic"
    consumes = [On(Brief)]


def _unapproved(brief: Brief) -> bool:
    return not brief.text


class PickyReader(Reader):
    """You read briefs."""

    name = "critic"
    consumes = [On(Brief, where=_unapproved)]


def test_what_a_role_consumes_and_how_the_board_ends_are_in_the_version() -> None:
    def with_reader(reader: Role, **board: object) -> Pipeline:
        return Pipeline("p", roles=[Writer(), reader], model=_model(),
                        start=lambda inp: [NewTask("writer", inp)], **board)  # type: ignore[arg-type]

    base = with_reader(Reader()).fingerprint
    assert with_reader(Reader()).fingerprint == base
    picky = with_reader(PickyReader()).fingerprint
    assert [k for k in base.parts if base.parts[k] != picky.parts[k]] == ["role:critic:consumes"]
    done = with_reader(Reader(), done=lambda board: True).fingerprint
    assert [k for k in base.parts if base.parts[k] != done.parts[k]] == ["pipeline"]


def test_a_pipeline_computes_its_version_once() -> None:
    pipeline = _pipeline(Writer())
    assert pipeline.fingerprint is pipeline.fingerprint


def test_the_version_is_the_same_in_another_process() -> None:
    here = _pipeline(Writer(), version="1", route=True).fingerprint.id
    code = ("from tests.versions.test_fingerprint import Writer, _pipeline; "
            "print(_pipeline(Writer(), version='1', route=True).fingerprint.id)")
    root = Path(__file__).resolve().parents[2]
    for seed in ("0", "1"):  # another hash seed: no dict or set order leaks in
        out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                             text=True, check=True, env={"PYTHONHASHSEED": seed,
                                                         "PATH": "/usr/bin:/bin"})
        assert out.stdout.strip() == here


async def test_a_run_records_its_version_and_a_fork_keeps_it(tmp_path: Path) -> None:
    pipeline = _pipeline(Writer(), version="1")
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run = await Coordinator(store, pipeline).run({"x": 1})
        assert run.status == "completed" and run.version == pipeline.fingerprint.id
        assert (await store.get_run(run.id)).version == pipeline.fingerprint.id
        created = (await store.events(run.id, kinds=("run.created",)))[0]
        assert isinstance(created.data, dict)
        assert created.data["version"]["parts"] == dict(pipeline.fingerprint.parts)
        fork = await store.fork_run(run.id, 1)
        assert fork.version == run.version
