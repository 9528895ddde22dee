"""Copy runs, with their whole history, from one store to another (``orchestra copy``).

A user who started on the embedded SQLite default moves up to PostgreSQL without
losing work; it works between any two stores (SQLite or PostgreSQL on either side).
A run is read in one snapshot of the source and written in one transaction of the
target, so a crash mid-copy leaves every run either whole or absent there. Every
row a run owns is copied as it is (ids, event seqs, leases, attempts, the journal),
so the target can resume or serve it; only what is local to a store is rebuilt:
note ids come from the target (``note.posted`` events are renumbered to match),
and PostgreSQL's per-agent message counters and positions are set from the rows.
A run a live process is still serving (a lease or a serve claim not yet expired)
is refused: copying it would let a worker on the target redo what that process is
doing. So the serve claims copied (``run_servers``) have all run out: they only
tell since when the run has had no worker, in the target as in the source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from orchestra._errors import StoreError, UserError
from orchestra._ids import resolve_prefix
from orchestra.store import url as store_url
from orchestra.store.copy.tables import RunRows, Side


@dataclass(frozen=True)
class Copied:
    """What ``copy_runs`` did with one run."""

    run_id: str
    copied: bool
    """False: it was in the target already and skipped (``skip_existing``)."""
    rows: int = 0


def resolve_replies(rows: RunRows) -> None:
    """Put back the replies a SQLite journal keeps as pointers to their message
    (``text_seq``), so the rows stand on their own in any store."""
    messages = {(r[0], r[1]): r for r in rows.tables["messages"]}
    steps = rows.tables["steps"]
    for i, step in enumerate(steps):
        text = step[7]
        if not isinstance(text, str) or '"text_seq"' not in text:
            continue
        out = json.loads(text)
        if not isinstance(out, dict) or "text_seq" not in out:
            continue
        msg = messages.get((out.get("text_agent"), out["text_seq"]))
        if msg is None:
            raise StoreError(f"step {step[2]} of task {step[0]}: its reply points at message "
                             f"{out['text_seq']} of {out.get('text_agent')}, which does not "
                             "exist; the source store is damaged")
        del out["text_seq"]
        out.pop("text_agent", None)
        out["text"] = msg[4]
        if "calls" in out and out["calls"] is None:  # the calls are the message's too
            out["calls"] = [[c["id"], c["name"], c["arguments"]]
                            for c in (json.loads(msg[5]) if msg[5] else [])]
        steps[i] = (*step[:7], _json(out), *step[8:])


def renumber_notes(rows: RunRows, new_ids: dict[int, int]) -> None:
    """Make ``note.posted`` events name the notes' ids in the target."""
    events = rows.tables["events"]
    for i, event in enumerate(events):
        if event[2] != "note.posted":
            continue
        data = json.loads(event[3])
        old = data.get("note") if isinstance(data, dict) else None
        if isinstance(old, int) and new_ids.get(old, old) != old:
            data["note"] = new_ids[old]
            events[i] = (*event[:3], _json(data), *event[4:])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def open_side(url: str | os.PathLike[str]) -> Side:
    """Open (creating or migrating, as any command does) the store ``url`` names for copying."""
    store = await store_url.open_store(url)
    await store.close()
    path = store_url.sqlite_path(url)
    if path is not None:
        from orchestra.store.copy.sqlite import SQLiteSide

        return await SQLiteSide.open(path)
    from orchestra.store.copy.postgres import PostgresSide

    return await PostgresSide.connect(os.fspath(url))


async def copy_runs(source: str | os.PathLike[str], target: str | os.PathLike[str],
                    run_ids: Sequence[str] | None = None, *, skip_existing: bool = False,
                    on_copied: Callable[[Copied], None] | None = None) -> list[Copied]:
    """Copy ``run_ids`` (default: every run, oldest first) from ``source`` to ``target``.

    A run already in the target is refused with ``UserError`` before anything is
    copied, or skipped with ``skip_existing`` (which makes a copy interrupted midway
    safe to run again). Each run commits alone; ``on_copied`` hears of each.
    """
    if _same_store(source, target):
        raise UserError("--from and --to name the same store; copy into another one")
    if not store_url.exists(source):
        raise UserError(f"no store at {store_url.label(source)} to copy from")
    src = await open_side(source)
    try:
        dst = await open_side(target)
        try:
            return await _copy(src, dst, run_ids, skip_existing, on_copied)
        finally:
            await dst.close()
    finally:
        await src.close()


def _same_store(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> bool:
    paths = store_url.sqlite_path(source), store_url.sqlite_path(target)
    if paths[0] is not None and paths[1] is not None:
        return os.path.realpath(paths[0]) == os.path.realpath(paths[1])
    return store_url.label(source) == store_url.label(target)


async def _copy(src: Side, dst: Side, run_ids: Sequence[str] | None, skip_existing: bool,
                on_copied: Callable[[Copied], None] | None) -> list[Copied]:
    known = await src.run_ids()
    hint = f"see `orchestra runs --db {src.where}`"
    wanted = known if run_ids is None else list(dict.fromkeys(
        resolve_prefix("run", ref, known, hint=hint) for ref in run_ids))  # ids or prefixes
    present = [r for r in wanted if await dst.has_run(r)]
    if present and not skip_existing:
        more = " ..." if len(present) > 5 else ""
        raise UserError(f"{dst.where} already has run {', '.join(present[:5])}{more}; nothing "
                        "was copied (pass --skip-existing to copy only the others, or delete "
                        "them there first)")
    done: list[Copied] = []
    for run_id in wanted:
        if run_id in present:
            result = Copied(run_id, copied=False)
        else:
            rows, live_until, now = await src.read(run_id)
            if live_until is not None and live_until > now:
                raise UserError(
                    f"run {run_id} is being served by a live process in {src.where} (its "
                    f"lease runs {live_until - now:.0f} s more); stop that process, wait for "
                    "the lease to run out, then copy again")
            resolve_replies(rows)
            if not await dst.write(rows, renumber_notes):
                raise UserError(f"{dst.where} already has run {run_id} (created meanwhile); "
                                "it was left as it is")
            result = Copied(run_id, copied=True, rows=rows.count)
        done.append(result)
        if on_copied is not None:
            on_copied(result)
    return done

