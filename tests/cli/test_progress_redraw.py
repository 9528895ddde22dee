"""On a terminal the panel is redrawn in place, one screen line per agent's text: every
line fits the terminal's width (a line that wraps takes two screen lines, and the next
redraw, moving up by the lines it drew, would leave the top of the old panel behind),
and two agents writing at once have one line each in every frame."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from orchestra._types import DELTA_EVENT, Event
from orchestra.cli import progress
from orchestra.cli.progress import Progress

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
WIDTH = 60


def delta(seq: int, role: str, text: str, first: bool = False) -> Event:
    data: dict[str, Any] = {"task": f"task-{role}", "role": role, "step": 1, "retry": 0,
                            "attempt": 1, "text": text}
    if first:
        data["first"] = True
    return Event("run1", seq, DELTA_EVENT, data, 0.0)


def test_each_frame_fits_a_narrow_terminal_with_one_line_per_writing_agent(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress.shutil, "get_terminal_size",
                        lambda fallback=(0, 0): os.terminal_size((WIDTH, 24)))
    p = Progress(None, "run1", json_mode=False, tty=True)  # type: ignore[arg-type]
    assert p.text is not None
    events = [Event("run1", 1, "task.claimed", {"task": "task-writer", "role": "writer",
                                                "attempt": 1, "owner": "w" * 80}, 0.0),
              Event("run1", 2, "task.claimed", {"task": "task-critic", "role": "critic",
                                                "attempt": 1, "owner": "w" * 80}, 0.0)]
    seq = 3
    for i in range(12):  # both write at once, long lines and short
        for role in ("writer", "critic"):
            events.append(delta(seq, role, f"{role} piece {i} " + "word " * (i * 3),
                                first=not i))
            seq += 1
    p.waits = ["a note far longer than the terminal is wide " * 3]
    for e in events:
        p.text.apply(e)
        if e.kind != DELTA_EVENT:
            p._apply(e)
        p._redraw()
    out = capsys.readouterr().out
    frames = re.split(r"\x1b\[(\d+)F\x1b\[J", out)
    drawn = [frames[0], *frames[2::2]]  # the text of each frame
    moved = [int(n) for n in frames[1::2]]  # how far each redraw went up
    assert len(drawn) == len(events)
    for frame, up in zip(drawn, moved, strict=False):
        assert frame.count("\n") == up  # up by exactly the screen lines drawn
    for frame in drawn:
        lines = ANSI.sub("", frame).splitlines()
        assert max(len(line) for line in lines) < WIDTH
    last = ANSI.sub("", drawn[-1]).splitlines()
    for role in ("writer", "critic"):  # one line each, as wide as fits, its newest text
        written = "".join(e.data["text"] for e in events if e.data.get("role") == role
                          and e.kind == DELTA_EVENT)
        head = f"  {role:<12} | "
        (line,) = [line for line in last if line.startswith(head)]
        assert len(line) == WIDTH - 1 and written.endswith(line[len(head):])
