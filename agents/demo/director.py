"""The scripted model behind ``orchestra demo``: replies decided from each request.

It plays every role for the bundled ``textkit`` spec; files are really written and tests
really run, and the buggy first ``wrap`` is caught by the coder's own test run. The
shipped ``session.jsonl`` is its traffic recorded (``python -m agents.demo.record``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from orchestra import FunctionModel, Model, ModelRequest, ModelResponse, reply

DEMO_DIR = Path(__file__).parent
SESSION = DEMO_DIR / "session.jsonl"
"""The shipped recording of this director's traffic (``python -m agents.demo.record``)."""


@cache
def modules() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DEMO_DIR / "modules.json").read_text())
    return data


def spec_text() -> str:
    return (DEMO_DIR / "spec.md").read_text()


def _task_view(request: ModelRequest) -> tuple[str, str]:
    """(role, the module path the task is about ('' for the plan)) of a request."""
    system = request.messages[0].content
    role = next((r for r, opening in _OPENINGS if system.startswith(opening)), "coder")
    start = max(i for i, m in enumerate(request.messages) if m.name == "task")
    task = request.messages[start].content
    # a brief's task follows its heading; the coder's first request ends with it
    brief = (task.split("# Your task", 1)[-1] if "# Your task" in task
             else task.rsplit("\n\n", 1)[-1])
    path = next((m["path"] for k, m in modules().items() if k != "init"
                 and m["path"] in brief), "")
    return role, path


_OPENINGS = (("architect", "You are the architect"), ("tester", "You write the pytest"),
             ("reviewer", "You review one"), ("coder", "You are a helpful assistant"))


def _by_path(path: str) -> dict[str, Any]:
    return dict({m["path"]: m for k, m in modules().items() if k != "init"}[path])


_DECISIONS = (
    ("one module per utility, each with its own test file", "modules stay independent, so "
     "they can be built and reviewed in parallel and a failure in one does not block the others"),
    ("standard library only (re, unicodedata, collections)",
     "the spec asks for no dependencies; installs stay trivial"),
    ("textkit/__init__.py re-exports nothing eagerly",
     "importing one module must not require the others to exist yet"),
)


def _architect() -> ModelResponse:
    mods = [m for k, m in modules().items() if k != "init"]
    return reply(json.dumps({
        "modules": [{k: m[k] for k in ("path", "purpose", "public_api", "test_path")}
                    for m in mods],
        "decisions": [{"decision": d, "reason": r} for d, r in _DECISIONS]}))


def _fenced(path: str, text: str) -> str:
    return f"{path}\n```python\n{text.rstrip()}\n```\n"


def _tester(path: str) -> ModelResponse:
    mod = _by_path(path)
    return reply(f"The tests of {path}, from the spec:\n\n" + _fenced(mod["test_path"],
                                                                      mod["tests"]))


def _coder(path: str, request: ModelRequest) -> ModelResponse:
    mod = _by_path(path)
    # a new sample is asked as the first answer was, warm (the first is greedy)
    if request.settings.temperature:  # a new sample: the whole file, right this time
        return reply(f"{mod.get('fix_note')}\n\n" + _fenced(path, mod["code"]))
    if "buggy_code" in mod:
        return reply(f"Here is {path}:\n\n" + _fenced(path, mod["buggy_code"]))
    return reply(f"implemented {path}\n\n" + _fenced(path, mod["code"]))


def _reviewer(path: str, request: ModelRequest) -> ModelResponse:
    task = next(m.content for m in reversed(request.messages) if m.name == "task")
    passed = "# The real test run: all pass" in task
    comment = _by_path(path).get("review_comment") or "the tests fail; see the test output"
    verdict = {"module": path, "approved": passed, "fix": "code",
               "comments": [] if passed else [comment]}
    return reply(json.dumps(verdict))


def direct(request: ModelRequest) -> ModelResponse:
    """One scripted reply for ``request``."""
    role, path = _task_view(request)
    if role == "architect":
        return _architect()
    if role == "tester":
        return _tester(path)
    return _coder(path, request) if role == "coder" else _reviewer(path, request)


def director_model() -> FunctionModel:
    return FunctionModel(direct, name="demo-director")


def demo_model() -> Model:
    """The shipped session replayed per task; what it lacks (another pytest may word its
    reports differently), this director answers, so the demo still runs."""
    from orchestra.models.record import ReplayModel
    from orchestra.models.testing import Chunks

    # no warning on the fallback: it is meant for us (test_demo_session catches the drift);
    # streamed as a local model would, so a newcomer sees each agent's text arrive
    return ReplayModel(SESSION, key="task", name="demo", fallback=director_model(),
                       warn_on_fallback=False, stream=Chunks(size=24, every=0.01))
