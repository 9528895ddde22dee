"""Fixtures for the blackboard tests: real SQLite files in ``tmp_path``, no mocks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_helpers import Claim

from orchestra._types import Run, Task
from orchestra.store import Lease, NewTask, SQLiteBlackboard


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "board.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SQLiteBlackboard]:
    board = await SQLiteBlackboard.open(db_path)
    yield board
    await board.close()


@pytest.fixture
def claimed(store: SQLiteBlackboard) -> Claim:
    """Create a run with one task of ``role`` and claim it; return (run, task, lease)."""

    async def make(role: str = "coder", owner: str = "worker-1",
                   lease_seconds: float = 30.0) -> tuple[Run, Task, Lease]:
        run = await store.create_run("test", {"goal": "x"}, tasks=[NewTask(role, {"n": 1})])
        task = await store.claim_task(owner, run_id=run.id, lease_seconds=lease_seconds)
        assert task is not None
        return run, task, Lease(owner, task.attempt)

    return make
