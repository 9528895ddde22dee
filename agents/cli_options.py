"""The software pipeline's command line: ``orchestra run --spec FILE --workspace DIR``.

Declared here, read by the CLI through ``agents.pipeline:build_pipeline``
(``declare_options``), which knows nothing of specs or workspaces.
"""

from __future__ import annotations

from typing import Any

from agents.pipeline import DEFAULT_MAX_ROUNDS, MODULE_BUDGET_S, REVIEWS
from orchestra.coordinator.pipeline_options import Option, OptionValues, PipelineOptions


def run_input(values: OptionValues) -> dict[str, Any]:
    """The pipeline's input: the spec's text, the workspace, and the time budget."""
    out: dict[str, Any] = {"spec": values.path("spec").read_text(),
                           "max_rounds": values.integer("max-rounds"),
                           "review": values.text("review"),
                           "workspace": str(values.path("workspace"))}
    if values.get("time-budget") is None:  # not given: each module the plan has brings its share
        out["module_budget"] = MODULE_BUDGET_S
    elif budget := values.number("time-budget"):
        out["time_budget"] = budget
    return out


OPTIONS = PipelineOptions((
    Option("spec", "file", required=True, help="the spec file: what to build"),
    Option("workspace", "dir", required=True, help="the directory the agents write to"),
    Option("max-rounds", "int", default=DEFAULT_MAX_ROUNDS, minimum=1,
           help="review rounds per module"),
    Option("time-budget", "float", minimum=0, metavar="SECONDS",
           help=f"after this much working time (a resumed run goes on from where it was) no "
                f"module starts another round: each keeps its best code so the run ends "
                f"(default {MODULE_BUDGET_S:g} per module the plan has; 0: no budget)"),
    Option("review", choices=REVIEWS, default=REVIEWS[0],
           help="when the reviewer reads a module: only when its tests fail (default), or "
                "after every coder task"),
), run_input=run_input)
