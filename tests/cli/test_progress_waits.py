"""Normal scheduling is not news (issue 27, item 9): a task waiting a moment for a free
slot is not reported; a wait that lasts is said once."""

from __future__ import annotations

from typing import Any

import pytest

from orchestra.cli import progress
from orchestra.cli.progress import WAIT_WORTH_SAYING, Progress

NOTE = "1 ready coder task(s) wait while 2 run"


async def test_a_wait_is_said_once_and_only_when_it_lasts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    waits: list[list[str]] = []

    async def fake_waits(*_: Any, **__: Any) -> dict[str, Any]:
        return {"notes": waits[-1]}

    monkeypatch.setattr(progress, "concurrency_waits", fake_waits)
    now = [0.0]
    p = Progress(None, "run1", json_mode=False, tty=False,  # type: ignore[arg-type]
                 clock=lambda: now[0])
    p._limits = {}

    async def check_at(t: float, notes: list[str]) -> str:
        now[0] = t
        waits.append(notes)
        await p._check_waits()
        return capsys.readouterr().out

    assert await check_at(0.0, [NOTE]) == ""  # the demo's start: a moment's wait
    assert await check_at(3.0, []) == ""  # gone: it was scheduling
    assert await check_at(6.0, [NOTE]) == ""
    assert await check_at(6.0 + WAIT_WORTH_SAYING - 3, [NOTE]) == ""
    assert await check_at(6.0 + WAIT_WORTH_SAYING, [NOTE]) == \
        f"waiting on a concurrency limit: {NOTE}\n"
    assert await check_at(9.0 + WAIT_WORTH_SAYING, [NOTE]) == ""  # said once
