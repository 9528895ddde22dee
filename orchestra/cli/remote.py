"""``--server URL``: runs, show, events, approve, deny, cancel and resume through the HTTP API
of ``orchestra serve`` instead of opening the store file (token: $ORCHESTRA_TOKEN)."""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import os
import sys
from typing import TYPE_CHECKING, Any

from orchestra._errors import UserError
from orchestra._ids import resolve_prefix
from orchestra._install import install_hint
from orchestra._types import Event, Run
from orchestra.cli import inspect_cmds
from orchestra.cli.exit_codes import EXIT_OK
from orchestra.cli.server_errors import server_url, translated

if TYPE_CHECKING:
    from orchestra.client import Client

COMMANDS = frozenset({"runs", "show", "events", "approve", "deny", "cancel", "resume"})


def dispatch(args: argparse.Namespace) -> int:
    base = server_url(args.server)  # no scheme: one line saying which URL was meant
    try:
        from orchestra.client import Client
    except ImportError as exc:
        raise UserError(f"--server needs the server extra: {install_hint('server')} "
                        f"({exc})") from exc
    with Client(base, token=os.environ.get("ORCHESTRA_TOKEN") or None) as api, \
            translated(base):
        return _run(args, api)


def all_runs(api: Client, **filters: str) -> list[dict[str, Any]]:
    """Every run the server lists (page after page)."""
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = api.runs.list(limit=500, cursor=cursor, **filters)  # type: ignore[arg-type]
        runs += page["runs"]
        cursor = page.get("next_cursor")
        if not cursor:
            return runs


def _resolve(args: argparse.Namespace, api: Client) -> None:
    """A run id given by a unique prefix, as with a store file."""
    from orchestra.client import ApiError

    if getattr(args, "run", None):
        try:
            api.runs.get(args.run)
        except ApiError as exc:
            if exc.status != 404 or not exc.problem:
                raise
            args.run = resolve_prefix("run", args.run, [r["id"] for r in all_runs(api)],
                                      hint=f"see `orchestra runs --server {args.server}`")


def _decide(args: argparse.Namespace, api: Client, by: str) -> dict[str, Any]:
    """Decide the approval ``args.approval`` names, by id or by a unique prefix of one
    among the approvals of waiting runs."""
    from orchestra.client import ApiError

    def decide() -> dict[str, Any]:
        answer: dict[str, Any] = api.approvals.decide(args.approval, args.command == "approve",
                                                      by=by, reason=args.reason)
        return answer

    try:
        return decide()
    except ApiError as exc:
        if exc.status != 404 or not exc.problem:
            raise
    ids = [a["id"] for r in all_runs(api, status="waiting")
           for a in api.runs.approvals(r["id"])["approvals"]]
    args.approval = resolve_prefix("approval", args.approval, ids,
                                   hint="see `orchestra board RUN approvals`")
    return decide()


def _run(args: argparse.Namespace, api: Client) -> int:
    if args.command != "runs":
        _resolve(args, api)
    if args.command == "runs":
        runs = [_run_of(r) for r in api.runs.list(active=args.active, limit=100)["runs"]]
        inspect_cmds.emit(args, {"runs": [inspect_cmds.run_dict(r) for r in runs],
                                 "next_cursor": None},
                          inspect_cmds.runs_text(runs))
    elif args.command == "show":
        data = api.runs.get(args.run)
        inspect_cmds.emit(args, data, inspect_cmds.show_text(data, f"--server {args.server}"))
    elif args.command == "events":
        _events(args, api)
    elif args.command in ("approve", "deny"):
        by = args.by or getpass.getuser()
        approval = _decide(args, api, by)
        inspect_cmds.emit(args, approval, f"approval {approval['id']} {approval['status']} "
                                          f"by {by}; the server continues the run")
    elif args.command == "cancel":
        run = api.runs.cancel(args.run)
        inspect_cmds.emit(args, {"run": run["run_id"], "status": run["status"]},
                          f"run {run['run_id']} cancelled")
    elif args.command == "resume":
        run = api.runs.resume(args.run, max_tokens=args.max_tokens)
        inspect_cmds.emit(args, {"run": run["run_id"], "status": run["status"]},
                          f"run {run['run_id']} {run['status']}; the server continues it")
    return EXIT_OK


_RUN_FIELDS = frozenset(f.name for f in dataclasses.fields(Run))


def _run_of(data: dict[str, object]) -> Run:
    """A run the API returned (its JSON also says ``reason``, which a Run derives)."""
    return Run(**{k: v for k, v in data.items() if k in _RUN_FIELDS})  # type: ignore[arg-type]


def _events(args: argparse.Namespace, api: Client) -> None:
    # without --follow: what is stored now (the stream would wait for more)
    stop_at = None if args.follow else api.runs.get(args.run)["run"]["last_seq"]
    if stop_at is not None and stop_at <= args.after:
        return
    for e in api.runs.stream(args.run, starting_after=args.after, reconnect=args.follow):
        if e.seq is None:  # a notice (nobody serves the run), not an event
            detail = e.data.get("detail", "") if isinstance(e.data, dict) else ""
            print(f"({e.kind}: {detail})", file=sys.stderr)
            continue
        event = Event(args.run, e.seq, e.kind, e.data, e.at or 0.0)
        inspect_cmds.emit(args, dataclasses.asdict(event), inspect_cmds.event_line(event))
        if stop_at is not None and e.seq >= stop_at:
            return
