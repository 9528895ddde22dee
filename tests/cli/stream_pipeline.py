"""A two-role pipeline whose models stream slowly: ``tests.cli.stream_pipeline:build``.

``writer`` and ``critic`` each answer with a few lines of text, streamed ``size``
characters every ``every`` seconds (run input), both at once (two start tasks). With
``outline: true`` the writer first calls its ``outline`` tool (its arguments streamed
too), then answers. With ``fail_once: PATH`` the writer's first call fails (it creates
PATH; every call after that, in any process, answers): its task fails, and the run
with it, until ``orchestra resume`` retries it. ``writers: N``: N writer tasks, written
at once (the role's concurrency allows it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestra import (
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.models import Chunks
from orchestra.models.base import ModelResponse


class Writer(Role):
    """[writer] You write a short poem."""

    name = "writer"

    @tool
    async def outline(self, ctx: ToolContext, points: list[str]) -> str:
        """Note the poem's outline first."""
        return f"outlined {len(points)} points"


class Critic(Role):
    """[critic] You write a short review."""

    name = "critic"


def answer(role: str, lines: int) -> str:
    return "\n".join(f"{role} line {i}: " + "words " * 6 for i in range(1, lines + 1))


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    lines = int(inp.get("lines", 4))

    def script(request: ModelRequest) -> ModelResponse | str:
        writer = "[writer]" in request.messages[0].content
        marker = Path(inp["fail_once"]) if writer and inp.get("fail_once") else None
        if marker is not None and not marker.exists():
            marker.touch()
            raise RuntimeError("the writer's model failed once (fail_once)")
        if writer and inp.get("outline") and not any(m.role == "tool"
                                                     for m in request.messages):
            return reply("", tool_call("outline", {"points": [f"point {i}: " + "idea " * 5
                                                              for i in range(lines)]},
                                       id="o1"))
        return answer("writer" if writer else "critic", lines)

    return Pipeline("stream-demo", roles=[Writer(), Critic()],
                    start=lambda i: [*(NewTask("writer", i, max_attempts=1)
                                       for _ in range(int(inp.get("writers", 1)))),
                                     NewTask("critic", i, max_attempts=1)],
                    model=FunctionModel(script, name="stream-demo", stream=Chunks(
                        size=int(inp.get("size", 6)), every=float(inp.get("every", 0.02)))),
                    ref="tests.cli.stream_pipeline:build")
