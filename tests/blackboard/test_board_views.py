"""Entries and notes as people read them, each with its scope: ``orchestra board RUN
entries`` / ``notes`` (text and ``--json``), the HTTP API (``GET /v1/runs/{id}/entries``,
``/notes``) and the board page. They are the operator's views: every scope."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from examples.research_board import build
from orchestra import Coordinator, Scope, SQLiteBlackboard
from orchestra.cli.main import main
from orchestra.server.app import create_app
from orchestra.server.services import ServerSettings
from orchestra.store import NewNote


async def _run(db: Path) -> str:
    async with await SQLiteBlackboard.open(db) as store:
        run = await Coordinator(store, build({})).run({"subject": "tides"})
        assert run.status == "completed"
        return run.id


def test_orchestra_board_shows_entries_with_their_scope(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "b.db"
    run_id = asyncio.run(_run(db))
    capsys.readouterr()
    assert main(["board", run_id, "entries", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("entry Question by planner [public]: ")
    assert sum("entry Thought by critic [private]" in line for line in lines) == 4
    assert main(["board", run_id, "entries", "--db", str(db), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["entries"]
    assert found[-1]["type"] == "Report" and found[-1]["scope"] == {"kind": "public",
                                                                   "names": []}


async def test_the_api_lists_entries_with_their_scope(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    run_id = await _run(db)
    async with await SQLiteBlackboard.open(db) as store:
        app = create_app(store, ServerSettings(workers=0))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://test") as client:
            page = (await client.get(f"/v1/runs/{run_id}/entries",
                                     params={"type": "Thought"})).json()
            assert [e["scope"]["kind"] for e in page["entries"]] == ["private"] * 4
            assert page["entries"][0]["author"] == f"{run_id}/critic"
            missing = await client.get("/v1/runs/nope/entries")
            assert missing.status_code == 404


async def test_the_board_page_shows_entries_with_their_scope(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    run_id = await _run(db)
    async with await SQLiteBlackboard.open(db) as store:
        app = create_app(store, ServerSettings(workers=0))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://127.0.0.1") as client:
            html = (await client.get(f"/runs/{run_id}")).text
    assert 'id="entries-h">Entries <span class="muted">16</span>' in html
    assert html.count('<span class="tag">private</span>') == 4
    assert "<b>Report</b> by <b>writer</b>" in html


def test_notes_show_their_scope_where_it_is_not_public(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "b.db"
    run_id = asyncio.run(_run(db))

    async def post() -> None:
        async with await SQLiteBlackboard.open(db) as store:
            await store.post_note(run_id, "operator", NewNote("for the writer", ("hint",),
                                                              scope=Scope.roles("writer")))
            await store.post_note(run_id, "operator", NewNote("said aloud", ("hint",)))

    asyncio.run(post())
    capsys.readouterr()
    assert main(["board", run_id, "notes", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["note [hint] operator: said aloud",
                         "note [hint] operator [roles:writer]: for the writer"]
    assert main(["board", run_id, "notes", "--db", str(db), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["notes"]
    assert [n["scope"] for n in found[:2]] == [{"kind": "public", "names": []},
                                              {"kind": "roles", "names": ["writer"]}]

    async def views() -> tuple[list[dict[str, object]], str]:
        async with await SQLiteBlackboard.open(db) as store:
            app = create_app(store, ServerSettings(workers=0))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                         base_url="http://127.0.0.1") as client:
                page = (await client.get(f"/v1/runs/{run_id}/notes",
                                         params={"tag": "hint"})).json()
                return page["notes"], (await client.get(f"/runs/{run_id}")).text

    api, html = asyncio.run(views())
    assert [n["scope"]["kind"] for n in api] == ["public", "roles"]
    assert html.count('<span class="tag">roles:writer</span>') == 1
