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
                f.write(json.dumps({"task": self.task, "at": time.time()}) + "\n")

    def text(self, delta: str) -> None:
        self._note()
        self.inner.text(delta)

    def arguments(self, index: int, name: str, delta: str) -> None:
        self._note()
        self.inner.arguments(index, name, delta)

    def retry(self) -> None:
        self.inner.retry()


class TimedModel:
    """The served model, noting each call's first token in ``$BENCH_FIRST_TOKENS``."""

    def __init__(self, inner: OpenAIModel, log: Path) -> None:
        self.inner, self.log, self.name = inner, log, inner.name

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.request(request)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        task = request.messages[-1].content[-40:]
        return await self.inner.request_stream(request, _FirstToken(sink, self.log, task))


def build(run_input: Any) -> Pipeline:
    calls = int(run_input.get("calls", 6)) if isinstance(run_input, dict) else 6
    model = TimedModel(OpenAIModel("local", base_url=os.environ["BENCH_BASE_URL"],
                                   timeout=600, name="local-bench"),
                       Path(os.environ["BENCH_FIRST_TOKENS"]))
    return Pipeline("token-latency", roles=[Writer()], model=model,
                    start=lambda _: [NewTask("writer", f"Topic: {TOPICS[i % len(TOPICS)]}",
                                             max_attempts=1) for i in range(calls)],
                    ref=REF)


def _sse(url: str, seen: dict[str, float]) -> None:
    with httpx.stream("GET", url, timeout=httpx.Timeout(30, read=600)) as r:
        frame: dict[str, str] = {}
        for line in r.iter_lines():
            if line == "" and frame.get("event") == "model.delta":
                data = json.loads(frame["data"])["data"]
                if data.get("first"):
                    seen.setdefault(data["task"], time.time())
            if line == "":
                if frame.get("event") == "run.completed":
                    return
                frame = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                frame[key] = value


def _follow(proc: subprocess.Popen[str], seen: dict[str, float]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["kind"] == "model.delta" and event["data"].get("first"):
            seen.setdefault(event["data"]["task"], time.time())


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
    db, firsts = root / "l.db", root / "first.jsonl"
    env = {**os.environ, "BENCH_BASE_URL": args.base_url, "BENCH_FIRST_TOKENS": str(firsts),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
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
        for t in readers:
            t.join(timeout=1800)
        follow.wait(timeout=60)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        items = [{"kind": k, "data": json.loads(d), "at": at} for k, d, at in conn.execute(
            "SELECT kind, data, at FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
    first_tokens = [json.loads(line) for line in firsts.read_text().splitlines()]
    # first tokens are noted in call order: the i-th call's first delta is the i-th first
    deltas = [e for e in items if e["kind"] == "model.delta"]
    starts = [e for e in deltas if e["data"].get("first")]
    tasks = [e["data"]["task"] for e in starts]
    t0 = [f["at"] for f in first_tokens]
    per_call = {}
    for e in deltas:
        per_call.setdefault(e["data"]["task"], []).append(e["at"])
    rates = [(len(ats) - 1) / (ats[-1] - t) for (task, ats), t in zip(
        per_call.items(), t0, strict=False) if len(ats) > 1 and ats[-1] > t]
    print(json.dumps({
        "calls": len(tasks), "server": "fake" if args.fake else args.base_url,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "first_token_to_sse": _stats([by_sse[k] - t for k, t in zip(tasks, t0, strict=False)
                                      if k in by_sse]),
        "first_token_to_follow": _stats([by_follow[k] - t for k, t in zip(tasks, t0,
                                                                          strict=False)
                                         if k in by_follow]),
        "delta_events": len(deltas), "events": len(items),
        "delta_writes_per_s_per_streaming_call": round(statistics.median(rates), 2)
        if rates else None,
        "chars_per_delta_event": round(statistics.median(
            [len(e["data"].get("text", "")) for e in deltas]), 1) if deltas else None,
    }))


if __name__ == "__main__":
    main()
