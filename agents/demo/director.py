"""The scripted model behind ``orchestra demo``: replies decided from each request.

It plays architect, coder and reviewer for the bundled ``textkit`` spec. Files are
really written by the tools and tests really run; the reviewer's verdict follows
the real test result, so the deliberately buggy first version of ``wrap`` is
caught by pytest, sent back with a concrete comment, and fixed in round 2.

The shipped ``session.jsonl`` is this director's traffic recorded with
:class:`orchestra.models.record.RecordingModel` (``python -m agents.demo.record``);
the demo replays that file, the same way a user replays a recorded real-model run.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from orchestra import FunctionModel, ModelRequest, ModelResponse, reply, tool_call

DEMO_DIR = Path(__file__).parent
SESSION = DEMO_DIR / "session.jsonl"
"""The shipped recording of this director's traffic (``python -m agents.demo.record``)."""


@cache
def modules() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DEMO_DIR / "modules.json").read_text())
    return data


def spec_text() -> str:
    return (DEMO_DIR / "spec.md").read_text()


def _task_view(request: ModelRequest) -> tuple[str, Any, list[Any]]:
    """(role, task input, messages after the task input) of a request."""
    system = request.messages[0].content
    role = (
        "architect"
        if "architect" in system.split(".")[0]
        else "reviewer"
        if system.startswith("You review")
        else "coder"
    )
    start = max(i for i, m in enumerate(request.messages) if m.name == "task")
    task = json.loads(request.messages[start].content)
    return role, task, list(request.messages[start + 1 :])


def _by_path(path: str) -> dict[str, Any]:
    for name, mod in modules().items():
        if name != "init" and mod["path"] == path:
            return dict(mod)
    raise KeyError(path)


def _architect() -> ModelResponse:
    mods = [m for k, m in modules().items() if k != "init"]
    plan = {
        "modules": [
            {k: m[k] for k in ("path", "purpose", "public_api", "test_path")} for m in mods
        ],
        "decisions": [
            {
                "decision": "one module per utility, each with its own test file",
                "reason": "modules stay independent, so they can be built and reviewed in "
                "parallel and a failure in one does not block the others",
            },
            {
                "decision": "standard library only (re, unicodedata, collections)",
                "reason": "the spec asks for no dependencies; installs stay trivial",
            },
            {
                "decision": "textkit/__init__.py re-exports nothing eagerly",
                "reason": "importing one module must not require the others to exist yet",
            },
        ],
    }
    return reply(json.dumps(plan))


def _coder(task: dict[str, Any], after: list[Any]) -> ModelResponse:
    mod = _by_path(task["module"]["path"])
    rnd = int(task.get("round", 1))
    tool_results = [m for m in after if m.role == "tool"]
    if not tool_results:
        code = mod.get("buggy_code") if rnd == 1 and "buggy_code" in mod else mod["code"]
        calls = [
            tool_call("write_file", {"path": mod["path"], "content": code}, id="w1"),
            tool_call("write_file", {"path": mod["test_path"], "content": mod["tests"]}, id="w2"),
        ]
        if mod["path"].endswith("slugify.py"):
            calls.append(
                tool_call(
                    "write_file",
                    {
                        "path": "textkit/__init__.py",
                        "content": '"""textkit: small, dependency-free text utilities.\n\n'
                        "Import from the modules: textkit.slugify, textkit.wrap, "
                        'textkit.stats."""\n',
                    },
                    id="w3",
                )
            )
        return reply("", *calls)
    if rnd > 1 and not any(m.name == "run_tests" for m in tool_results):
        return reply("", tool_call("run_tests", {"path": mod["test_path"]}, id="t1"))
    summary = mod.get("fix_note") if rnd > 1 else f"implemented {mod['path']} with tests"
    files = [mod["path"], mod["test_path"]]
    return reply(json.dumps({"module": mod["path"], "module_code": "", "test_code": "",
                             "summary": summary, "files": files}))


def _reviewer(task: dict[str, Any], after: list[Any]) -> ModelResponse:
    mod = _by_path(task["module"]["path"])
    results = {m.name: m.content for m in after if m.role == "tool"}
    if "run_tests" not in results:
        return reply(
            "",
            tool_call("run_tests", {"path": mod["test_path"]}, id="t1"),
            tool_call("read_file", {"path": mod["path"]}, id="r1"),
        )
    passed = json.loads(results["run_tests"]).get("passed", False)
    if passed:
        verdict = {"module": mod["path"], "approved": True, "comments": []}
    else:
        comment = mod.get("review_comment") or "the tests fail; see the test output"
        verdict = {"module": mod["path"], "approved": False, "comments": [comment]}
    return reply(json.dumps(verdict))


def direct(request: ModelRequest) -> ModelResponse:
    """One scripted reply for ``request``."""
    role, task, after = _task_view(request)
    if role == "architect":
        return _architect()
    if role == "coder":
        return _coder(task, after)
    return _reviewer(task, after)


def director_model() -> FunctionModel:
    return FunctionModel(direct, name="demo-director")
