"""The demo on PostgreSQL, with real processes: killed with kill -9 mid-way and finished by
an `orchestra worker`; and a demo half-done on SQLite, moved with `orchestra copy` and
finished on PostgreSQL. Either way the workspace equals an uninterrupted demo's."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import Reference, cli, kill_group, logs, only_run_id, spawn, workspace_files
from test_e2e_kill_resume import KILL_POINTS, kill_when

pytestmark = pytest.mark.slow

LEASE = "3"  # the killed process's leases run out soon after the kill
MID_CODING = KILL_POINTS["mid-coding"]  # the same SQL reads both backends


@pytest.fixture
def dsn() -> str:
    from benchmarks.postgres.local import PostgresUnavailable, shared_server

    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")
    return server.create_database("e" + os.urandom(6).hex())


class PgWatch:
    """Polls a PostgreSQL store from outside, as ``StoreWatch`` does a SQLite file."""

    def __init__(self, dsn: str) -> None:
        import asyncpg

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(dsn))

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.loop.run_until_complete(self.conn.fetch(sql, *args))]

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


def finish_with_worker(dsn: str, run_id: str, ws: Path, ref: Reference) -> None:
    """`orchestra worker --run` completes the run; the outcome is the reference's."""
    done = cli("worker", "--db", dsn, "--run", run_id, timeout=180)
    assert done.code == 0, done
    assert f"run {run_id}: completed" in done.stdout, done
    shown = cli("show", run_id, "--db", dsn, "--json")
    data = json.loads(shown.stdout)
    assert data["status"] == "completed", data["run"]["error"]
    assert data["tasks"] == {"completed": 10}
    assert data["steps"]["started"] == 0 and data["steps"]["failed"] == 0
    assert workspace_files(ws) == ref.files
    watch = PgWatch(dsn)
    try:
        seqs = [s for (s,) in watch.rows("SELECT seq FROM events WHERE run_id = $1 ORDER BY seq",
                                         run_id)]
        finals = watch.rows("SELECT kind FROM events WHERE run_id = $1 AND kind IN "
                            "('run.completed', 'run.failed', 'run.cancelled')", run_id)
    finally:
        watch.close()
    assert seqs == list(range(1, len(seqs) + 1))
    assert finals == [("run.completed",)]


def test_demo_on_postgres_killed_then_finished_by_a_worker(
        tmp_path: Path, dsn: str, reference: Reference) -> None:
    ws = tmp_path / "ws"
    log = tmp_path / "demo"
    proc = spawn("demo", "--db", dsn, "--workspace", ws, "--lease", LEASE, log=log)
    watch = PgWatch(dsn)
    try:
        deadline = time.monotonic() + 90
        while not _safe_rows(watch, MID_CODING):
            assert proc.poll() is None, f"the demo ended before the kill\n{logs(log)}"
            assert time.monotonic() < deadline, f"no write_file step in 90 s\n{logs(log)}"
            time.sleep(0.005)
        kill_group(proc)
        (run_id, status), = watch.rows("SELECT id, status FROM runs")
    finally:
        if proc.poll() is None:
            kill_group(proc)
        watch.close()
    assert proc.returncode == -9, logs(log)
    assert status in ("pending", "running"), f"the kill came too late ({status})"
    finish_with_worker(dsn, run_id, ws, reference)


def _safe_rows(watch: PgWatch, sql: str) -> list[tuple[Any, ...]]:
    import asyncpg

    try:
        return watch.rows(sql)
    except asyncpg.UndefinedTableError:  # the demo has not created the schema yet
        return []


def test_a_half_done_sqlite_demo_copied_to_postgres_finishes_there(
        tmp_path: Path, dsn: str, reference: Reference) -> None:
    db, ws = tmp_path / "demo.db", tmp_path / "ws"
    kill_when(KILL_POINTS["mid-coding"],
              ("demo", "--db", db, "--workspace", ws, "--lease", LEASE), db, tmp_path / "demo")
    run_id = only_run_id(db)
    reads = [("events", run_id, "--json"), ("board", run_id, "--json"),
             ("show", run_id, "--json")]

    deadline = time.monotonic() + 60
    while True:  # refused while the killed demo's lease has not run out yet
        copied = cli("copy", "--from", db, "--to", dsn)
        if copied.code == 0 or "live process" not in copied.stderr:
            break
        assert time.monotonic() < deadline, copied
        time.sleep(0.5)
    assert copied.code == 0, copied
    assert f"run {run_id}: copied" in copied.stdout

    # read after the copy, so that the killed demo's lease has run out on both sides
    before = [cli(*argv, "--db", db) for argv in reads]
    after = [cli(*argv, "--db", dsn) for argv in reads]
    for b, a in zip(before, after, strict=True):
        assert b.code == a.code == 0, (b, a)
        got, want = _documents(a.stdout), _documents(b.stdout)
        assert got == want, [(k, w[k], g.get(k)) for g, w in zip(got, want, strict=True)
                             if isinstance(w, dict) for k in w if w[k] != g.get(k)]
    assert len(_documents(after[0].stdout)) > 10, "the half-done run has events"
    finish_with_worker(dsn, run_id, ws, reference)


def _documents(text: str) -> list[Any]:
    """The JSON documents a command printed (`events --json` prints one per line)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
