"""The software pipeline: architect plans, coders build, reviewers judge, in rounds.

Routes turn each role's output into the next work, atomically with the task's
completion: the plan fans out into one coder task per module; a coder's result
becomes a review task; a rejected review goes back to the coder with its
comments, up to ``max_rounds`` rounds, after which the module is marked failed
(with the reason) instead of looping forever.

Run input: ``{"spec": str, "workspace": str, "max_rounds": int, "model": spec|None}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.roles import Architect, Coder, CodeResult, ProjectPlan, Review, Reviewer
from agents.workspace import Workspace
from orchestra import NewHandoff, NewNote, NewTask, Pipeline, Task, UserError, fan_out
from orchestra.store import Writes

PIPELINE_REF = "agents.pipeline:build_pipeline"
DEFAULT_MAX_ROUNDS = 3


def _plan_route(plan: ProjectPlan, task: Task, writes: Writes) -> None:
    writes.plans.append(plan.model_dump(mode="json"))
    for d in plan.decisions:
        writes.notes.append(NewNote(f"{d.decision} — because {d.reason}", ("decision",)))
    fan_out(
        writes,
        "coder",
        ({"module": m.model_dump(mode="json"), "round": 1, "spec": task.input.get("spec")}
         for m in plan.modules),
        note="implement this module and its tests",
        key=lambda item: f"code:{item['module']['path']}:1",
    )


def _code_route(result: CodeResult, task: Task, writes: Writes) -> None:
    payload = {
        "module": task.input["module"],
        "round": task.input["round"],
        "files": result.written(task.input),
        "summary": result.summary,
        "spec": task.input.get("spec"),
    }
    writes.handoffs.append(
        NewHandoff(
            "reviewer",
            payload,
            note=f"round {payload['round']}: please review",
            key=f"review:{task.input['module']['path']}:{payload['round']}",
        )
    )


def _review_route(max_rounds: int) -> Any:
    def route(review: Review, task: Task, writes: Writes) -> None:
        module = task.input["module"]
        path, rnd = module["path"], int(task.input["round"])
        if review.approved:
            writes.notes.append(NewNote(f"approved {path} in round {rnd}", ("approval", path)))
            writes.events.append(("module.approved", {"module": path, "round": rnd}))
        elif rnd >= max_rounds:
            reason = "; ".join(review.comments) or "no reason given"
            writes.notes.append(
                NewNote(f"{path} failed after {rnd} review rounds: {reason}", ("failed", path))
            )
            writes.events.append(
                ("module.failed", {"module": path, "rounds": rnd, "reason": reason[:500]})
            )
        else:
            writes.handoffs.append(
                NewHandoff(
                    "coder",
                    {"module": module, "round": rnd + 1, "comments": review.comments,
                     "spec": task.input.get("spec")},
                    note=f"changes requested in round {rnd}",
                    key=f"code:{path}:{rnd + 1}",
                )
            )

    return route


def build_pipeline(run_input: Any) -> Pipeline:
    """The pipeline for one run input (also how any process rebuilds it to resume)."""
    if not isinstance(run_input, dict) or "spec" not in run_input or "workspace" not in run_input:
        raise UserError("the software pipeline needs input {'spec': <text>, 'workspace': <dir>}")
    workspace = Workspace(Path(run_input["workspace"]))
    max_rounds = int(run_input.get("max_rounds") or DEFAULT_MAX_ROUNDS)
    return Pipeline(
        "software",
        roles=[Architect(workspace), Coder(workspace), Reviewer(workspace)],
        # the files there are now, in the task's input: a small model otherwise keeps
        # reading the path it is to create (seen: read_file of the spec's module, thrice)
        start=lambda inp: [NewTask("architect", {"spec": inp["spec"],
                                                 "workspace_files": workspace.existing_files()},
                                   key="plan")],
        routes={
            "architect": _plan_route,
            "coder": _code_route,
            "reviewer": _review_route(max_rounds),
        },
        ref=PIPELINE_REF,
        fail_run_on_task_failure=True,
    )
