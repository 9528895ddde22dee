"""Whether a run may be resumed or cancelled: rules shared by the coordinator, the CLI and
the server, kept apart from the drive so each entry point reads them without it."""

from __future__ import annotations

from orchestra._errors import UserError
from orchestra._types import Run, RunStatus

INTERRUPTED_EVENT = "run.interrupted"
"""The event a process writes when it is stopped (Ctrl-C) while driving a run."""
CANCELLABLE: tuple[RunStatus, ...] = ("pending", "running", "waiting", "failed", "paused",
                                      "stalled")
"""A run in any of these may be cancelled (a completed or cancelled one may not)."""


def check_resumable(run: Run, cap: int | None, *, how: str = "--max-tokens N",
                    cost_cap: float | None = None, cost_how: str = "--max-cost USD") -> None:
    """Raise ``UserError`` if ``run`` cannot be resumed: finished for good (completed or
    cancelled), or paused by its token cap (``reason`` budget) while ``cap`` (the cap it
    would resume with) is still no more than it used; likewise for its cost cap
    (``cost_cap``, USD). ``how``/``cost_how``: how the caller raises each."""
    if run.status == "completed":
        raise UserError(f"run {run.id} is already completed; nothing to resume")
    if run.status == "cancelled":
        raise UserError(f"run {run.id} was cancelled; start a new run instead")
    used = run.tokens_in + run.tokens_out
    if run.reason == "budget" and cap is not None and used >= cap:
        raise UserError(f"run {run.id} is paused: it used {used} tokens and its token cap is "
                        f"still {cap}; raise the cap to resume it ({how} with N > {used})")
    if run.reason == "budget" and cost_cap is not None and run.cost >= cost_cap:
        raise UserError(f"run {run.id} is paused: it spent ${run.cost:.6f} and its cost cap is "
                        f"still ${cost_cap:g}; raise the cap to resume it ({cost_how} above "
                        f"{run.cost:.6f})")
