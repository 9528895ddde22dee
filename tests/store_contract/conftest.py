"""The store contract's fixtures: every test runs once per backend in ``BACKENDS``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, Backend, Claimed, Opener

from orchestra._types import Run, Task
from orchestra.store import Blackboard, Lease, NewTask


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def spec(backend: Backend, tmp_path: Path) -> str:
    return backend.fresh(tmp_path)


@pytest.fixture
async def open_store(backend: Backend, spec: str) -> AsyncIterator[Opener]:
    """Open further handles on the test's store (closed at the end)."""
    handles: list[Blackboard] = []

    async def open_(**options: Any) -> Blackboard:
        handle = await backend.open(spec, **options)
        handles.append(handle)
        return handle

    yield open_
    for handle in handles:
        await handle.close()


@pytest.fixture
async def store(open_store: Opener) -> Blackboard:
    return await open_store()


@pytest.fixture
def claimed(store: Blackboard) -> Claimed:
    """``await claimed(role)``: a new run with one task of ``role``, claimed."""

    async def make(role: str = "coder", owner: str = "w1",
                   lease_seconds: float = 30.0) -> tuple[Run, Task, Lease]:
        run = await store.create_run("contract", {"goal": "x"}, tasks=[NewTask(role, {"n": 1})])
        task = await store.claim_task(owner, run_id=run.id, lease_seconds=lease_seconds)
        assert task is not None
        return run, task, Lease(owner, task.attempt)

    return make
