"""A token guards every endpoint; an open bind is refused; kill -9 mid-run loses nothing."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from server_helpers import PIPELINE, Server, child_env, effects, wait_for

from orchestra.client import ApiError, Client, StreamEvent

TOKEN = "s3cret-token-for-tests"
ENDPOINTS = [("POST", "/v1/runs"), ("GET", "/v1/runs"), ("GET", "/v1/runs/r"),
             ("GET", "/v1/runs/r/stream"), ("POST", "/v1/runs/r/cancel"),
             ("POST", "/v1/runs/r/resume"), ("GET", "/v1/runs/r/approvals"),
             ("POST", "/v1/approvals/a"), ("GET", "/v1/runs/r/plans"),
             ("GET", "/v1/runs/r/handoffs"), ("GET", "/v1/runs/r/notes"),
             ("GET", "/v1/runs/r/agents/counter/messages"), ("GET", "/openapi.json"),
             ("GET", "/no/such/path")]


def test_every_endpoint_needs_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    srv = Server(tmp_path / "auth.db", args=("--token-file", str(token_file))).start()
    try:
        for method, path in ENDPOINTS:
            for headers in ({}, {"Authorization": "Bearer wrong"},
                            {"Authorization": TOKEN}):
                r = httpx.request(method, srv.url + path, headers=headers, json={})
                assert r.status_code == 401, (method, path, headers)
                assert r.headers["www-authenticate"] == "Bearer"
                assert r.headers["content-type"] == "application/problem+json"
            ok = httpx.request(method, srv.url + path, json={},
                               headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code != 401, (method, path)
        api = Client(srv.url, token=TOKEN)
        run_id = api.runs.create(PIPELINE, {"turns": 1, "delay": 0})["run_id"]
        assert [e.kind for e in api.runs.stream(run_id)][-1] == "run.completed"
        with pytest.raises(ApiError) as denied:
            Client(srv.url).runs.get(run_id)
        assert denied.value.status == 401
        # no CORS unless asked for
        pre = httpx.options(f"{srv.url}/v1/runs", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in pre.headers
    finally:
        srv.stop()
    assert TOKEN not in srv.stderr()


def test_an_open_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "orchestra.cli.main", "serve", "--db",
            str(tmp_path / "x.db"), "--host", "0.0.0.0", "--port", "0"]
    proc = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in proc.stderr
    assert not (tmp_path / "x.db").exists()


def test_cors_only_for_the_named_origin(tmp_path: Path) -> None:
    srv = Server(tmp_path / "cors.db", args=("--cors", "http://ok.example"),
                 env={"ORCHESTRA_TOKEN": TOKEN}).start()
    try:
        pre = httpx.options(f"{srv.url}/v1/runs", headers={
            "Origin": "http://ok.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization"})
        assert pre.headers["access-control-allow-origin"] == "http://ok.example"
        other = httpx.get(f"{srv.url}/v1/runs", headers={"Origin": "http://evil.example",
                                                         "Authorization": f"Bearer {TOKEN}"})
        assert "access-control-allow-origin" not in other.headers
    finally:
        srv.stop()


@pytest.mark.slow
def test_kill_9_the_server_mid_run_and_the_client_resumes_its_stream(tmp_path: Path) -> None:
    fx = tmp_path / "effects"
    srv = Server(tmp_path / "crash.db").start()
    api = Client(srv.url)
    run_id = api.runs.create(PIPELINE, {"turns": 12, "delay": 0.15,
                                        "effects": str(fx)})["run_id"]
    got: list[StreamEvent] = []
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            got.extend(api.runs.stream(run_id, max_retry_wait=0.5))
        except BaseException as exc:  # surfaced by the assert below
            failure.append(exc)

    reader = threading.Thread(target=follow)
    reader.start()
    wait_for(lambda: len(effects(fx)) >= 3, what="three tool calls")
    srv.kill9()
    seen_at_kill = len(got)
    srv.start()  # same store, same port: the client reconnects by itself
    reader.join(timeout=120)
    srv.stop()
    assert not failure, failure
    assert not reader.is_alive()
    seqs = [e.seq for e in got]
    assert seqs == list(range(1, len(seqs) + 1)), "a gap or a duplicate"
    assert got[-1].kind == "run.completed" and len(got) > seen_at_kill
    keys = [line.split()[1] for line in effects(fx)]
    assert len(set(keys)) == 12 and len(keys) <= 13  # at most the in-flight call again


def _worker(db: Path, run_id: str, *args: str) -> subprocess.Popen[bytes]:
    """``orchestra worker`` serving one run of ``db`` in a child process."""
    return subprocess.Popen([sys.executable, "-m", "orchestra.cli.main", "worker", "--db",
                             str(db), "--run", run_id, *args], env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_an_api_only_server_and_a_separate_worker_serve_one_store(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    srv = Server(db, args=("--workers", "0", "--liveness-interval", "0.3")).start()
    worker = None
    try:
        api = Client(srv.url)
        run_id = api.runs.create(PIPELINE, {"turns": 2, "delay": 0.01})["run_id"]
        stream = api.runs.stream(run_id)
        assert next(stream).kind == "run.created"
        assert api.runs.get(run_id)["status"] == "pending"  # nobody drives it here
        worker = _worker(db, run_id)
        kinds = [e.kind for e in stream if e.seq is not None]
        assert kinds[-1] == "run.completed"  # written by the worker, streamed by the server
        assert worker.wait(timeout=60) == 0
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
        srv.stop()


def test_a_stream_says_no_live_worker_soon_after_the_runs_worker_is_killed(
        tmp_path: Path) -> None:
    """The store's ``served_until`` (renewed by the worker every third of its lease) says
    when a run's worker died: within its lease plus a heartbeat, not a guess from how
    recently the run wrote an event (which took the server's own 30 s lease)."""
    import signal
    import time

    db, lease = tmp_path / "shared.db", 2.0
    srv = Server(db, args=("--workers", "0", "--liveness-interval", "0.3")).start()
    worker = None
    try:
        api = Client(srv.url)
        run_id = api.runs.create(PIPELINE, {"turns": 200, "delay": 0.05})["run_id"]
        stream = api.runs.stream(run_id)
        # the API-only server serves nothing: until a worker does, the stream says so
        notice = next(e for e in stream if e.seq is None)
        assert "no worker has served it yet" in notice.data["detail"], notice.data
        worker = _worker(db, run_id, "--lease", str(lease))
        killed_at = None
        for event in stream:
            if event.seq is None:
                assert killed_at is not None, f"said while the worker lived: {event.data}"
                said_after = time.monotonic() - killed_at
                break
            if killed_at is None and event.kind == "step.completed":
                worker.send_signal(signal.SIGKILL)  # mid-run: it holds the task's lease
                worker.wait(timeout=30)
                killed_at = time.monotonic()
        assert event.kind == "stream.no_worker" and "no live worker since" in \
            event.data["detail"], event.data
        # lease + heartbeat (a third of it) + the stream's check; generous for a busy machine
        print(f"no-worker notice {said_after:.2f} s after the kill (lease {lease:g} s)")
        assert said_after < lease + lease / 3 + 0.3 + 10.0, said_after
        assert api.runs.get(run_id)["status"] == "running"  # as the dead worker left it
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
        srv.stop()
