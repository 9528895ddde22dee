"""Request and response bodies of the HTTP API (pydantic: validated at the boundary,
and the source of the OpenAPI document)."""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestra._entries import Entry
from orchestra._types import Approval, Handoff, Message, Note, PauseReason, Plan, Run, RunStatus
from orchestra.server.problems import Problem


class RunCreate(BaseModel):
    """Start a run of a pipeline in the background."""

    model_config = ConfigDict(extra="forbid")
    pipeline: str = Field(min_length=3, examples=["mypackage.pipelines:build"],
                          description="Import path of the pipeline factory, "
                                      "'package.module:factory'")
    input: dict[str, Any] = Field(default_factory=dict, description="The run's input")
    model: str | dict[str, str] | None = Field(
        None, description="A model spec for every role, or {role: spec}; default: the "
                          "pipeline's own models or $ORCHESTRA_MODEL on the server")
    max_tokens: int | None = Field(None, ge=1, description="Stop the run (resumably) after "
                                                            "this many tokens")
    max_cost: float | None = Field(None, gt=0, description="Pause the run (resumably) before "
                                   "a call that could take its cost past this many USD")


class ResumeRequest(BaseModel):
    """Optional: a new token cap (a run stopped by its cap needs a higher one)."""

    model_config = ConfigDict(extra="forbid")
    max_tokens: int | None = Field(None, ge=1, description="The run's token cap from now on")
    max_cost: float | None = Field(None, gt=0, description="The run's cost cap (USD) from now on")


class RunAccepted(BaseModel):
    run_id: str
    status: RunStatus


class RunPage(BaseModel):
    runs: list[Run] = Field(description="Each run also says `reason`: why it is paused "
                                        "(`budget`: its token cap), else null; and its "
                                        "worker state: `orphaned`, `no_worker_since`, "
                                        "`interrupted`, `needs_version` (a live run only a "
                                        "worker of that version takes, and none is live)")
    next_cursor: str | None = Field(None, description="Pass as ?cursor= for the next page")


def envelope(kind: str, items: list[Any], next_cursor: str | None = None) -> dict[str, Any]:
    """Every list the API (and the CLI's ``--json``) returns: ``{kind: [...], "next_cursor":
    ...}`` — the items under their kind's name, and where the next page starts (null: none)."""
    return {kind: items, "next_cursor": next_cursor}


class ApprovalPage(BaseModel):
    approvals: list[Approval]
    next_cursor: str | None = None


class PlanPage(BaseModel):
    plans: list[Plan]
    next_cursor: str | None = None


class HandoffPage(BaseModel):
    handoffs: list[Handoff]
    next_cursor: str | None = None


class NotePage(BaseModel):
    notes: list[Note]
    next_cursor: str | None = None


class EntryPage(BaseModel):
    """Typed board entries, in posting order, each with its scope (who may see it)."""

    entries: list[Entry]
    next_cursor: str | None = None


class MessagePage(BaseModel):
    messages: list[Message]
    next_cursor: str | None = None


class UsageTotals(BaseModel):
    """Model calls of a run, a role or a task, added up from the journal."""

    calls: int
    input_tokens: int = Field(description="Whole prompts, cached parts included")
    cached_input_tokens: int = Field(description="Prompt tokens read from the provider's cache")
    cache_write_tokens: int
    output_tokens: int = Field(description="Reasoning tokens included")
    reasoning_tokens: int
    cost: float = Field(description="USD, priced when each call was made")
    reissued: int = Field(description="Calls issued again after a crash (counted once)")


class Usage(BaseModel):
    tokens_in: int
    tokens_out: int
    cost: float
    steps: int
    total: UsageTotals
    by_role: dict[str, UsageTotals]
    by_task: dict[str, UsageTotals]


class RunDetail(BaseModel):
    """What a polling client needs: status, progress, per-agent state, usage."""

    run: Run = Field(description="With `reason` and the worker state, as in the listing")
    status: RunStatus
    reason: PauseReason | None = Field(None, description="Why the run is `paused`: `budget`, "
                                       "its token cap was reached (resume it with a higher "
                                       "`max_tokens`)")
    usage: Usage
    tasks: dict[str, int] = Field(description="Task counts by status")
    steps: dict[str, int] = Field(description="Journal totals: completed, reissued, ...")
    agents: list[dict[str, Any]] = Field(description="Per agent: messages, steps, tokens, "
                                                     "restart point")
    approvals_pending: list[dict[str, Any]]
    served_here: bool = Field(description="This server is driving the run now")


class UpgradeResult(BaseModel):
    """What ``POST /v1/runs/{id}/upgrade`` found: moved, or the first step that differs."""

    run_id: str
    moved: bool = Field(description="The run now runs on the server's version")
    from_version: str
    to_version: str = Field(description="The version of the pipeline as the server builds it")
    version: str = Field(description="The run's version after the call")
    checked: int = Field(description="Completed steps (and routes) found the same")
    difference: str | None = Field(None, description="The first step the new code would ask "
                                   "otherwise (nothing moved), or null")


class Decision(BaseModel):
    """A human's answer to a pending tool call."""

    model_config = ConfigDict(extra="forbid")
    approve: bool
    reason: str | None = Field(None, max_length=4000, description="Why (the model sees a "
                                                                   "denial's reason)")
    by: str = Field("api", min_length=1, max_length=200, description="Who decides")


def encode_cursor(created_at: float, run_id: str) -> str:
    raw = json.dumps([created_at, run_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, run_id = json.loads(raw)
        if not isinstance(at, int | float) or not isinstance(run_id, str):
            raise ValueError(cursor)
    except (ValueError, TypeError) as exc:
        raise Problem(422, f"cursor: {cursor!r} is not a cursor this API returned; pass "
                           "next_cursor from the previous page",
                      errors=[{"field": "cursor", "message": "invalid cursor"}]) from exc
    return float(at), run_id
