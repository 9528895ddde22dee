"""A run recorded with MCP tools replays from the journal: a fork resumed with its servers
absent gives byte-identical messages and results; a resumed task keeps the tool list it
recorded, and a server whose tools changed meanwhile is reported, not mixed in."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

from mcp_helpers import drive, effects, lines, names, pipeline

from orchestra import (
    Coordinator,
    MCPServer,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    reply,
    tool_call,
)
from orchestra.models.record import RecordingModel, ReplayModel, read_recording


def _role(*servers: MCPServer, **attrs: object) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(servers), "recall": False, **attrs})
    return cls()  # type: ignore[no-any-return]


def _script() -> list[object]:
    return [reply("", tool_call("append", {"text": "one"}), tool_call("put", {
        "name": "k", "value": "v"})), reply("", tool_call("peek", {})), reply("done")]


async def _history(store: SQLiteBlackboard, run_id: str) -> str:
    (task,) = await store.list_tasks(run_id)
    msgs = await store.get_messages(f"{run_id}/worker")
    steps = await store.get_steps(task.id, task.retries)
    return json.dumps({
        "messages": [[m.role, m.content, [dataclasses.astuple(c) for c in m.tool_calls],
                      m.tool_call_id, m.name] for m in msgs],
        "steps": [[s.step, s.kind, s.name, s.status, s.output] for s in steps],
        "result": task.result}, sort_keys=True)


async def test_a_fork_replays_with_the_servers_absent(tmp_path: Path) -> None:
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path)), ScriptedModel(_script())))
    try:
        await coord.mcp.aclose()
        assert run.status == "completed", run.error
        original = await _history(store, "r1")
        # the run as it was just before its last model call: every tool step recorded
        at = max(e.seq for e in await store.events("r1")
                 if e.kind == "step.completed" and e.data["kind"] == "tool")
        await store.fork_run("r1", at, fork_id="f1")
        absent = MCPServer.stdio("/nonexistent/effects-server", name="effects")
        model = ScriptedModel([reply("done")])
        coord = Coordinator(store, pipeline(_role(absent), model))
        fork = await coord.resume("f1")
        assert fork.status == "completed", fork.error
        assert (await _history(store, "f1")).replace("f1", "r1") == original
        assert names(model.calls[0].tools) == ["peek", "put", "append", "noop", "touch",
                                               "shaped"]
        assert len(lines(tmp_path / "effects.log")) == 1  # nothing was sent again
        assert coord.mcp._live == {}  # no server was started
    finally:
        await store.close()


async def test_a_resumed_task_keeps_its_tools_and_reports_a_changed_server(
        tmp_path: Path) -> None:
    first = ScriptedModel([reply("", tool_call("append", {"text": "x"})), reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path), needs_approval=frozenset({"append"})), first))
    await coord.mcp.aclose()
    assert run.status == "waiting"
    (approval,) = await store.list_approvals("r1", status="pending")
    await store.decide_approval(approval.id, approved=True, by="test")
    await store.close()
    # the server was upgraded meanwhile: it now lists one more tool
    again = ScriptedModel([reply("done")])  # the first reply replays from the journal
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(
        effects(tmp_path, extra=True), needs_approval=frozenset({"append"})), again),
        resume=True)
    try:
        assert run.status == "completed", run.error
        assert "shout" not in names(again.calls[-1].tools)  # the recorded list, not today's
        (changed,) = [e for e in await store.events("r1") if e.kind == "mcp.tools_changed"]
        assert changed.data["server"] == "effects" and changed.data["added"] == ["shout"]
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["x"]
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_replay_model_run_takes_its_tools_from_the_recording(tmp_path: Path) -> None:
    """A new run driven by ``replay:`` models reaches no server: the recording holds the
    tool lists and results the recorded run's tasks saw (its tool tape)."""
    recording = tmp_path / "session.jsonl"
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path)), RecordingModel(ScriptedModel(_script()), recording)))
    try:
        await coord.mcp.aclose()
        assert run.status == "completed", run.error
        original = await _history(store, "r1")
        absent = MCPServer.stdio("/nonexistent/effects-server", name="effects")
        replay = await asyncio.to_thread(ReplayModel, recording)
        coord = Coordinator(store, pipeline(_role(absent), replay))
        again = await coord.run("go", run_id="r2")
        assert again.status == "completed", again.error
        assert (await _history(store, "r2")).replace("r2", "r1") == original
        assert replay.remaining == 0
        assert len(lines(tmp_path / "effects.log")) == 1  # nothing was sent again
        calls = await asyncio.to_thread(read_recording, recording)
        assert len(calls) == 3  # the model's calls; the tape's lines are skipped
    finally:
        await store.close()


async def test_a_replayed_call_the_recording_lacks_is_an_error_naming_it(
        tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path)), RecordingModel(ScriptedModel(_script()), recording)))
    try:
        await coord.mcp.aclose()
        assert run.status == "completed", run.error
        # the recorded answer now asks to append something else: the tape has no such call
        text = await asyncio.to_thread(recording.read_text)
        rows = [json.loads(line) for line in text.splitlines()]
        assert sum("mcp" in r for r in rows) == 1 + 3  # a tool list, three calls
        for row in rows:
            if "key" in row and row["response"]["tool_calls"]:
                for call in row["response"]["tool_calls"]:
                    call["arguments"] = call["arguments"].replace('"one"', '"two"')
        await asyncio.to_thread(recording.write_text, "".join(json.dumps(r) + "\n"
                                                               for r in rows))
        absent = MCPServer.stdio("/nonexistent/effects-server", name="effects")
        replay = await asyncio.to_thread(ReplayModel, recording)
        again = await Coordinator(store, pipeline(_role(absent), replay)).run("go", run_id="r2")
        assert again.status == "failed"
        assert "holds no (unused) call of MCP tool 'append'" in (again.error or "")
        assert '"two"' in (again.error or "")
    finally:
        await store.close()
