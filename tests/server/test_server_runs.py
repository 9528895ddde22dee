"""``orchestra serve`` over real HTTP: background runs, discovery, resumable streams,
fan-out to many followers, approvals, pings."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx
import pytest
from server_helpers import PIPELINE, Server, effects, read_events, stranded_run, wait_for

from orchestra.client import ApiError, AsyncClient, Client


def _start(url: str, **run_input: object) -> str:
    r = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": run_input})
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "pending"
    run_id: str = r.json()["run_id"]
    return run_id


def _stored_events(db: Path, run_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.execute("SELECT seq, kind FROM events WHERE run_id = ? ORDER BY seq",
                                 (run_id,)))


def _status(url: str, run_id: str) -> str:
    status: str = httpx.get(f"{url}/v1/runs/{run_id}").json()["status"]
    return status


def test_a_run_completes_in_the_background_and_is_discoverable_while_it_runs(
        server: Server, tmp_path: Path) -> None:
    fx = tmp_path / "effects"
    run_id = _start(server.url, turns=4, delay=0.25, effects=str(fx))
    active = httpx.get(f"{server.url}/v1/runs", params={"active": "true"}).json()
    assert run_id in [r["id"] for r in active["runs"]]
    wait_for(lambda: _status(server.url, run_id) == "completed", what="run completed")
    detail = httpx.get(f"{server.url}/v1/runs/{run_id}").json()
    assert detail["steps"]["completed"] == 9 and detail["steps"]["reissued"] == 0
    assert detail["usage"]["steps"] == 9 and detail["usage"]["tokens_in"] > 0
    [agent] = detail["agents"]
    assert agent["role"] == "counter" and agent["restart_point"]["step"] == 9
    assert len(effects(fx)) == 4  # each tool ran once, with no client connected
    active = httpx.get(f"{server.url}/v1/runs", params={"active": "true"}).json()
    assert run_id not in [r["id"] for r in active["runs"]]


def test_runs_are_listed_with_keyset_pages_and_filters(server: Server) -> None:
    ids = {_start(server.url, turns=0, delay=0) for _ in range(3)}
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, "pipeline": PIPELINE, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{server.url}/v1/runs", params=params).json()
        seen += [r["id"] for r in page["runs"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert ids <= set(seen) and len(seen) == len(set(seen))
    created = [r["created_at"] for r in httpx.get(f"{server.url}/v1/runs").json()["runs"]]
    assert created == sorted(created, reverse=True)
    none = httpx.get(f"{server.url}/v1/runs", params={"pipeline": "other:x"}).json()
    assert none == {"runs": [], "next_cursor": None}


def test_a_cut_stream_resumed_with_last_event_id_misses_and_repeats_nothing(
        server: Server) -> None:
    run_id = _start(server.url, turns=5, delay=0.1)
    url = f"{server.url}/v1/runs/{run_id}/stream"
    with httpx.stream("GET", url, timeout=30) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        first = read_events(r, stop_after=5)  # then the connection is dropped
    with httpx.stream("GET", url, headers={"Last-Event-ID": str(first[-1][0])},
                      timeout=30) as r:
        rest = read_events(r)
    seqs = [e[0] for e in first + rest]
    assert seqs == list(range(1, len(seqs) + 1))
    assert rest[-1][1] == "run.completed"
    assert [(s, k) for s, k, _ in first + rest] == _stored_events(server.db, run_id)
    assert all(d["run_id"] == run_id and d["seq_id"] == s for s, _, d in first + rest)
    # starting_after does the same; a finished run's stream ends at once past its end
    with httpx.stream("GET", url, params={"starting_after": seqs[-3]}, timeout=30) as r:
        assert [e[0] for e in read_events(r)] == seqs[-2:]
    with httpx.stream("GET", url, params={"starting_after": seqs[-1]}, timeout=30) as r:
        assert read_events(r) == []


def test_one_hundred_followers_each_receive_every_event(server: Server) -> None:
    async def main() -> tuple[str, list[list[int | None]]]:
        async with AsyncClient(server.url) as api:
            api.http._transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_connections=200))
            run_id = (await api.runs.create(PIPELINE, {"turns": 6, "delay": 0.3}))["run_id"]

            async def follow() -> list[int | None]:
                return [e.seq async for e in api.runs.stream(run_id)]

            return run_id, await asyncio.gather(*(follow() for _ in range(100)))

    run_id, results = asyncio.run(main())
    stored = [s for s, _ in _stored_events(server.db, run_id)]
    assert _status(server.url, run_id) == "completed"
    bad = [seqs for seqs in results if seqs != stored]
    assert not bad, (str(stored), [str(b) for b in bad[:3]], len(bad))


def test_approvals_over_http_approve_deny_and_decide_twice(server: Server,
                                                         tmp_path: Path) -> None:
    fx = tmp_path / "effects"
    api = Client(server.url)
    approve_run = api.runs.create(PIPELINE, {"turns": 1, "delay": 0.01, "deploy": True,
                                             "effects": str(fx)})["run_id"]
    deny_run = api.runs.create(PIPELINE, {"turns": 1, "delay": 0.01, "deploy": True,
                                          "effects": str(fx)})["run_id"]
    for run_id in (approve_run, deny_run):
        wait_for(lambda r=run_id: api.runs.get(r)["status"] == "waiting", what="waiting")
    [approval] = api.runs.approvals(approve_run, status="pending")["approvals"]
    assert approval["tool"] == "deploy" and approval["arguments"] == {"target": "prod"}
    assert api.runs.get(approve_run)["approvals_pending"][0]["id"] == approval["id"]
    decided = api.approvals.decide(approval["id"], True, by="alice")
    assert decided["status"] == "approved" and decided["decided_by"] == "alice"
    with pytest.raises(ApiError) as twice:
        api.approvals.decide(approval["id"], False)
    assert twice.value.status == 409 and "already approved" in twice.value.detail
    [denial] = api.runs.approvals(deny_run)["approvals"]
    api.approvals.decide(denial["id"], False, reason="not on a Friday")
    events = {r: [e for e in api.runs.stream(r)] for r in (approve_run, deny_run)}
    assert events[approve_run][-1].kind == "run.completed"
    assert events[deny_run][-1].kind == "run.completed"
    assert "approval.decided" in [e.kind for e in events[approve_run]]
    deploys = [line for line in effects(fx) if line.startswith("deploy")]
    assert len(deploys) == 1 and approve_run in deploys[0]  # ran once, for the approved run
    with pytest.raises(ApiError) as missing:
        api.approvals.decide("nope", True)
    assert missing.value.status == 404


def test_an_idle_stream_carries_keepalives(server: Server) -> None:
    run_id = _start(server.url, turns=0, delay=0, deploy=True)  # parks on its approval
    wait_for(lambda: _status(server.url, run_id) == "waiting", what="waiting")
    url = f"{server.url}/v1/runs/{run_id}/stream"
    for params, ping in (({}, ": ping"), ({"include_pings": "true"}, "event: ping")):
        lines = []
        with httpx.stream("GET", url, params=params, timeout=30) as r:
            for line in r.iter_lines():
                lines.append(line)
                if sum(1 for x in lines if x == ping) >= 2:
                    break
        assert lines.count(ping) == 2
    resumed = httpx.post(f"{server.url}/v1/runs/{run_id}/resume")  # nothing to do yet
    assert resumed.status_code == 202 and resumed.json()["status"] == "waiting"
    assert httpx.post(f"{server.url}/v1/runs/{run_id}/cancel").json()["status"] == "cancelled"


def test_cancel_and_resume(server: Server) -> None:
    run_id = _start(server.url, turns=50, delay=0.1)
    wait_for(lambda: _status(server.url, run_id) == "running", what="running")
    r = httpx.post(f"{server.url}/v1/runs/{run_id}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    with httpx.stream("GET", f"{server.url}/v1/runs/{run_id}/stream", timeout=30) as s:
        streamed = read_events(s)  # to the end: the cancel's task.cancelled come after it
    assert "run.cancelled" in [k for _, k, _ in streamed]
    assert [(q, k) for q, k, _ in streamed] == _stored_events(server.db, run_id)[:len(streamed)]
    again = httpx.post(f"{server.url}/v1/runs/{run_id}/cancel")
    assert again.status_code == 409
    resumed = httpx.post(f"{server.url}/v1/runs/{run_id}/resume")
    assert resumed.status_code == 409 and "cancelled" in resumed.json()["detail"]


@pytest.mark.parametrize(("body", "field"), [
    ({}, "pipeline"),
    ({"pipeline": 5}, "pipeline"),
    ({"pipeline": PIPELINE, "input": [1]}, "input"),
    ({"pipeline": PIPELINE, "max_tokens": 0}, "max_tokens"),
    ({"pipeline": PIPELINE, "surprise": 1}, "surprise"),
    ({"pipeline": "no_such_module.pipes:build"}, "pipeline"),
    ({"pipeline": "tests.server.svc_pipeline:nope"}, "pipeline"),
    ({"pipeline": PIPELINE, "model": "nonsense-provider:x"}, "model"),
])
def test_bad_run_bodies_get_422_naming_the_field(server: Server, body: object,
                                                 field: str) -> None:
    r = httpx.post(f"{server.url}/v1/runs", json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"].startswith(f"{field}:") or f"{field}:" in r.json()["detail"]


def test_other_errors_are_problem_documents(server: Server) -> None:
    url = server.url
    not_json = httpx.post(f"{url}/v1/runs", content=b"{nope",
                          headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    decision = httpx.post(f"{url}/v1/approvals/x", json={"approve": "maybe"})
    assert decision.status_code == 422 and "approve:" in decision.json()["detail"]
    assert "limit:" in httpx.get(f"{url}/v1/runs", params={"limit": 0}).json()["detail"]
    assert "cursor:" in httpx.get(f"{url}/v1/runs", params={"cursor": "zz"}).json()["detail"]
    big = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": {
        "x": "a" * (1 << 21)}})
    assert big.status_code == 413 and big.headers["content-type"] == "application/problem+json"
    for path in ("/v1/runs/nope", "/v1/runs/nope/stream", "/v1/runs/nope/plans",
                 "/v1/runs/nope/notes", "/v1/runs/nope/approvals"):
        r = httpx.get(f"{url}{path}")
        assert r.status_code == 404 and "nope" in r.json()["detail"], path
    bad_id = httpx.get(f"{url}/v1/runs/nope/stream", headers={"Last-Event-ID": "x"})
    assert bad_id.status_code == 422 and "Last-Event-ID" in bad_id.json()["detail"]
    spec = httpx.get(f"{url}/openapi.json").json()
    assert {"/v1/runs", "/v1/runs/{run_id}/stream", "/v1/approvals/{approval_id}"} <= set(
        spec["paths"])


def test_board_reads(server: Server) -> None:
    run_id = _start(server.url, turns=2, delay=0.01)
    wait_for(lambda: _status(server.url, run_id) == "completed", what="completed")
    base = f"{server.url}/v1/runs/{run_id}"
    msgs = httpx.get(f"{base}/agents/counter/messages").json()["messages"]
    assert msgs[0]["role"] == "user" and msgs[-1]["role"] == "assistant"
    later = httpx.get(f"{base}/agents/counter/messages", params={"after": msgs[-2]["seq"]})
    assert [m["seq"] for m in later.json()["messages"]] == [msgs[-1]["seq"]]
    assert httpx.get(f"{base}/agents/nobody/messages").status_code == 404
    assert httpx.get(f"{base}/plans").json() == {"plans": [], "next_cursor": None}
    assert httpx.get(f"{base}/handoffs").json()["handoffs"] == []
    assert httpx.get(f"{base}/notes", params={"search": "x", "tag": "y"}).json()["notes"] == []
    assert json.loads(httpx.get(f"{base}/approvals").text)["approvals"] == []


def test_a_stream_says_when_nobody_can_serve_its_run(server: Server) -> None:
    from orchestra import NewTask, SQLiteBlackboard

    async def orphan() -> str:  # made by another process, with a pipeline this server lacks
        store = await SQLiteBlackboard.open(server.db)
        try:
            run = await store.create_run("no_such_module:build", {}, tasks=[NewTask("x", {})])
        finally:
            await store.close()
        return run.id

    run_id = asyncio.run(orphan())
    with httpx.stream("GET", f"{server.url}/v1/runs/{run_id}/stream", timeout=30) as r:
        lines, notice = [], None
        for line in r.iter_lines():
            lines.append(line)
            if lines[-2:-1] == ["event: stream.no_worker"]:
                notice = json.loads(line[len("data: "):])
                break
    assert notice is not None
    assert "id: 2" in lines  # the backlog came first
    assert notice["run_id"] == run_id and notice["after_seq"] == 2 and "seq_id" not in notice
    assert "cannot serve" in notice["detail"] and "no_such_module" in notice["detail"]
    through_client = Client(server.url).runs.stream(run_id)  # a notice moves no cursor
    assert [next(through_client).seq for _ in range(2)] == [1, 2]
    said = next(through_client)
    assert (said.seq, said.kind) == (None, "stream.no_worker")
    httpx.post(f"{server.url}/v1/runs/{run_id}/cancel").raise_for_status()


def test_a_run_stopped_by_its_token_cap_resumes_with_a_higher_one(server: Server) -> None:
    api = Client(server.url)
    run_id = api.runs.create(PIPELINE, {"turns": 4, "delay": 0.01}, max_tokens=60)["run_id"]
    wait_for(lambda: api.runs.get(run_id)["status"] == "paused", what="the cap pausing it")
    got = api.runs.get(run_id)
    assert (got["reason"], got["run"]["reason"]) == ("budget", "budget")
    assert "cap is 60" in got["run"]["error"]
    assert [(r["id"], r["reason"]) for r in api.runs.list(status="paused")["runs"]] == [
        (run_id, "budget")]
    assert run_id not in [r["id"] for r in api.runs.list(active=True)["runs"]]
    assert list(api.runs.stream(run_id))[-1].kind == "run.paused"  # the stream ends there
    # without a higher cap: 409, saying the cap is still reached and how to raise it
    with pytest.raises(ApiError) as refused:
        api.runs.resume(run_id)
    assert refused.value.status == 409 and "still 60" in refused.value.detail
    assert '{"max_tokens": N}' in refused.value.detail
    assert api.runs.resume(run_id, max_tokens=100_000)["status"] == "running"
    events = list(api.runs.stream(run_id))
    assert events[-1].kind == "run.completed"
    assert api.runs.get(run_id)["steps"]["completed"] == 9


def test_the_api_says_a_run_needs_a_worker_of_its_version(server: Server) -> None:
    """A live run of a version no live process serves, while others are served: the
    listing and the detail carry its version and ``needs_version`` (as ``orchestra runs``
    says "needs a worker of version V"); a served run needs nothing."""
    old, new = stranded_run(server.db)
    try:
        listed = {r["id"]: r for r in httpx.get(f"{server.url}/v1/runs").json()["runs"]}
        assert (listed[old]["version"], listed[old]["needs_version"]) == ("1@old", "1@old")
        assert listed[old]["orphaned"] is True
        assert (listed[new]["version"], listed[new]["needs_version"]) == ("2@new", None)
        assert listed[new]["orphaned"] is False
        run = httpx.get(f"{server.url}/v1/runs/{old}").json()["run"]
        assert (run["version"], run["needs_version"]) == ("1@old", "1@old")
    finally:
        for run_id in (old, new):
            httpx.post(f"{server.url}/v1/runs/{run_id}/cancel").raise_for_status()
