"""Live progress of a run, read from its event log (so it works for any process).

On a terminal: a small redrawn panel (each agent: what it is doing, steps,
tokens; what each active one is writing, one line each; the latest events).
Otherwise: one plain line per event, and what the agents write as ``role | line``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from orchestra._types import DELTA_EVENT, Event, Run
from orchestra.cli.cost_text import local_line, resume_hint, unpriced_line, usage_line
from orchestra.cli.inspect_cmds import _role_limits, concurrency_waits, event_line, show_data
from orchestra.cli.live_text import LiveText
from orchestra.store import Blackboard

QUIET_KINDS = frozenset({"step.started", "task.claimed"})
WAIT_WORTH_SAYING = 10.0
"""Seconds the same concurrency wait must last before the console mentions it."""


@dataclass
class _AgentLine:
    doing: str = "idle"
    steps: int = 0
    tokens: int = 0


def step_done(kind: object, name: object) -> str:
    """``tool run_tests done``, ``model call done`` (not "model model"), ``compaction done``."""
    if kind == "model":
        return "model call done"
    return f"{kind} done" if name in (None, "", kind) else f"{kind} {name} done"


class Progress:
    def __init__(self, store: Blackboard, run_id: str, *, json_mode: bool,
                 tty: bool, after: int = 0, db: str = "orchestra.db",
                 clock: Callable[[], float] = time.monotonic, live: bool = True,
                 tokens: bool = True) -> None:
        self.after = after
        self.db = db  # every printed hint names the store, so pasting it works
        self.store, self.run_id = store, run_id
        self.json_mode, self.tty = json_mode, tty
        self.agents: dict[str, _AgentLine] = {}
        self.task_role: dict[str, str] = {}
        self.recent: list[str] = []
        self.started = time.monotonic()
        self._drawn = 0
        self.waits: list[str] = []  # why ready work is not running (a concurrency limit)
        self._checked = float("-inf")
        self._limits: dict[str, int] | None = None
        self._clock = clock
        self._seen: list[str] = []  # the latest waits, and since when they are the same
        self._seen_since = 0.0
        self.live = live  # False (-q): nothing while the run goes, the summary at its end
        self.text = LiveText() if tokens else None  # what each agent is writing

    async def watch(self) -> None:
        last = 0
        if self.json_mode or not self.live:
            return
        with contextlib.suppress(asyncio.CancelledError):
            async for event in self.store.follow(self.run_id, starting_after=self.after):
                last = event.seq
                written = self.text.apply(event) if self.text is not None else []
                if event.kind == DELTA_EVENT:
                    if self.text is None:
                        continue
                else:
                    self._apply(event)
                    await self._check_waits()
                if self.tty:
                    self._redraw()
                    continue
                for line in written:
                    print(line, flush=True)
                if event.kind not in QUIET_KINDS and event.kind != DELTA_EVENT:
                    print(event_line(event), flush=True)
        del last

    async def _check_waits(self) -> None:
        """Every few seconds: is ready work held back by a concurrency limit? Say so once,
        and only when it lasts: a task waiting a moment for a free slot is scheduling."""
        now = self._clock()
        if now - self._checked < 2.0:
            return
        self._checked = now
        if self._limits is None:
            self._limits = _role_limits(await self.store.get_run(self.run_id)) or {}
        notes = (await concurrency_waits(self.store, self.run_id, limits=self._limits))["notes"]
        if notes != self._seen:
            self._seen, self._seen_since = notes, now
        lasting = notes if now - self._seen_since >= WAIT_WORTH_SAYING else []
        if lasting != self.waits and not self.tty:
            for note in lasting:
                print(f"waiting on a concurrency limit: {note}", flush=True)
        self.waits = lasting

    async def stop(self, watcher: asyncio.Task[None]) -> None:
        await asyncio.sleep(0.05)  # let the last events arrive
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher

    def _apply(self, e: Event) -> None:
        data = e.data if isinstance(e.data, dict) else {}
        task = str(data.get("task", ""))
        if "role" in data and task:
            self.task_role[task] = str(data["role"])
        role = self.task_role.get(task)
        if role:
            line = self.agents.setdefault(role, _AgentLine())
            if e.kind == "step.completed":
                line.steps += 1
                line.tokens += int(data.get("tokens_in", 0)) + int(data.get("tokens_out", 0))
                line.doing = step_done(data.get("kind"), data.get("name"))
            elif e.kind == "task.claimed":
                line.doing = f"working on task {task[:8]}"
            elif e.kind in ("task.completed", "task.failed", "task.waiting"):
                line.doing = e.kind.split(".")[1]
        self.recent = [event_line(e), *self.recent][:6]

    def _redraw(self) -> None:
        out = sys.stdout
        if self._drawn:
            out.write(f"\x1b[{self._drawn}F\x1b[J")
        lines = [f"run {self.run_id}  {time.monotonic() - self.started:6.1f}s"]
        for role, a in sorted(self.agents.items()):
            lines.append(f"  {role:<12} {a.doing:<32} steps={a.steps:<4} tokens={a.tokens}")
        width = shutil.get_terminal_size((120, 24)).columns
        for role, text in (self.text.active() if self.text is not None else {}).items():
            head = f"  {role:<12} | "  # one screen line each, the newest text at its end
            lines.append(head + text[-max(width - 1 - len(head), 20):])
        lines += [f"  waiting on a concurrency limit: {w}"[:150] for w in self.waits]
        lines.append("  latest events:")
        lines += ["   " + r[:110] for r in reversed(self.recent)]
        # one screen line each: a line that wraps takes two, and the next redraw, moving
        # up by the lines it counted, would leave the top of this panel behind
        out.write("\n".join(line[:width - 1] for line in lines) + "\n")
        out.flush()
        self._drawn = len(lines)

    async def summary(self, run: Run, unpriced: Collection[str] = (),
                      local: Collection[str] = ()) -> None:
        """The run's outcome, its cost and usage; ``unpriced``: hosted models that had no
        price; ``local``: local or scripted ones (their cost is not counted)."""
        data = await show_data(self.store, run.id)
        if unpriced:
            data["unpriced_models"] = sorted(unpriced)
        if local:
            data["local_models"] = sorted(local)
        if self.json_mode:
            print(json.dumps(data, default=str))
            return
        steps = data["steps"]
        print(f"\nrun {run.id}: {run.status}"
              + (f" — {run.error}" if run.error else "")
              + f"\n  steps completed {steps.get('completed', 0)}, reissued after crashes "
              f"{steps.get('reissued', 0)}; tokens {run.tokens_in + run.tokens_out}")
        print("  " + usage_line(data["usage"]["total"]))
        if unpriced:
            print("  " + unpriced_line(unpriced))
        if local:
            print("  " + local_line(local))
        db = f"--db {self.db}"
        print(f"  look closer:  orchestra show {run.id} {db}   orchestra board {run.id} {db}   "
              f"orchestra events {run.id} {db}")
        if run.status == "waiting":
            for ap in data["approvals_pending"]:
                print(f"  waiting for approval {ap['id']} ({ap['tool']}): orchestra approve "
                      f"{ap['id']} {db}  or  orchestra deny {ap['id']} {db} --reason ...")
            print(f"  then: orchestra resume {run.id} {db}")
        elif run.reason == "budget":
            print("  " + resume_hint(data["run"], db))
        elif run.status in ("failed", "running"):
            print(f"  resume with: orchestra resume {run.id} {db}")
