"""``orchestra serve`` under load: ``python -m benchmarks.server``.

Measures, against a real server process on 127.0.0.1:

* **event latency**, commit to client: a run parks on an approval while the
  followers connect (1, then 100, spread over client processes so that one
  client's parsing does not queue the others), then the approval is granted and
  the run emits a steady stream of events; each follower records when each frame
  arrived. Latency = arrival time - the event's ``at`` (taken in the committing
  transaction, so it includes the commit itself). Medians over ``--repeats`` trials.
* **server memory** (VmRSS) with no stream open and with 100 open idle streams.
* **GET /v1/runs/{id} requests per second** from ``--concurrency`` keep-alive
  connections in one client process, for ``--seconds``.

The client processes share the machine's cores with the server: figures are an
upper bound on latency and a lower bound on throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "benchmarks.server.pipeline:build"
TERMINAL = ("run.completed", "run.failed", "run.cancelled")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ORCHESTRA_TOKEN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(REPO)
    return env


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "orchestra.cli.main", "serve", "--db", str(db), "--port", "0"]
    proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on " not in line:
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split("listening on ", 1)[1].split()[0]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (load-independent cost)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_status(url: str, run_id: str, status: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while httpx.get(f"{url}/v1/runs/{run_id}").json()["status"] != status:
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run_id} never reached {status}")
        time.sleep(0.05)


# -- the follower child: n streams of one run over raw sockets (a light client: what is
# measured is the server, not an HTTP library's parsing) ---------------------------------
async def _follow(host: str, port: int, run_id: str, ready: asyncio.Event, opened: list[int],
                  n: int) -> list[tuple[int, float, float]]:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /v1/runs/{run_id}/stream HTTP/1.1\r\nHost: {host}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower(), head
    opened.append(1)
    if len(opened) == n:
        ready.set()
    rows: list[tuple[int, float, float]] = []
    buffer = b""
    try:
        while True:
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                return rows
            chunk = (await reader.readexactly(size + 2))[:-2]
            now = time.time()
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                for line in frame.split(b"\n"):
                    if line.startswith(b"data: "):
                        data = json.loads(line[6:])
                        rows.append((data["seq_id"], data["at"], now))
                        if data["kind"] in TERMINAL:
                            return rows
    finally:
        writer.close()


async def follower_child(url: str, run_id: str, n: int) -> None:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    ready, opened = asyncio.Event(), []
    jobs = [asyncio.create_task(_follow(host, int(port), run_id, ready, opened, n))
            for _ in range(n)]
    await ready.wait()
    print("ready", flush=True)
    results = await asyncio.gather(*jobs)
    print(json.dumps(results), flush=True)


def latency_trial(url: str, pid: int, followers: int, procs: int, turns: int,
                  delay: float) -> dict[str, Any]:
    run_id = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": {
        "park": True, "turns": turns, "delay": delay}}).json()["run_id"]
    wait_status(url, run_id, "waiting")
    rss_before = rss_kib(pid)
    per = [followers // procs + (1 if i < followers % procs else 0) for i in range(procs)]
    children = [subprocess.Popen([sys.executable, "-m", "benchmarks.server", "_follow", url,
                                  run_id, str(n)], env=_env(), stdout=subprocess.PIPE,
                                 text=True) for n in per if n]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    rss_open = rss_kib(pid)
    [approval] = httpx.get(f"{url}/v1/runs/{run_id}/approvals").json()
    cpu_before = cpu_seconds(pid)
    go = time.time()
    httpx.post(f"{url}/v1/approvals/{approval['id']}", json={"approve": True})
    latencies: list[float] = []
    outputs = [child.communicate(timeout=600)[0] for child in children]
    cpu = cpu_seconds(pid) - cpu_before
    complete = 0
    last_seq = None
    for out in outputs:
        for rows in json.loads(out.strip().splitlines()[-1]):
            seqs = [r[0] for r in rows]
            last_seq = last_seq or seqs[-1]
            complete += seqs == list(range(seqs[0], seqs[0] + len(seqs))) and seqs[-1] == last_seq
            latencies += [(recv - at) * 1000 for _, at, recv in rows if at >= go]
    latencies.sort()
    return {"followers": followers, "events": len(latencies) // followers,
            "complete_streams": complete,
            "p50_ms": latencies[len(latencies) // 2],
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "max_ms": latencies[-1], "rss_idle_kib": rss_before, "rss_streams_kib": rss_open,
            "server_cpu_us_per_frame": cpu / len(latencies) * 1e6}


async def _hammer(url: str, path: str, concurrency: int, seconds: float) -> int:
    done = 0
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits) as client:
        deadline = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                response = await client.get(path)
                response.raise_for_status()
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


def rps_trial(url: str, pid: int, concurrency: int, seconds: float) -> tuple[float, float]:
    """Requests/s, and the server's CPU milliseconds per request."""
    run_id = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": {
        "turns": 5, "delay": 0}}).json()["run_id"]
    wait_status(url, run_id, "completed")
    cpu_before = cpu_seconds(pid)
    done = asyncio.run(_hammer(url, f"/v1/runs/{run_id}", concurrency, seconds))
    return done / seconds, (cpu_seconds(pid) - cpu_before) / done * 1000


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_follow":
        asyncio.run(follower_child(argv[1], argv[2], int(argv[3])))
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks.server", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--turns", type=int, default=100, help="tool calls per run (3 events each)")
    p.add_argument("--delay", type=float, default=0.02, help="seconds per model call")
    p.add_argument("--procs", type=int, default=4, help="client processes for 100 followers")
    p.add_argument("--seconds", type=float, default=5.0, help="length of the requests/s run")
    p.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp) / "bench.db")
        try:
            results: dict[int, list[dict[str, Any]]] = {1: [], 100: []}
            for _ in range(args.repeats):
                for followers in (1, 100):
                    trial = latency_trial(url, proc.pid, followers,
                                          1 if followers == 1 else args.procs, args.turns,
                                          args.delay)
                    print(json.dumps(trial), file=sys.stderr, flush=True)
                    results[followers].append(trial)
            rps_cpu = [rps_trial(url, proc.pid, args.concurrency, args.seconds)
                       for _ in range(args.repeats)]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"orchestra serve, {args.repeats} trials, {args.turns} tool calls per run at "
          f"{args.delay * 1000:.0f} ms per model call; median (min-max)")
    for followers, trials in results.items():
        complete = sum(t["complete_streams"] for t in trials)
        print(f"  {followers:>3} follower(s): commit-to-client p50 "
              f"{_spread([t['p50_ms'] for t in trials])} ms, p99 "
              f"{_spread([t['p99_ms'] for t in trials])} ms, max "
              f"{_spread([t['max_ms'] for t in trials])} ms; {trials[0]['events']} live events "
              f"per stream; {complete}/{followers * len(trials)} streams complete and in order; "
              f"server CPU {_spread([t['server_cpu_us_per_frame'] for t in trials])} us per "
              "frame delivered")
    many = results[100]
    print(f"  server RSS: {_spread([t['rss_idle_kib'] / 1024 for t in many])} MiB with no "
          f"stream, {_spread([t['rss_streams_kib'] / 1024 for t in many])} MiB with 100 open "
          "streams")
    rps, cpu_ms = [r for r, _ in rps_cpu], [c for _, c in rps_cpu]
    print(f"  GET /v1/runs/{{id}}: {_spread(rps)} requests/s ({args.concurrency} connections, "
          f"{args.seconds:.0f} s); server CPU {_spread(cpu_ms)} ms per request, i.e. "
          f"{1000 / statistics.median(cpu_ms):.0f} requests/s per core")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
