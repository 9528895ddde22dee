"""What each stock role reads as its task: a short brief in prose (a small model follows
it better than a JSON dump), the parts that change between rounds last so a local
server reuses its prompt cache. Pure: a replay renders the same text.
"""

from __future__ import annotations

from typing import Any

from agents.checks import dotted
from agents.inputs import ModuleTask, module_task

__all__ = ["coder_rounds", "reviewer_brief", "tester_brief"]

REPORT_CHARS = 2500
"""How much of a pytest report a brief quotes (its end: the failures and the summary)."""


def report_tail(report: Any) -> str:
    """The end of a test report's output (where pytest puts failures and counts)."""
    output = (str(report.get("output", "")) if isinstance(report, dict) else "").strip()
    return output if len(output) <= REPORT_CHARS else "...\n" + output[-REPORT_CHARS:]


def _spec(task: ModuleTask) -> str:
    return f"# The spec\n\n{task.spec.strip()}\n"


def _module_spec(task: ModuleTask) -> str:
    """The spec's opening and the module's own section, when it has one (a tester shown
    every module's part mixes them up)."""
    section = task.stated.section
    if section.strip() == task.spec.strip():
        return _spec(task)
    lines = task.spec.split("\n")
    first = next((i for i, line in enumerate(lines[1:], 1) if line.startswith("##")),
                 len(lines))
    opening = "\n".join(lines[:first]).strip()
    return f"# The spec (its part about this module)\n\n{opening}\n\n{section.strip()}\n"


def _rounds(task: ModuleTask, earlier: str, heading: str, path: str,
            comments: str) -> list[str]:
    """A later round's parts of a brief: the file as it is now, the review's comments and
    the last test run (last, so the start of the brief stays the same bytes)."""
    parts = []
    if earlier:
        parts.append(f"{heading}\n\n{path}\n```python\n{earlier.rstrip()}\n```")
    if task.comments:
        parts.append(f"{comments}\n\n" + "\n".join(f"- {c}" for c in task.comments))
    if task.report:
        parts.append("# The last test run\n\n" + report_tail(task.report))
    return parts


def coder_rounds(task: ModuleTask) -> list[str]:
    """What a later coder round adds to the first request (see :func:`_rounds`)."""
    return _rounds(task, task.current, "# The module as it is now", task.path,
                   "# Review comments to address")


def tester_brief(task_input: Any) -> str:
    """The tester's task: the spec's part about the module (never its code)."""
    task = module_task(task_input)
    module, path = task.module, task.path
    parts = [_module_spec(task),
             f"# Your task\n\nWrite {module.test_path}, the pytest tests of {path}, "
             f"and only them: another developer writes {path}. Import what you test with: "
             f"from {dotted(path)} import ...\n"
             "Assert each example the spec gives, once; no loops over many values."]
    return "\n\n".join(parts + _rounds(
        task, task.tests, "# The tests as they are now", module.test_path,
        "# The reviewer found these tests wrong against the spec"))


def reviewer_brief(task_input: Any) -> str:
    """The reviewer's task: the spec, the code, its tests and the real test run."""
    task = module_task(task_input)
    report = task.report or {}
    verdict = ("all pass" if report.get("passed") else
               f"{report.get('tests_passed', 0)} passed, {report.get('tests_failed', 0)} "
               f"failed, {report.get('tests_errors', 0)} errors")
    return "\n\n".join([
        _spec(task),
        f"# The module {task.path}\n\n```python\n{task.code.rstrip()}\n```",
        f"# Its tests {task.test_path}\n\n```python\n{task.tests.rstrip()}\n```",
        f"# The real test run: {verdict}\n\n{report_tail(report)}",
        f"# Your task\n\nReview {task.path} (round {task.round})."])
