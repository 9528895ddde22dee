"""The console is not part of the run (issue 27, item 1): a reader that leaves early
(`orchestra demo | head -1`) neither stops nor strands the run, and a run killed between
"recorded" and "first task claimed" is continued by `orchestra resume`, even when its
(still empty) workspace is gone meanwhile."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest
from e2e_helpers import DEMO_MODEL, REPO, child_env, cli, cli_argv, only_run_id, query

pytestmark = pytest.mark.slow


def test_a_reader_that_leaves_does_not_strand_the_run(tmp_path: Path) -> None:
    db, workspace = tmp_path / "demo.db", tmp_path / "ws"
    proc = subprocess.Popen(cli_argv("demo", "--db", db, "--workspace", workspace),
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err, err
    run_id = only_run_id(db)
    assert query(db, "SELECT status FROM runs WHERE id = ?", (run_id,)) == [("completed",)]
    assert (workspace / "tests").is_dir()


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: the child's first write blocks there."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETFL, fcntl.fcntl(write, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        while True:
            os.write(write, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(write, fcntl.F_SETFL, fcntl.fcntl(write, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return read, write


def test_a_kill_between_recording_and_first_claim_is_resumable(tmp_path: Path) -> None:
    db, workspace = tmp_path / "run.db", tmp_path / "ws"
    spec = REPO / "agents" / "demo" / "spec.md"
    read, write = _full_pipe()
    env = child_env() | {"PYTHONUNBUFFERED": "1"}  # "run ... started" blocks on the pipe
    proc = subprocess.Popen(cli_argv("run", "--spec", spec, "--workspace", workspace,
                                     "--model", DEMO_MODEL, "--db", db),
                            env=env, stdout=write, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        _wait_blocked_writing(proc)  # its first print comes after the run is recorded
        proc.kill()
        proc.wait(timeout=30)
    finally:
        os.close(read)
    run_id = only_run_id(db)
    assert query(db, "SELECT count(*) FROM events WHERE kind = 'task.claimed'") == [(0,)]
    if workspace.exists():  # the user tidied up what looked like a failed start
        workspace.rmdir()
    result = cli("resume", run_id, "--db", db)
    assert result.code == 0, result
    assert "Traceback" not in result.stderr
    assert query(db, "SELECT status FROM runs WHERE id = ?", (run_id,)) == [("completed",)]


def _wait_blocked_writing(proc: subprocess.Popen[bytes]) -> None:
    """Until the child sleeps in a write to its full stdout (Linux's wchan says so)."""
    deadline = time.monotonic() + 60
    while "pipe_write" not in Path(f"/proc/{proc.pid}/wchan").read_text():
        assert proc.poll() is None, "the child exited"
        assert time.monotonic() < deadline, "the child never blocked on its stdout"
        time.sleep(0.02)
