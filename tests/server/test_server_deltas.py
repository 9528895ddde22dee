"""The models' text over SSE: a stream cut mid-answer and resumed with ``Last-Event-ID``
delivers every delta once, in order, and the pieces add up to the stored answers;
``?tokens=0`` (and the client's ``tokens=False``) leaves them out; once a prune folded
them, a stream resumed from a folded delta's seq goes on with the next event stored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
from server_helpers import Server, read_events

from orchestra.client import Client
from orchestra.store import SQLiteBlackboard

PIPELINE = "tests.cli.stream_pipeline:build"


def _start(url: str, **run_input: object) -> str:
    r = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": run_input})
    assert r.status_code == 202, r.text
    run_id: str = r.json()["run_id"]
    return run_id


def _stored(db: Path, run_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.execute("SELECT seq, kind FROM events WHERE run_id = ? ORDER BY seq",
                                 (run_id,)))


def _answers(url: str, run_id: str) -> dict[str, str]:
    found = {}
    for role in ("writer", "critic"):
        messages = httpx.get(f"{url}/v1/runs/{run_id}/agents/{role}/messages").json()
        found[role] = [m for m in messages["messages"] if m["role"] == "assistant"][-1][
            "content"]
    return found


def _texts(events: list[tuple[int, str, dict[str, Any]]]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for _, kind, frame in events:
        if kind == "model.delta":
            data = frame["data"]
            texts[data["role"]] = texts.get(data["role"], "") + data.get("text", "")
    return texts


def _until_third_delta(response: httpx.Response) -> list[tuple[int, str, dict[str, Any]]]:
    """The events of an SSE response up to its third ``model.delta``."""
    events: list[tuple[int, str, dict[str, Any]]] = []
    frame: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "" and "id" in frame:
            events.append((int(frame["id"]), frame["event"], json.loads(frame["data"])))
            if sum(kind == "model.delta" for _, kind, _ in events) == 3:
                return events
        if line == "":
            frame = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            frame[key] = value
    raise AssertionError(f"the stream ended before 3 deltas: {events}")


def test_a_stream_cut_mid_answer_resumes_with_every_delta_once(server: Server) -> None:
    run_id = _start(server.url, lines=6, size=4, every=0.02)
    url = f"{server.url}/v1/runs/{run_id}/stream"
    with httpx.stream("GET", url, timeout=30) as r:
        first = _until_third_delta(r)
    assert first[-1][1] == "model.delta"  # cut in the middle of an answer
    with httpx.stream("GET", url, headers={"Last-Event-ID": str(first[-1][0])},
                      timeout=30) as r:
        rest = read_events(r)
    events = first + rest
    seqs = [s for s, _, _ in events]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [(s, k) for s, k, _ in events] == _stored(server.db, run_id)
    assert rest[-1][1] == "run.completed"
    assert any(k == "model.delta" for _, k, _ in rest)  # the answer went on after the cut
    assert _texts(events) == _answers(server.url, run_id)


def test_tokens_0_leaves_the_deltas_out(server: Server) -> None:
    run_id = _start(server.url, lines=2, size=16, every=0.01)
    url = f"{server.url}/v1/runs/{run_id}/stream"
    with httpx.stream("GET", url, params={"tokens": "0"}, timeout=30) as r:
        events = read_events(r)
    stored = _stored(server.db, run_id)
    assert any(kind == "model.delta" for _, kind in stored)
    assert [(s, k) for s, k, _ in events] == [e for e in stored if e[1] != "model.delta"]
    with Client(server.url) as api:
        kinds = [e.kind for e in api.runs.stream(run_id, tokens=False)]
        assert "model.delta" not in kinds and kinds[-1] == "run.completed"
        every = list(api.runs.stream(run_id))
    assert [(e.seq, e.kind) for e in every] == stored


async def _prune(db: Path) -> int:
    store = await SQLiteBlackboard.open(db)
    try:
        return (await store.prune_runs(finished_before=0)).folded  # deletes no run
    finally:
        await store.close()


def test_a_stream_resumed_inside_folded_deltas_goes_on_with_the_next_event(
        server: Server) -> None:
    run_id = _start(server.url, lines=2, size=16, every=0.01)
    url = f"{server.url}/v1/runs/{run_id}/stream"
    with httpx.stream("GET", url, timeout=30) as r:
        whole = read_events(r)
    deltas = [seq for seq, kind, _ in whole if kind == "model.delta"]
    assert len(deltas) >= 4 and whole[-1][1] == "run.completed"
    assert asyncio.run(_prune(server.db)) >= len(deltas)  # this run's, and earlier runs'
    stored = _stored(server.db, run_id)  # every call completed its step: all folded
    assert stored == [(seq, kind) for seq, kind, _ in whole if kind != "model.delta"]
    for cursor in (deltas[0] - 1, deltas[0], deltas[1], deltas[-1]):
        with httpx.stream("GET", url, headers={"Last-Event-ID": str(cursor)},
                          timeout=30) as r:
            rest = read_events(r)
        assert [(seq, kind) for seq, kind, _ in rest] == [e for e in stored if e[0] > cursor]
    with Client(server.url) as api:  # the client's own resumption reads the same
        assert [(e.seq, e.kind) for e in api.runs.stream(run_id)] == stored
