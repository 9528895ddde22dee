"""The vocabulary is defined once: Literals, the tuples derived from them, the agent id."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from orchestra._errors import UserError
from orchestra._types import (
    MESSAGE_ROLES,
    RUN_STATUSES,
    STEP_KINDS,
    TASK_STATUSES,
    TERMINAL_RUN_STATUSES,
    AgentId,
    MessageRole,
    RunStatus,
    StepKind,
    Task,
    TaskStatus,
)
from orchestra.runtime import keys
from orchestra.store import SQLiteBlackboard


def test_tuples_are_the_literals_args() -> None:
    assert RUN_STATUSES == get_args(RunStatus)
    assert STEP_KINDS == get_args(StepKind)
    assert MESSAGE_ROLES == get_args(MessageRole)
    assert TASK_STATUSES == get_args(TaskStatus)
    # only a run pauses, or stalls (its board made no progress)
    assert set(RUN_STATUSES) - set(TASK_STATUSES) == {"paused", "stalled"}
    # nobody serves a paused or stalled run until it is resumed: neither is a live status
    assert TERMINAL_RUN_STATUSES == {"completed", "failed", "cancelled", "paused", "stalled"}


def test_agent_ids_round_trip() -> None:
    agent = AgentId("r1", "coder")
    assert str(agent) == "r1/coder"
    assert AgentId.parse("r1/coder") == agent
    assert AgentId.parse("r1/team/coder") == AgentId("r1", "team/coder")
    assert AgentId.parse("coder") == AgentId("", "coder") and str(AgentId("", "coder")) == "coder"


def test_step_keys_are_stable_per_task_attempt_and_step() -> None:
    task = Task("t1", "r1", "coder", {}, "running", retries=2)
    assert keys.idempotency_key(task, 3) == "r1:t1:2:3"
    assert keys.digest("abc") == keys.digest("abc") != keys.digest("abd")
    assert len(keys.digest("abc")) == 16


async def test_a_run_id_with_a_slash_is_refused(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        with pytest.raises(UserError, match="without '/'"):
            await store.create_run("p", {}, run_id="a/b")
        assert await store.list_runs() == []
