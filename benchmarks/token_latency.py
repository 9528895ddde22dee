"""How soon a reader sees what a model writes: from a call's first token (the moment the
adapter receives it) to the call's first ``model.delta`` event as an SSE client and an
``orchestra events --follow`` reader receive it; and the store writes a streaming call
adds per second.

    python -m benchmarks.token_latency --base-url http://127.0.0.1:PORT/v1 [--calls 6]
    python -m benchmarks.token_latency --fake [--tokens-per-s 15]

Needs an OpenAI-compatible server (``/work/shared/tools/llama-server.sh PORT`` serves a
local model), or ``--fake``: a loopback server streaming a fixed answer at a local
model's pace (orchestra's part of the latency, without a model taking the CPU).
The run is made by a real ``orchestra serve`` (its SSE clients are woken by its own
commits); the ``--follow`` reader is another process on the same store (it sees
commits by polling, as any reader in another process does). One JSON line of results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from orchestra import NewTask, Pipeline, Role
from orchestra.models.base import DeltaSink, ModelRequest, ModelResponse, ModelSettings
from orchestra.models.openai import OpenAIModel

REF = "benchmarks.token_latency:build"
TOPICS = ["tides", "volcanoes", "bees", "glaciers", "comets", "coral reefs", "deserts",
          "lighthouses", "owls", "rivers"]


class Writer(Role):
    """You write one short paragraph about the topic you are given. Plain text only."""

    name = "writer"
    settings = ModelSettings(max_tokens=120, temperature=0.0)


class _FirstToken:
    """A sink that notes when the call's first piece arrived, then passes all on."""

    def __init__(self, inner: DeltaSink, log: Path, task: str) -> None:
        self.inner, self.log, self.task, self.seen = inner, log, task, False

    def _note(self) -> None:
        if not self.seen:
            self.seen = True
            with self.log.open("a") as f:
                f.write(json.dumps({"prompt": self.task, "at": time.time()}) + "\n")

    def text(self, delta: str) -> None:
        self._note()
        self.inner.text(delta)

    def arguments(self, index: int, name: str, delta: str) -> None:
        self._note()
        self.inner.arguments(index, name, delta)

    def retry(self) -> None:
        self.inner.retry()


class TimedModel:
    """The served model, noting each call's first token in ``$BENCH_FIRST_TOKENS``; no
    call begins before the file ``$BENCH_GO`` exists (both readers are up by then)."""

    def __init__(self, inner: OpenAIModel, log: Path, go: Path) -> None:
        self.inner, self.log, self.go, self.name = inner, log, go, inner.name

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.request(request)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        # the task's input is its last user message (the agent's history holds the others)
        prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        while not self.go.exists():  # noqa: ASYNC110 (a file the benchmark's process makes)
            await asyncio.sleep(0.01)
        return await self.inner.request_stream(request, _FirstToken(sink, self.log, prompt))


def topic(i: int) -> str:
    """Call ``i``'s task input, unique (how a first token is matched to its task)."""
    return f"Topic: {TOPICS[i % len(TOPICS)]} (#{i + 1})"


def build(run_input: Any) -> Pipeline:
    calls = int(run_input.get("calls", 6)) if isinstance(run_input, dict) else 6
    model = TimedModel(OpenAIModel("local", base_url=os.environ["BENCH_BASE_URL"],
                                   timeout=600, name="local-bench"),
                       Path(os.environ["BENCH_FIRST_TOKENS"]), Path(os.environ["BENCH_GO"]))
    return Pipeline("token-latency", roles=[Writer()], model=model,
                    start=lambda _: [NewTask("writer", topic(i), max_attempts=1)
                                     for i in range(calls)],
                    ref=REF)


_TERMINAL = ("run.completed", "run.failed", "run.cancelled")
_READY = ""
"""The key under which a reader notes when it received its first event (it was up)."""


def _sse(url: str, seen: dict[str, float]) -> None:
    with httpx.stream("GET", url, timeout=httpx.Timeout(30, read=600)) as r:
        frame: dict[str, str] = {}
        for line in r.iter_lines():
            if line == "" and "data" in frame:
                seen.setdefault(_READY, time.time())
            if line == "" and frame.get("event") == "model.delta":
                data = json.loads(frame["data"])["data"]
                if data.get("first"):
                    seen.setdefault(data["task"], time.time())
            if line == "":
                if frame.get("event") in _TERMINAL:
                    return
                frame = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                frame[key] = value


def _follow(proc: subprocess.Popen[str], seen: dict[str, float]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        seen.setdefault(_READY, time.time())
        if event["kind"] == "model.delta" and event["data"].get("first"):
            seen.setdefault(event["data"]["task"], time.time())


def _lags(seen: dict[str, float], first_token: dict[str, float]) -> dict[str, Any]:
    """Each call's first token to its first delta seen by a reader; calls whose first
    token came before the reader was up (its start-up, not the delay) are left out."""
    ready = seen.get(_READY, float("inf"))
    lags = [seen[task] - at for task, at in first_token.items() if task in seen and at >= ready]
    out: dict[str, Any] = _stats(lags) if lags else {"n": 0}
    out["left_out"] = len(first_token) - len(lags)
    return out


def _stats(lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1),
            "n": len(ordered)}


def fake_server(tokens_per_s: float) -> str:
    """A loopback chat-completions server streaming 120 words at ``tokens_per_s``."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for i in range(120):
                time.sleep(1 / tokens_per_s)
                chunk = {"id": "c", "model": "fake", "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {"content": f"word{i} "},
                                      "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            end = {"id": "c", "model": "fake", "choices": [{"index": 0, "delta": {},
                                                            "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 20, "completion_tokens": 120}}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.token_latency")
    p.add_argument("--base-url")
    p.add_argument("--fake", action="store_true", help="a loopback server, not a model")
    p.add_argument("--tokens-per-s", type=float, default=15.0)
    p.add_argument("--calls", type=int, default=6)
    args = p.parse_args(argv)
    if args.fake:
        args.base_url = fake_server(args.tokens_per_s)
    if not args.base_url:
        p.error("give --base-url URL (an OpenAI-compatible server) or --fake")
    root = Path(tempfile.mkdtemp(prefix="token-latency-"))
    db, firsts, go = root / "l.db", root / "first.jsonl", root / "go"
    env = {**os.environ, "BENCH_BASE_URL": args.base_url, "BENCH_FIRST_TOKENS": str(firsts),
           "BENCH_GO": str(go), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cli = [sys.executable, "-m", "orchestra.cli.main"]
    serve = subprocess.Popen([*cli, "serve", "--db", str(db), "--port", "0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert serve.stdout is not None
        url = serve.stdout.readline().split("listening on ", 1)[1].split()[0]
        run_id = httpx.post(f"{url}/v1/runs", json={"pipeline": REF, "input": {
            "calls": args.calls}}).json()["run_id"]
        by_sse: dict[str, float] = {}
        by_follow: dict[str, float] = {}
        follow = subprocess.Popen([*cli, "events", run_id, "--follow", "--json", "--db",
                                   str(db)], env=env, stdout=subprocess.PIPE, text=True)
        readers = [threading.Thread(target=_sse, args=(f"{url}/v1/runs/{run_id}/stream",
                                                       by_sse)),
                   threading.Thread(target=_follow, args=(follow, by_follow))]
        for t in readers:
            t.start()
        deadline = time.monotonic() + 120
        while not (_READY in by_sse and _READY in by_follow) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()  # the calls begin: a reader's start-up is not counted as its delay
        for t in readers:
            t.join(timeout=1800)
        follow.wait(timeout=60)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        items = [{"kind": k, "data": json.loads(d), "at": at} for k, d, at in conn.execute(
            "SELECT kind, data, at FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
        inputs = {task: json.loads(text) for task, text in conn.execute(
            "SELECT id, input FROM tasks WHERE run_id = ?", (run_id,))}
    print(json.dumps(summary(items, inputs, firsts, by_sse, by_follow) | {
        "server": "fake" if args.fake else args.base_url,
        "load_avg": [round(x, 2) for x in os.getloadavg()]}))


def summary(items: list[dict[str, Any]], inputs: dict[str, str], firsts: Path,
            by_sse: dict[str, float], by_follow: dict[str, float]) -> dict[str, Any]:
    """The figures: each call's first token (matched to its task by the task's input in
    the prompt) to its first delta at each reader; the delta writes a call adds a second
    while it streams, and all calls together."""
    first_token: dict[str, float] = {}
    for line in firsts.read_text().splitlines():
        noted = json.loads(line)
        for task, text in inputs.items():
            if text in noted["prompt"]:
                first_token.setdefault(task, noted["at"])
    deltas = [e for e in items if e["kind"] == "model.delta"]
    per_call: dict[str, list[float]] = {}
    for e in deltas:
        per_call.setdefault(e["data"]["task"], []).append(e["at"])
    rates = [(len(ats) - 1) / (ats[-1] - first_token[task]) for task, ats in per_call.items()
             if task in first_token and len(ats) > 1 and ats[-1] > first_token[task]]
    span = (max(e["at"] for e in deltas) - min(first_token.values())
            if deltas and first_token else 0.0)
    return {
        "calls": len(first_token),
        "first_token_to_sse": _lags(by_sse, first_token),
        "first_token_to_follow": _lags(by_follow, first_token),
        "delta_events": len(deltas), "events": len(items),
        "delta_writes_per_s_per_streaming_call": round(statistics.median(rates), 2)
        if rates else None,
        "delta_writes_per_s_all_calls": round(len(deltas) / span, 2) if span > 0 else None,
        "chars_per_delta_event": round(statistics.median(
            [len(e["data"].get("text", "")) for e in deltas]), 1) if deltas else None,
    }


if __name__ == "__main__":
    main()
