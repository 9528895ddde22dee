"""Re-record the demo's scripted session: ``python -m agents.demo.record``.

Runs the stock pipeline with the scripted director (no real model) through a
RecordingModel, so ``session.jsonl`` is exactly the traffic the demo replays.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents.demo import run_input as demo_input
from agents.demo.director import SESSION, director_model
from agents.pipeline import build_pipeline
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.models.record import RecordingModel


async def record(out: Path) -> str:
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        run_input = demo_input(str(workspace))
        pipeline = build_pipeline(run_input)
        model = RecordingModel(director_model(), out, name="demo-session")
        store = await SQLiteBlackboard.open(Path(tmp) / "o.db")
        try:
            run = await Coordinator(store, pipeline, models={
                r.name: model for r in pipeline.roles}).run(run_input)
        finally:
            await store.close()
        return run.status


if __name__ == "__main__":
    print(asyncio.run(record(SESSION)))
