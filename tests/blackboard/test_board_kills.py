"""kill -9 a board's run where it decides (issue 48): the stall's note and the run's
status commit together, so a kill on either side of that commit leaves one note; a
controller's choice is a journaled step, so a kill in its model call asks it once more,
a kill after that call committed asks it no more, and in both the same roles act, each
once. Each run is a real process (``_board_kill_child.py``) that SIGKILLs itself at the
instant named, then a new process resumes it."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestra.store import SQLiteBlackboard

CHILD = Path(__file__).with_name("_board_kill_child.py")
ENDED = ("stalled", "completed")


@dataclass(frozen=True)
class Outcome:
    status: str
    tasks: Counter[tuple[str, str]]
    """(role, status) of every task."""
    consumed: list[str]
    """The roles the board's entries triggered."""
    notes: list[tuple[str, str, tuple[str, ...]]]
    entries: int
    calls: Counter[str]
    """Model calls by system prompt, over every process."""


def _child(db: Path, scenario: str, point: str, calls: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHILD), str(db), scenario, point, str(calls)],
                          capture_output=True, text=True, timeout=120, start_new_session=True,
                          cwd=CHILD.parent)


async def _read(db: Path) -> tuple[str, Counter[tuple[str, str]], list[str],
                                   list[tuple[str, str, tuple[str, ...]]], int]:
    async with await SQLiteBlackboard.open(db) as store:
        [run] = await store.list_runs()
        tasks = Counter((t.role, t.status) for t in await store.list_tasks(run.id))
        consumed = sorted(c.role for c in await store.get_consumptions(run.id))
        notes = [(n.author, n.body, n.tags) for n in await store.search_notes(run.id)]
        return run.status, tasks, consumed, notes, len(await store.get_entries(run.id))


def _run(tmp_path: Path, scenario: str, point: str) -> Outcome:
    """Drive a run killed at ``point`` (``none``: left alone), then resume it in a new
    process unless it ended before the kill."""
    db, calls = tmp_path / f"{point}.db", tmp_path / f"{point}.calls"
    first = _child(db, scenario, point, calls)
    if point == "none":
        assert first.returncode == 0, first.stderr
    else:
        assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
        if asyncio.run(_read(db))[0] not in ENDED:
            resumed = _child(db, scenario, "none", calls)
            assert resumed.returncode == 0, resumed.stderr[-2000:]
    status, tasks, consumed, notes, entries = asyncio.run(_read(db))
    return Outcome(status, tasks, consumed, notes, entries,
                   Counter(calls.read_text().splitlines()))


@pytest.mark.parametrize("point", ["decided", "committed"])
def test_a_kill_as_the_run_stalls_leaves_one_stall_note(tmp_path: Path, point: str) -> None:
    alone = _run(tmp_path, "stall", "none")
    assert alone.status == "stalled" and len(alone.notes) == 1
    killed = _run(tmp_path, "stall", point)
    assert killed.status == "stalled"
    assert killed.notes == alone.notes  # one, saying why, by orchestra
    assert (killed.tasks, killed.consumed, killed.entries) == (
        alone.tasks, alone.consumed, alone.entries)
    # "decided": the third looper's end (its last model step with it) had not committed
    assert killed.calls["You answer a ping"] == 3 + (point == "decided")


@pytest.mark.parametrize(("point", "again"), [("model", 1), ("choice", 0)])
def test_a_controller_killed_while_choosing_chooses_the_same(
        tmp_path: Path, point: str, again: int) -> None:
    alone = _run(tmp_path, "control", "none")
    assert alone.status == "completed" and alone.consumed == ["slow"]
    killed = _run(tmp_path, "control", point)
    assert killed.status == "completed"
    # the same roles acted, each once: slow (chosen), never fast; asked twice, as alone
    assert (killed.tasks, killed.consumed, killed.entries) == (
        alone.tasks, alone.consumed, alone.entries)
    assert killed.tasks[("chair", "completed")] == 2 and ("fast", "completed") not in killed.tasks
    # a call in flight at the kill is asked once more; one that committed, never again
    chose = killed.calls.pop("You choose who acts")
    assert chose == alone.calls.pop("You choose who acts") + again
    assert killed.calls == alone.calls
