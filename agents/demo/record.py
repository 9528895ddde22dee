"""Re-record the demo's scripted session: ``python -m agents.demo.record`` (about a second).

The scripted director's traffic through a RecordingModel is exactly what the demo replays;
run it whenever the pipeline's prompts change (``test_demo_session`` fails until then).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents.demo import run_input as demo_input
from agents.demo.director import SESSION, director_model
from agents.pipeline import build_pipeline
from orchestra import Coordinator, Model, Run, SQLiteBlackboard
from orchestra.models.record import RecordingModel


async def run_demo(model: Model, directory: Path) -> Run:
    """The demo's run, every role on ``model``, its workspace and store in ``directory``."""
    workspace = directory / "ws"
    workspace.mkdir()
    run_input = demo_input(str(workspace))
    pipeline = build_pipeline(run_input)
    async with await SQLiteBlackboard.open(directory / "o.db") as store:
        return await Coordinator(store, pipeline, models={
            r.name: model for r in pipeline.roles}).run(run_input)


async def record(out: Path) -> str:
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        run = await run_demo(RecordingModel(director_model(), out, name="demo-session"),
                             Path(tmp))
        return run.status


if __name__ == "__main__":
    print(asyncio.run(record(SESSION)))
