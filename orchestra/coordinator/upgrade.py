"""Moving a run to the code at hand, on purpose and checked (``orchestra upgrade RUN``).

A run keeps the version it started with (``versions``). To move it, its journal is
walked against the pipeline this process builds, calling no model and no tool: every
completed step, task by task in the order they were made, is asked whether the new
pipeline would ask it in the same form. A step is asked by its role, so it would be asked
otherwise when a part of that role that shapes the request changed (its instructions,
schemas, tools, answer format, model or settings, compaction, MCP servers), or the role
is gone; a completed task's route already posted its work, so a changed route differs
there. The parts of the run's own version are those its ``run.created`` (or last
``run.upgraded``) event recorded. If nothing differs, the run moves (one transaction, with
a ``run.upgraded`` event, and only while no process serves it); otherwise the first
differing step is named and nothing moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from orchestra._errors import UserError
from orchestra._types import Run, Step, Task
from orchestra.coordinator.versions import Version
from orchestra.store.protocol import EventLog, RunStore, StepJournal, TaskQueue
from orchestra.store.versions import UPGRADED_EVENT

__all__ = ["Difference", "UpgradeCheck", "check_upgrade", "upgrade_run"]


class UpgradeStore(RunStore, StepJournal, EventLog, TaskQueue, Protocol):
    """What an upgrade reads (the run, its tasks, their journals, its events) and writes
    (the move)."""


@dataclass(frozen=True)
class Difference:
    """The first completed step the new pipeline would ask otherwise, and why."""

    task_id: str
    role: str
    step: int | None
    """The step's number; None for the task's route (run once the task completed)."""
    what: str
    """The step as journaled (``model model``, ``tool search``), or ``route``."""
    parts: tuple[str, ...]
    """The changed parts that reach it (``instructions``, ``tools``, ``route``...)."""

    def __str__(self) -> str:
        at = f"step {self.step} ({self.what})" if self.step is not None else "its route"
        return (f"task {self.task_id} ({self.role}) {at}: {', '.join(self.parts)} "
                "changed")


@dataclass(frozen=True)
class UpgradeCheck:
    """What the walk of a run's journal found."""

    run_id: str
    old: str
    new: str
    checked: int
    """Completed steps (and routes) found the same, before the first difference."""
    difference: Difference | None

    @property
    def moves(self) -> bool:
        return self.difference is None


def first_difference(tasks: Sequence[Task], steps: Mapping[str, Sequence[Step]],
                     old: Mapping[str, str], new: Mapping[str, str]
                     ) -> tuple[int, Difference | None]:
    """Walk the completed steps of ``tasks`` (in order) against the parts ``old`` and
    ``new``: how many are the same, and the first that is not (pure)."""
    shared = ("pipeline",) if old.get("pipeline") != new.get("pipeline") else ()
    checked = 0
    for task in tasks:
        changed = _changed(old, new, f"role:{task.role}:") + shared
        if not any(k.startswith(f"role:{task.role}:") for k in new):
            changed = ("role removed",)
        for step in steps.get(task.id, ()):
            if step.status != "completed":
                continue
            if changed:
                return checked, Difference(task.id, task.role, step.step,
                                           f"{step.kind} {step.name}", changed)
            checked += 1
        if task.status == "completed":
            key = f"route:{task.role}"
            if old.get(key) != new.get(key):
                return checked, Difference(task.id, task.role, None, "route", ("route",))
            checked += 1
    return checked, None


def _changed(old: Mapping[str, str], new: Mapping[str, str], prefix: str) -> tuple[str, ...]:
    keys = sorted({k for k in (*old, *new) if k.startswith(prefix)})
    return tuple(k.removeprefix(prefix) for k in keys if old.get(k) != new.get(k))


async def recorded_parts(events: EventLog, run: Run) -> Mapping[str, str]:
    """The parts of ``run``'s version, as its last ``run.created``/``run.upgraded`` says."""
    parts: Mapping[str, str] | None = None
    after = 0
    while True:
        batch = await events.events(run.id, starting_after=after, limit=500,
                                    kinds=("run.created", UPGRADED_EVENT))
        for e in batch:
            data: Any = e.data if isinstance(e.data, dict) else {}
            manifest = data.get("version") if e.kind == "run.created" else data.get("manifest")
            if isinstance(manifest, dict) and isinstance(manifest.get("parts"), dict):
                parts = manifest["parts"]
        if len(batch) < 500:
            break
        after = batch[-1].seq
    if parts is None:
        raise UserError(f"run {run.id} recorded no version parts (it was made before runs "
                        "recorded their version, and any worker takes it): there is nothing "
                        "to upgrade")
    return parts


async def check_upgrade(store: UpgradeStore, run: Run, version: Version, *,
                        patched: bool = False) -> UpgradeCheck:
    """Walk ``run``'s journal against ``version`` (reads only; calls nothing). With
    ``patched``, its completed steps are compared with what ``version`` asks before its
    roles' patches (every ``patched(name)`` False, as the runtime answers for a task
    journaled before them), so differences that all sit behind patches pass."""
    old = await recorded_parts(store, run)
    tasks = await store.list_tasks(run.id)
    steps = {t.id: await store.get_steps(t.id, t.retries) for t in tasks}
    checked, difference = first_difference(tasks, steps, old,
                                           version.unpatched if patched else version.parts)
    return UpgradeCheck(run.id, run.version, version.id, checked, difference)


async def upgrade_run(store: UpgradeStore, run_id: str, version: Version, *,
                      patched: bool = False) -> tuple[UpgradeCheck, Run]:
    """Check ``run_id`` against ``version`` and move it if nothing differs (``patched``:
    see :func:`check_upgrade`); the check and the run as it is after (unmoved when the
    check found a difference)."""
    run = await store.get_run(run_id)
    if run.status in ("completed", "cancelled"):
        raise UserError(f"run {run_id} is {run.status}: a finished run keeps its version "
                        f"({run.version or 'none recorded'}); fork it to run it again")
    check = await check_upgrade(store, run, version, patched=patched)
    if not check.moves or run.version == version.id:
        return check, run
    moved = await store.move_version(run_id, run.version, version.id, {
        "from": run.version, "to": version.id, "checked": check.checked, "patched": patched,
        "manifest": version.manifest()})
    return check, moved
