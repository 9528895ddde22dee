"""kill -9 the blackboard example at random instants, resume it in new processes: no
entry lost, no consumption doubled, the board the same as an uninterrupted run's, on
SQLite and on PostgreSQL (``benchmarks/board_torture.py``; its benchmark mode kills 100
times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.board_torture import torture

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_kills_at_random_instants_lose_nothing_and_double_nothing(tmp_path: Path,
                                                                  store: str) -> None:
    if store == "postgres":
        from benchmarks.postgres.local import PostgresUnavailable, shared_server

        try:
            shared_server()
        except PostgresUnavailable as exc:
            pytest.skip(f"no PostgreSQL server here: {exc}")
    report = torture(tmp_path, kills=5, questions=3, seed=7, store=store)
    assert report.problems == []
    assert report.kills == 5 and report.mid_run >= 1  # some kills did land mid-run
