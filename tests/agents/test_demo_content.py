"""The bundled demo content is real: correct code passes its tests, the buggy wrap fails."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agents.testrunner import run_pytest

DEMO = Path(__file__).resolve().parents[2] / "agents" / "demo"
MODULES: dict[str, dict[str, Any]] = json.loads((DEMO / "modules.json").read_text("utf-8"))
CODE_MODULES = MODULES


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def _write_library(root: Path, *, buggy_wrap: bool = False) -> None:
    for name, entry in CODE_MODULES.items():
        code = entry["buggy_code"] if buggy_wrap and name == "wrap" else entry["code"]
        _write(root, entry["path"], code)
        _write(root, entry["test_path"], entry["tests"])


def test_manifest_shape() -> None:
    assert set(MODULES) == {"slugify", "wrap", "stats"}
    assert [n for n, e in MODULES.items() if "buggy_code" in e] == ["wrap"]
    for name, entry in CODE_MODULES.items():
        assert entry["path"] == f"textkit/{name}.py"
        assert entry["test_path"] == f"tests/test_{name}.py"
        assert entry["purpose"]
        for signature in entry["public_api"]:
            assert f"def {signature}:" in entry["code"]
        assert 4 <= entry["tests"].count("\ndef test_") <= 8
    wrap = MODULES["wrap"]
    quoted = re.findall(r"`([^`]+)`", wrap["review_comment"])
    assert quoted[0] in wrap["buggy_code"] and quoted[0] not in wrap["code"]
    assert quoted[-1] in wrap["code"]  # the suggested fix is what the correct code does
    assert wrap["fix_note"]


async def test_correct_library_passes_its_tests(tmp_path: Path) -> None:
    _write_library(tmp_path)
    report = await run_pytest(tmp_path)
    assert report.passed, report.output
    assert report.tests_failed == report.tests_errors == 0
    assert report.tests_passed >= 15


@pytest.mark.parametrize("name", sorted(CODE_MODULES))
async def test_each_module_passes_on_its_own(tmp_path: Path, name: str) -> None:
    """Each module and its tests pass with no other module (and no __init__.py) there."""
    entry = CODE_MODULES[name]
    _write(tmp_path, entry["path"], entry["code"])
    _write(tmp_path, entry["test_path"], entry["tests"])
    report = await run_pytest(tmp_path, entry["test_path"])
    assert report.passed, report.output


async def test_buggy_wrap_is_caught_by_its_tests(tmp_path: Path) -> None:
    _write_library(tmp_path, buggy_wrap=True)
    report = await run_pytest(tmp_path, "tests/test_wrap.py")
    assert not report.passed
    assert report.tests_failed >= 1
    assert "AssertionError" in report.output
    assert "assert ['aaa bbbb'] == ['aaa', 'bbbb']" in report.output
    failed = re.findall(r"^FAILED tests/test_wrap\.py::(\w+)", report.output, re.MULTILINE)
    assert failed
    for test_name in failed:
        assert test_name in MODULES["wrap"]["review_comment"]


async def test_the_demo_model_answers_requests_its_session_lacks() -> None:
    """Another pytest may word a report differently: the demo then asks its director,
    which answers as the recording would have."""
    from agents.demo.director import director_model
    from orchestra.models.base import ModelRequest, ModelSettings
    from orchestra.models.record import ReplayModel, read_recording

    replay = ReplayModel(DEMO / "session.jsonl", key="task", fallback=director_model())
    calls = read_recording(DEMO / "session.jsonl")
    coder = next(c for c in calls if c.request["settings"].get("temperature"))  # a sample
    recorded = coder.response
    messages = _messages(coder.request["messages"])
    # the coder's new sample with the spec worded differently (a spec edited since)
    task = messages[-1]
    changed = (*messages[:-1], replace(task, content=task.content.replace("\n", "\n ", 1)))
    answered = await replay.request(ModelRequest(changed, settings=ModelSettings(
        **coder.request["settings"])))
    assert replay.fallbacks == 1
    assert (answered.text, answered.tool_calls) == (recorded.text, recorded.tool_calls)


def _messages(raw: list[dict[str, Any]]) -> tuple[Any, ...]:
    from orchestra._types import ToolCallRecord
    from orchestra.types import Message

    return tuple(Message(m["role"], m["content"], tuple(
        ToolCallRecord(c["id"], c["name"], c["arguments"]) for c in m.get("tool_calls") or []),
        tool_call_id=m.get("tool_call_id"), name=m.get("name")) for m in raw)
