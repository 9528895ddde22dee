"""Shared by the MCP tests: the tests' own server declared for a role, a Streamable HTTP
server on a free local port, and a run driven to its end on a fresh store."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from orchestra import Coordinator, MCPServer, Model, NewTask, Pipeline, Role, SQLiteBlackboard
from orchestra.types import Run

SERVER = Path(__file__).with_name("effects_server.py")


def effects(tmp: Path, *args: str, delay: float = 0.0, extra: bool = False,
            **kw: Any) -> MCPServer:
    """The tests' own server over stdio, counting its effects in ``tmp/effects.log``
    (``extra``: with one more tool, as if upgraded; it refuses to start while
    ``tmp/refuse`` exists)."""
    env = {"EFFECTS": str(tmp / "effects.log"), "APPEND_DELAY": str(delay),
           "PIDFILE": str(tmp / "server.pid"), "REFUSE": str(tmp / "refuse")} | (
        {"EFFECTS_EXTRA": "1"} if extra else {})
    kw.setdefault("name", "effects")
    return MCPServer.stdio(sys.executable, [str(SERVER), *args], env=env, **kw)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(tmp: Path) -> Iterator[str]:
    """The tests' own server over Streamable HTTP on 127.0.0.1 (uvicorn in a child)."""
    port = free_port()
    env = {"EFFECTS": str(tmp / "effects.log"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert time.monotonic() < deadline, "the HTTP MCP server did not come up"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def pipeline(role: Role, model: Model, **kw: Any) -> Pipeline:
    return Pipeline("mcp", roles=[role], start=lambda i: [NewTask(role.name, i)], model=model,
                    **kw)


async def drive(db: Path, pipe: Pipeline, run_id: str = "r1", *,
                resume: bool = False) -> tuple[Run, SQLiteBlackboard, Coordinator]:
    """Run (or resume) ``pipe``; the caller closes the store and ``coord.mcp``."""
    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, pipe)
    run = await (coord.resume(run_id) if resume else coord.run("go", run_id=run_id))
    return run, store, coord


async def steps(store: SQLiteBlackboard, run_id: str) -> list[Any]:
    out: list[Any] = []
    for task in await store.list_tasks(run_id):
        out += await store.get_steps(task.id, task.retries)
    return out


def names(tools: Sequence[Any]) -> list[str]:
    return [t.name for t in tools]
