"""What each stock role reads as its task: plain text built from the task's input.

A small model follows a short brief in prose better than a JSON dump of its input.
The spec comes first and the parts that change between rounds (comments, the
current code, a test report) last, so the start of every request of a task is the
same bytes and a local server reuses its prompt cache. Pure functions of the input:
a replay renders the same text.
"""

from __future__ import annotations

from typing import Any

from agents.checks import dotted, spec_section

__all__ = ["coder_brief", "reviewer_brief", "tester_brief"]

REPORT_CHARS = 2500
"""How much of a pytest report a brief quotes (its end: the failures and the summary)."""


def _module(task_input: Any) -> dict[str, Any]:
    module = task_input.get("module") if isinstance(task_input, dict) else None
    return module if isinstance(module, dict) else {}


def _api(module: dict[str, Any]) -> str:
    return "\n".join(f"- {sig}" for sig in module.get("public_api") or []) or "- (see the spec)"


def _uses(task_input: dict[str, Any]) -> str:
    uses = [u for u in task_input.get("uses") or [] if isinstance(u, dict)]
    if not uses:
        return ""
    lines = ["", "It builds on these modules of the project (written before it; import them "
                 "by these names, do not copy their code):"]
    for u in uses:
        names = ", ".join(str(s).split("(")[0].strip() for s in u.get("public_api") or [])
        lines.append(f"- {u.get('path')}: from {dotted(str(u.get('path')))} import {names}")
        lines += [f"    {sig}" for sig in u.get("public_api") or []]
    return "\n".join(lines)


def report_tail(report: Any) -> str:
    """The end of a test report's output (where pytest puts failures and counts)."""
    output = str(report.get("output", "")) if isinstance(report, dict) else ""
    output = output.strip()
    return output if len(output) <= REPORT_CHARS else "...\n" + output[-REPORT_CHARS:]


def _spec(task_input: dict[str, Any]) -> str:
    return f"# The spec\n\n{str(task_input.get('spec') or '').strip()}\n"


def _module_spec(task_input: dict[str, Any]) -> str:
    """The spec's opening and the module's own section, when the spec has one per module
    (else the whole spec): a tester shown every module's part mixes them up (seen: the
    evaluator's examples in the tokenizer's tests)."""
    spec = str(task_input.get("spec") or "")
    section = spec_section(spec, str(_module(task_input).get("path", "")))
    if section is spec:
        return _spec(task_input)
    lines = spec.split("\n")
    first = next((i for i, line in enumerate(lines[1:], 1) if line.startswith("##")),
                 len(lines))
    opening = "\n".join(lines[:first]).strip()
    return f"# The spec (its part about this module)\n\n{opening}\n\n{section.strip()}\n"


def _comments(task_input: dict[str, Any]) -> str:
    comments = [str(c) for c in task_input.get("comments") or []]
    return "\n".join(f"- {c}" for c in comments)


def _rounds(task_input: dict[str, Any], key: str, heading: str, path: str,
            comments: str) -> list[str]:
    """A later round's parts of a brief: the file as it is now, the review's comments and
    the last test run (last, so the start of the brief stays the same bytes)."""
    parts = []
    if task_input.get(key):
        parts.append(f"{heading}\n\n{path}\n```python\n{str(task_input[key]).rstrip()}\n```")
    if task_input.get("comments"):
        parts.append(f"{comments}\n\n" + _comments(task_input))
    if task_input.get("report"):
        parts.append("# The last test run\n\n" + report_tail(task_input["report"]))
    return parts


def coder_brief(task_input: Any) -> str:
    """The coder's task: the spec, its module and API, then any round's feedback."""
    if not isinstance(task_input, dict):
        return str(task_input)
    module = _module(task_input)
    path = module.get("path", "?")
    parts = [_spec(task_input),
             f"# Your task\n\nWrite the module {path} ({dotted(str(path))}): "
             f"{module.get('purpose', '')}\nIts public API, at module level, with exactly "
             f"these names and parameters:\n{_api(module)}{_uses(task_input)}\n"
             f"Its tests are in {module.get('test_path')}, written by the tester from the "
             "spec; you write only the module."]
    return "\n\n".join(parts + _rounds(task_input, "current", "# The module as it is now",
                                        str(path), "# Review comments to address"))


def tester_brief(task_input: Any) -> str:
    """The tester's task: the spec and the module's API (never its code)."""
    if not isinstance(task_input, dict):
        return str(task_input)
    module = _module(task_input)
    path = str(module.get("path", "?"))
    parts = [_module_spec(task_input),
             f"# Your task\n\nWrite {module.get('test_path')}, the pytest tests of {path}, "
             f"and only them: another developer writes {path}. Import what you test with: "
             f"from {dotted(path)} import ...\nIts public API:\n{_api(module)}\n"
             "Assert each example the spec gives, once; no loops over many values."]
    return "\n\n".join(parts + _rounds(
        task_input, "tests", "# The tests as they are now", str(module.get("test_path")),
        "# The reviewer found these tests wrong against the spec"))


def reviewer_brief(task_input: Any) -> str:
    """The reviewer's task: the spec, the code, its tests and the real test run."""
    if not isinstance(task_input, dict):
        return str(task_input)
    module = _module(task_input)
    raw = task_input.get("report")
    report: dict[str, Any] = raw if isinstance(raw, dict) else {}
    verdict = ("all pass" if report.get("passed") else
               f"{report.get('tests_passed', 0)} passed, {report.get('tests_failed', 0)} "
               f"failed, {report.get('tests_errors', 0)} errors")
    return "\n\n".join([
        _spec(task_input),
        f"# The module {module.get('path')}\n\n```python\n"
        f"{str(task_input.get('code') or '').rstrip()}\n```",
        f"# Its tests {module.get('test_path')}\n\n```python\n"
        f"{str(task_input.get('tests') or '').rstrip()}\n```",
        f"# The real test run: {verdict}\n\n{report_tail(report)}",
        f"# Your task\n\nReview {module.get('path')} (round {task_input.get('round', 1)})."])
