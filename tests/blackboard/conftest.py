"""A fresh store per test, once on SQLite and once on PostgreSQL (started by the suite,
as the store contract does), for tests of the board's coordination."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from blackboard_helpers import open_spec

from orchestra.store import Blackboard

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the examples, imported as ``examples.research_board``
    sys.path.insert(0, str(ROOT))


def _postgres_dsn() -> str:
    from benchmarks.postgres.local import PostgresUnavailable, shared_server

    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")
    return server.create_database("t" + os.urandom(6).hex())


@pytest.fixture(params=["sqlite", "postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "board.db") if request.param == "sqlite" else _postgres_dsn()


@pytest.fixture
async def board_store(store_spec: str) -> AsyncIterator[Blackboard]:
    store = await open_spec(store_spec)
    yield store
    await store.close()


