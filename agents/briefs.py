"""What each stock role reads as its task: plain text built from the task's input.

A small model follows a short brief in prose better than a JSON dump of its input.
The spec comes first and the parts that change between rounds (comments, the
current code, a test report) last, so the start of every request of a task is the
same bytes and a local server reuses its prompt cache. Pure functions of the input:
a replay renders the same text.
"""

from __future__ import annotations

from typing import Any

from agents.checks import dotted
from agents.inputs import ModuleTask, module_task
from agents.roles import ModuleSpec
from agents.specread import api_name, import_names, read_api

__all__ = ["coder_brief", "reviewer_brief", "tester_brief"]

REPORT_CHARS = 2500
"""How much of a pytest report a brief quotes (its end: the failures and the summary)."""


def _api(module: ModuleSpec) -> str:
    """The API as a list; a class's methods indented under it (the class is what is at
    module level: a method listed flat reads as a function to write there)."""
    api = read_api(module.public_api)
    lines, owner = [], False
    for sig in module.public_api:
        name, _, member = api_name(sig).partition(".")
        if member and name in api.classes:
            lines.append(f"    - method {sig.removeprefix(name + '.')}")
        elif name in api.classes:
            owner = not name.endswith(("Error", "Exception"))
            lines.append(f"- {sig}" if sig.startswith("class ") or not owner else
                         f"- class {name}, built as {sig}")
        elif owner and name in api.methods:
            lines.append(f"    - method {sig}")
        else:
            lines.append(f"- {sig}")
    return "\n".join(lines) or "- (see the spec)"


def _uses(task: ModuleTask) -> str:
    if not task.uses:
        return ""
    lines = ["", "It builds on these modules of the project (written before it; import them "
                 "by these names, do not copy their code):"]
    for u in task.uses:
        names = ", ".join(import_names(u.public_api))
        lines.append(f"- {u.path}: from {dotted(u.path)} import {names}")
        lines += [f"    {sig}" for sig in u.public_api]
    return "\n".join(lines)


def report_tail(report: Any) -> str:
    """The end of a test report's output (where pytest puts failures and counts)."""
    output = str(report.get("output", "")) if isinstance(report, dict) else ""
    output = output.strip()
    return output if len(output) <= REPORT_CHARS else "...\n" + output[-REPORT_CHARS:]


def _spec(task: ModuleTask) -> str:
    return f"# The spec\n\n{task.spec.strip()}\n"


def _module_spec(task: ModuleTask) -> str:
    """The spec's opening and the module's own section, when the spec has one per module
    (else the whole spec): a tester shown every module's part mixes them up (seen: the
    evaluator's examples in the tokenizer's tests)."""
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


def coder_brief(task_input: Any) -> str:
    """The coder's task: the spec, its module and API, then any round's feedback."""
    task = module_task(task_input)
    module, path = task.module, task.path
    parts = [_spec(task),
             f"# Your task\n\nWrite the module {path} ({dotted(path)}): "
             f"{module.purpose}\nIts public API, at module level, with exactly "
             f"these names and parameters:\n{_api(module)}{_uses(task)}\n"
             f"Its tests are in {module.test_path}, written by the tester from the "
             "spec; you write only the module, with the standard library only. Reply with "
             f"the complete module in one fenced block labelled {path}."]
    return "\n\n".join(parts + _rounds(task, task.current, "# The module as it is now",
                                        path, "# Review comments to address"))


def tester_brief(task_input: Any) -> str:
    """The tester's task: the spec and the module's API (never its code)."""
    task = module_task(task_input)
    module, path = task.module, task.path
    parts = [_module_spec(task),
             f"# Your task\n\nWrite {module.test_path}, the pytest tests of {path}, "
             f"and only them: another developer writes {path}. Import what you test with: "
             f"from {dotted(path)} import ...\nIts public API:\n{_api(module)}\n"
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
