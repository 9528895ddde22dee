"""The demo's shipped session matches the pipeline's prompts: replayed strictly, every
request the stock pipeline makes was recorded. When prompts change, this fails until
the session is re-recorded (``python -m agents.demo.record``); otherwise the demo
answers every changed request from its director instead of the recording."""

from __future__ import annotations

from pathlib import Path

from agents.demo.director import SESSION
from agents.demo.record import run_demo
from orchestra.models.record import ReplayModel, read_recording

RERECORD = "re-record the demo's session: python -m agents.demo.record"


async def test_every_request_of_the_demo_is_in_its_recorded_session(tmp_path: Path) -> None:
    replay = ReplayModel(SESSION, key="task", name="demo")  # strict, no fallback
    run = await run_demo(replay, tmp_path)
    assert run.status == "completed", (
        f"the pipeline asked for what {SESSION.name} does not hold ({run.error}); {RERECORD}")
    assert replay.remaining == 0, (
        f"{replay.remaining} recorded calls were never asked for: the pipeline's prompts "
        f"changed; {RERECORD}")
    assert len(replay.calls) == len(read_recording(SESSION))
