"""A serving process (``orchestra worker``) sees every active run, not only the newest
page of ``list_runs``: with more active runs than a page, every worker served the same
newest ones and the older ones waited for them to finish."""

from __future__ import annotations

from pathlib import Path

from orchestra import SQLiteBlackboard
from orchestra.coordinator.serving import active_runs


async def test_active_runs_pages_through_every_active_run(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "runs.db") as store:
        ids = [(await store.create_run("p", {"i": i})).id for i in range(7)]
        done = await store.create_run("p", {})
        await store.set_run_status(done.id, "completed")
        for page in (2, 3, 7, 1000):
            got = [r.id for r in await active_runs(store, page=page)]
            assert sorted(got) == sorted(ids) and len(got) == len(set(got))
