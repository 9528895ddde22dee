"""A real ``orchestra serve`` in a child process, and helpers to read its streams."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "tests.server.svc_pipeline:build"
TERMINAL = ("run.completed", "run.failed", "run.cancelled")
T = TypeVar("T")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ORCHESTRA_MODEL", "ORCHESTRA_LOG", "ORCHESTRA_TOKEN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@dataclass
class Server:
    """``orchestra serve`` on 127.0.0.1; ``url`` is known once it printed its ready line."""

    db: Path
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen[str] | None = None
    url: str = ""
    stderr_path: Path | None = None

    def start(self, timeout: float = 60.0) -> Server:
        self.stderr_path = self.db.with_suffix(f".{time.monotonic_ns()}.stderr")
        argv = [sys.executable, "-m", "orchestra.cli.main", "serve", "--db", str(self.db),
                "--port", str(self.port), *self.args]
        self.proc = subprocess.Popen(argv, env=child_env(**self.env), stdout=subprocess.PIPE,
                                     stderr=self.stderr_path.open("w"), text=True)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline()  # the ready line (or EOF if it refused to start)
        if "listening on " not in line:
            self.proc.wait(timeout=max(deadline - time.monotonic(), 1))
            raise AssertionError(f"serve did not start: {line!r}\n{self.stderr()}")
        self.url = line.split("listening on ", 1)[1].split()[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        wait_for(lambda: _answers(self.url), timeout=timeout, what="server answering")
        return self

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path else ""

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/v1/runs", timeout=2)
    except httpx.TransportError:
        return False
    return True


def wait_for(check: Callable[[], T], *, timeout: float = 60.0, interval: float = 0.05,
             what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def read_events(response: httpx.Response, *, stop_after: int | None = None
                ) -> list[tuple[int, str, dict[str, Any]]]:
    """``(seq, kind, data)`` of each event frame of an open SSE response, until the
    stream ends (or ``stop_after`` events). Comments and id-less frames are skipped."""
    import json

    events: list[tuple[int, str, dict[str, Any]]] = []
    frame: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if "id" in frame:
                events.append((int(frame["id"]), frame.get("event", "message"),
                               json.loads(frame.get("data", "{}"))))
                if stop_after is not None and len(events) >= stop_after:
                    return events
            frame = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(":")
            frame[key] = value[1:] if value.startswith(" ") else value
    return events


def effects(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def stranded_run(db: Path) -> tuple[str, str]:
    """Two live runs made by another process: one on version ``1@old`` of a pipeline no
    process here builds, and one on ``2@new`` that a live process serves (for a minute).
    The first needs a worker of its version; their ids."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from orchestra import NewTask, SQLiteBlackboard

    async def make() -> tuple[str, str]:
        store = await SQLiteBlackboard.open(db)
        try:
            old = await store.create_run("no_such_module:build", {}, version="1@old",
                                         tasks=[NewTask("x", {})])
            new = await store.create_run("no_such_module:build", {}, version="2@new",
                                         tasks=[NewTask("x", {})])
            await store.serve_run(new.id, "elsewhere", 60)
        finally:
            await store.close()
        return old.id, new.id

    # its own thread: a caller may be inside an event loop (Playwright's sync API is)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
