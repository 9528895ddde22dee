"""Read-mostly commands: runs, show, events, board, approve, deny."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import json
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from orchestra._errors import NotFoundError, UserError
from orchestra._ids import resolve_prefix
from orchestra._types import DEFAULT_CONCURRENCY, DELTA_EVENT, AgentId, Event, Run
from orchestra.cli.board_text import _handoff_text, _plan_text, note_text, shorten
from orchestra.cli.cost_text import resume_hint, usage_line, usd
from orchestra.cli.live_text import delta_piece
from orchestra.coordinator.orphans import Orphan, orphans, worker_fields
from orchestra.coordinator.serving import served_now
from orchestra.coordinator.usage_report import run_usage
from orchestra.store import Blackboard, RunStore
from orchestra.store.url import label

OpenStore = Callable[..., AbstractAsyncContextManager[Blackboard]]


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """Print ``data`` as one JSON document with --json, else ``text``."""
    if args.json:
        print(json.dumps(data, default=str))
    else:
        print(text)


async def resolve_run(store: RunStore, ref: str) -> str:
    """A run id, or a unique prefix of one (`orchestra show 52d2`)."""
    try:
        return (await store.get_run(ref)).id
    except NotFoundError as missing:
        if not ref:
            raise
        runs = await store.list_runs(limit=1_000_000)
        try:
            return resolve_prefix("run", ref, [r.id for r in runs])
        except NotFoundError:
            raise missing from None  # the store's own words for an unknown id


async def resolve_approval(store: Blackboard, ref: str) -> str:
    """An approval id, or a unique prefix of one among the approvals of waiting runs
    (the ones a person decides)."""
    try:
        return (await store.get_approval(ref)).id
    except NotFoundError as missing:
        if not ref:
            raise
        ids = [a.id for run in await store.list_runs(status="waiting", limit=1_000_000)
               for a in await store.list_approvals(run.id)]
        try:
            return resolve_prefix("approval", ref, ids)
        except NotFoundError:
            raise missing from None


def _age(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def run_dict(run: Run) -> dict[str, Any]:
    """The run as JSON, with ``reason`` (why it is paused, else None)."""
    return {**dataclasses.asdict(run), "reason": run.reason}


def event_line(e: Event) -> str:
    data = e.data if isinstance(e.data, dict) else {"data": e.data}
    if e.kind == DELTA_EVENT:  # the text itself, quoted (newlines shown as \n)
        piece = delta_piece(data, None)[0]
        detail = (f"{data.get('role')} step={data.get('step')} attempt={data.get('attempt')}"
                  f"{' reissue' if data.get('reissue') else ''} {piece!r}")
    else:
        detail = " ".join(f"{k}={v}" for k, v in data.items() if v not in (None, "", [], {}))
    return f"{e.seq:>6}  {time.strftime('%H:%M:%S', time.localtime(e.at))}  {e.kind:<18} " \
           f"{detail[:160]}"


def status_text(run: Run, orphaned: dict[str, Orphan]) -> str:
    """``running``, ``paused (budget)``, ``interrupted — orchestra resume RUN``, or e.g.
    ``running (no live worker since 12:03:11)``, ``running (needs a worker of version V)``."""
    if run.reason is not None:
        return f"{run.status} ({run.reason})"
    orphan = orphaned.get(run.id)
    if orphan is None:
        return run.status
    if orphan.interrupted:
        return f"interrupted — orchestra resume {run.id}"
    if orphan.needs is not None:
        return f"{run.status} (needs a worker of version {orphan.needs})"
    if orphan.since is None:
        return f"{run.status} (waiting for a worker)"
    return (f"{run.status} (no live worker since "
            f"{time.strftime('%H:%M:%S', time.localtime(orphan.since))})")


def _with_worker(run: Run, orphaned: dict[str, Orphan]) -> dict[str, Any]:
    return {**run_dict(run), **worker_fields(orphaned.get(run.id))}


async def show_data(store: Blackboard, run_id: str) -> dict[str, Any]:
    run = await store.get_run(run_id)
    agents = await store.agent_infos(run_id)
    orphaned = await orphans(store, [run])
    return {
        "run": _with_worker(run, orphaned),
        "status": run.status,
        "status_text": status_text(run, orphaned),
        "tasks": await store.task_counts(run_id),
        "steps": await store.step_counts(run_id),
        "agents": [dataclasses.asdict(a) for a in agents],
        "approvals_pending": [dataclasses.asdict(a) for a in
                              await store.list_approvals(run_id, status="pending")],
        "usage": (await run_usage(store, run_id)).as_dict(),
    }


READ_ONLY_COMMANDS = frozenset({"runs", "show", "events", "board", "approvals"})
"""Commands that never write: they work on a store the user cannot write."""


async def dispatch(args: argparse.Namespace, open_store: OpenStore) -> int:
    async with open_store(args, must_exist=True,
                          read_only=args.command in READ_ONLY_COMMANDS) as store:
        if getattr(args, "run", None) is not None:
            args.run = await resolve_run(store, args.run)
        if args.command == "runs":
            await _runs(args, store)
        elif args.command == "show":
            data = await show_data(store, args.run)
            data["concurrency"] = await concurrency_waits(store, args.run)
            emit(args, data, show_text(data, f"--db {label(args.db)}"))
        elif args.command == "events":
            await _events(args, store)
        elif args.command == "board":
            await _board(args, store)
        elif args.command == "approvals":
            await _approvals(args, store)
        elif args.command in ("approve", "deny"):
            by = args.by or getpass.getuser()
            args.approval = await resolve_approval(store, args.approval)
            approval = await store.decide_approval(args.approval, approved=args.command ==
                                                   "approve", by=by, reason=args.reason)
            live = await served_now(store, approval.run_id)
            emit(args, {**dataclasses.asdict(approval), "continued_by_worker": live},
                 f"approval {approval.id} {approval.status} by {by}; " + (
                     f"a live worker continues run {approval.run_id}" if live else
                     f"no worker serves run {approval.run_id}; continue it with: "
                     f"orchestra resume {approval.run_id} --db {label(args.db)}"))
    return 0


async def _approvals(args: argparse.Namespace, store: Blackboard) -> None:
    """The pending approvals of ``args.run``, or of every waiting run."""
    runs = [args.run] if args.run else [r.id for r in await store.list_runs(
        status="waiting", limit=1_000_000)]
    pending = [a for run in runs for a in await store.list_approvals(run, status="pending")]
    emit(args, {"approvals": [dataclasses.asdict(a) for a in pending]}, "\n".join(
        f"{a.id}  run {a.run_id}  {a.tool}({json.dumps(a.arguments, default=str)})"
        for a in pending) + f"\ndecide: orchestra approve ID / orchestra deny ID --reason ... "
        f"--db {label(args.db)}" if pending else "no approvals pending")


async def _runs(args: argparse.Namespace, store: Blackboard) -> None:
    if args.limit < 1:
        raise UserError(f"--limit must be >= 1, got {args.limit}")
    # --pipeline matches part of the name (`--pipeline approval`), so it is filtered here
    runs = await store.list_runs(active_only=args.active, status=args.status,
                                 limit=1_000_000 if args.pipeline else args.limit)
    runs = [r for r in runs if args.pipeline is None or args.pipeline in r.pipeline]
    runs = runs[:args.limit]
    filtered = bool(args.status or args.pipeline or args.active)
    orphaned = await orphans(store, runs)
    emit(args, {"runs": [_with_worker(r, orphaned) for r in runs], "next_cursor": None},
         runs_text(runs, orphaned) if runs
         else f"no runs{' match' if filtered else ''} (--db {label(args.db)})")


def runs_text(runs: list[Run], orphaned: dict[str, Orphan] | None = None) -> str:
    """Runs as a table with a header row; a run that needs a worker and has no live one
    says so in its status (``running (no live worker since 12:03:11)``)."""
    if not runs:
        return "no runs"
    rows = [("RUN", "STATUS", "PIPELINE", "VERSION", "CREATED", "STEPS", "TOKENS", "COST")]
    rows += [(r.id, status_text(r, orphaned or {}), r.pipeline, r.version or "-",
              _age(r.created_at), str(r.steps), str(r.tokens_in + r.tokens_out), usd(r.cost))
             for r in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def show_text(d: dict[str, Any], where: str = "") -> str:
    """``where``: the ``--db FILE`` or ``--server URL`` the hints must name."""
    run = d["run"]
    status = d.get("status_text") or (f"{run['status']} ({run['reason']})" if run.get("reason")
                                      else run["status"])
    lines = [f"run {run['id']}  {status}  pipeline {run['pipeline']}"
             f"{'  version ' + run['version'] if run.get('version') else ''}",
             f"  tokens in/out {run['tokens_in']}/{run['tokens_out']}  steps {run['steps']}"
             f"  cost {usd(float(run.get('cost', 0.0)))}"
             + (f"  error: {run['error']}" if run["error"] else ""),
             "  tasks: " + ", ".join(f"{k}={v}" for k, v in sorted(d["tasks"].items())),
             "  steps: " + ", ".join(f"{k}={v}" for k, v in sorted(d["steps"].items())),
             "  agents:"]
    for a in d["agents"]:
        rp = a["restart_point"]
        point = f"task {rp['task']} step {rp['step']}" if rp else "-"
        lines.append(f"    {a['role']:<12} messages={a['messages']:<4} "
                     f"steps={a['steps_completed']:<4} reissued={a['steps_reissued']} "
                     f"tokens={a['tokens_in'] + a['tokens_out']:<7} "
                     f"cost={usd(float(a.get('cost', 0.0))):<10} restart point: {point}")
    if d.get("usage"):
        lines.append("  usage: " + usage_line(d["usage"]["total"]))
    for line in d.get("concurrency", {}).get("notes", []):
        lines.append(f"  waiting on a concurrency limit: {line}")
    for ap in d["approvals_pending"]:
        lines.append(f"  pending approval {ap['id']}: {ap['tool']}({ap['arguments']}) — "
                     f"orchestra approve {ap['id']} {where}".rstrip())
    if run.get("reason") == "budget":
        lines.append("  " + resume_hint(run, where))
    if run.get("orphaned") and run.get("version"):
        lines.append(f"  only a worker of version {run['version']} takes this run; or move "
                     f"it to the code you have: orchestra upgrade {run['id']} {where}".rstrip())
    return "\n".join(lines)


async def _events(args: argparse.Namespace, store: Blackboard) -> None:
    await store.get_run(args.run)
    if args.follow:
        watch = asyncio.create_task(_say_when_orphaned(store, args.run, args.db))
        try:
            async for e in store.follow(args.run, starting_after=args.after):
                if e.kind != DELTA_EVENT or not args.no_tokens:
                    emit(args, dataclasses.asdict(e), event_line(e))
                if e.kind in ("run.completed", "run.failed", "run.cancelled"):
                    return
        finally:
            watch.cancel()
        return
    after = args.after
    while True:
        batch = await store.events(args.run, starting_after=after, limit=500)
        for e in batch:
            if e.kind != DELTA_EVENT or not args.no_tokens:
                emit(args, dataclasses.asdict(e), event_line(e))
        if len(batch) < 500:
            return
        after = batch[-1].seq


async def _say_when_orphaned(store: Blackboard, run_id: str, db: str, *,
                             every: float = 1.0) -> None:
    """While following: say (on stderr, once per change) that the run waits for a worker,
    instead of waiting silently for events nobody will write."""
    waiting = False
    while True:
        run = await store.get_run(run_id)
        orphaned = await orphans(store, [run])
        if orphaned and not waiting:
            print(f"waiting for a worker: run {run_id} is {status_text(run, orphaned)}; "
                  f"start one with `orchestra worker --db {db}` or `orchestra resume {run_id} "
                  f"--db {db}`", file=sys.stderr, flush=True)
        elif waiting and not orphaned:
            print(f"a worker serves run {run_id} again", file=sys.stderr, flush=True)
        waiting = bool(orphaned)
        await asyncio.sleep(every)


async def _board(args: argparse.Namespace, store: Blackboard) -> None:
    await store.get_run(args.run)
    kinds = [args.kind] if args.kind else ["plans", "handoffs", "notes", "approvals",
                                           "entries"]
    if args.search and args.kind not in (None, "notes"):
        from orchestra._errors import UserError
        raise UserError("--search applies to notes only")
    out: dict[str, Any] = {}
    text: list[str] = []
    if "plans" in kinds:
        plans = await store.get_plans(args.run)
        out["plans"] = [dataclasses.asdict(p) for p in plans]
        text += [f"plan v{p.version} by {p.author.rsplit('/', 1)[-1]}:\n{_plan_text(p.body)}"
                 for p in plans]
    if "handoffs" in kinds:
        hs = await store.get_handoffs(args.run)
        out["handoffs"] = [dataclasses.asdict(h) for h in hs]
        text += [_handoff_text(AgentId.parse(h.from_agent).role, h.to_role, h.note,
                               h.payload, h.task_id) for h in hs]
    if "notes" in kinds:
        notes = await store.search_notes(args.run, text=args.search)
        out["notes"] = [dataclasses.asdict(n) for n in notes]
        text += [note_text(n) for n in notes]
    if "approvals" in kinds:
        aps = await store.list_approvals(args.run)
        out["approvals"] = [dataclasses.asdict(a) for a in aps]
        text += [f"approval {a.id} {a.status}: {a.tool} {a.arguments}" for a in aps]
    if "entries" in kinds:
        found = await store.get_entries(args.run)
        out["entries"] = [dataclasses.asdict(e) for e in found]
        text += [f"entry {e.type} by {e.author_role} [{e.scope}]: "
                 f"{shorten(json.dumps(e.body), 300)}" for e in found]
    emit(args, out, "\n".join(text) or "(empty)")


def _role_limits(run: Run) -> dict[str, int] | None:
    """Each role's ``concurrency``, from the run's pipeline if this process can build it."""
    from orchestra.coordinator.pipeline import load_pipeline

    try:
        pipeline = load_pipeline(run.pipeline, run.input)
    except Exception:  # another process's pipeline, or its input no longer valid here
        return None
    return {r.name: type(r).concurrency for r in pipeline.roles}


async def concurrency_waits(store: RunStore, run_id: str, *,
                            limits: dict[str, int] | None = None) -> dict[str, Any]:
    """Ready tasks that are not running because a limit is full: a role's ``concurrency``
    (``DEFAULT_ROLE_CONCURRENCY``) or the coordinators' (``--concurrency``,
    ``CoordinatorSettings``: ``DEFAULT_CONCURRENCY``)."""
    run = await store.get_run(run_id)
    if run.status not in ("pending", "running"):
        return {"ready": 0, "running": {}, "notes": []}
    now = time.time()
    ready: dict[str, int] = {}
    for t in await store.list_tasks(run_id, status="pending"):
        if t.not_before <= now:
            ready[t.role] = ready.get(t.role, 0) + 1
    running: dict[str, int] = {}
    for t in await store.list_tasks(run_id, status="running"):
        running[t.role] = running.get(t.role, 0) + 1
    notes = []
    if limits is None and ready:
        limits = _role_limits(run)
    role_bound = set()
    for role, n in sorted(ready.items()):
        limit = (limits or {}).get(role)
        if limit is not None and running.get(role, 0) >= limit:
            role_bound.add(role)
            notes.append(f"{n} ready {role} task(s) wait: {running[role]} of {role}'s "
                         f"concurrency {limit} are running (raise the role's `concurrency`)")
    others = sum(n for role, n in ready.items() if role not in role_bound)
    if others and sum(running.values()):
        notes.append(f"{others} ready task(s) wait while {sum(running.values())} run; if this "
                     "persists, the coordinators' concurrency is full (orchestra run/worker "
                     f"--concurrency, CoordinatorSettings.concurrency, default "
                     f"{DEFAULT_CONCURRENCY})")
    return {"ready": sum(ready.values()), "running": running, "notes": notes}
