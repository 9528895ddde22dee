"""A fresh database per test on the session's real PostgreSQL server (skipped, with the
reason, where no server can run)."""

from __future__ import annotations

import os

import pytest

from benchmarks.postgres.local import LocalPostgres, PostgresUnavailable, shared_server


@pytest.fixture
def server() -> LocalPostgres:
    try:
        return shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")


@pytest.fixture
def dsn(server: LocalPostgres) -> str:
    return server.create_database("t" + os.urandom(6).hex())

