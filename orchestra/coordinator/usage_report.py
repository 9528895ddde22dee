"""What a run's model calls used and cost, per run, per role and per task, from its journal.

The journal holds one row per call, with the tokens and cost counted when the call was
made; this adds them up. A call in flight at a crash and issued again (``attempts`` > 1)
is counted once, for the call that completed: the provider may have billed the lost one
too, and ``reissued`` says how many such calls there were.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from orchestra._types import Step
from orchestra.models.base import Usage
from orchestra.store.protocol import Blackboard


@dataclass(slots=True)
class UsageTotals:
    """Tokens by kind and USD of a set of model calls (model steps and summaries)."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    reissued: int = 0
    """Calls issued again after a crash (counted once here; maybe billed twice)."""

    def add(self, step: Step) -> None:
        record = step.output.get("usage") if isinstance(step.output, dict) else None
        extra = record[2:5] if isinstance(record, list) else []
        cached, write, reasoning = (int(n) for n in [*extra, 0, 0, 0][:3])
        self.calls += 1
        self.usage += Usage(step.tokens_in, step.tokens_out, step.cost, cached, write,
                            reasoning)
        self.reissued += step.attempts > 1

    @property
    def cost(self) -> float:
        return self.usage.cost

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, **asdict(self.usage), "reissued": self.reissued}


@dataclass(slots=True)
class RunUsage:
    """A run's usage: in all, by role, by task."""

    total: UsageTotals = field(default_factory=UsageTotals)
    by_role: dict[str, UsageTotals] = field(default_factory=dict)
    by_task: dict[str, UsageTotals] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total.as_dict(),
                "by_role": {k: v.as_dict() for k, v in sorted(self.by_role.items())},
                "by_task": {k: v.as_dict() for k, v in self.by_task.items()}}


def is_call(step: Step) -> bool:
    """A model call that completed (a model step or a summary): what a provider bills."""
    return step.status == "completed" and step.kind in ("model", "compaction")


async def run_usage(store: Blackboard, run_id: str) -> RunUsage:
    """Add up the journal of every task of ``run_id`` (every retry of each)."""
    out = RunUsage()
    for task in await store.list_tasks(run_id):
        per_task = out.by_task.setdefault(task.id, UsageTotals())
        per_role = out.by_role.setdefault(task.role, UsageTotals())
        for retry in range(task.retries + 1):
            for step in await store.get_steps(task.id, retry):
                if is_call(step):
                    for totals in (out.total, per_role, per_task):
                        totals.add(step)
    return out
