"""What a module's task reads from its input: its stated examples as test cases, which
tests the spec vouches for, and a test report kept small. Pure: a replay reads the same."""

from __future__ import annotations

from typing import Any

from agents.briefs import report_tail
from agents.checks import dotted
from agents.failures import how_it_failed
from agents.inputs import ModuleTask
from agents.roles import REPORT_FIELDS
from agents.speccases import CASE_PREFIX, add_cases
from agents.testsplit import failed_tests, test_names

__all__ = ["cases_file", "first_failure", "score", "summary", "trusted"]


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a report says, kept small enough to travel in handoffs and the journal."""
    return {k: report.get(k) for k in REPORT_FIELDS} | {"output": report_tail(report)}


def first_failure(report: dict[str, Any]) -> str:
    """The first ``FAILED``/``ERROR`` line of a pytest report ('' when none), its message
    read whole from the test's section where pytest cut it at the terminal's width."""
    output = str(report.get("output", ""))
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            test = next(iter(failed_tests(line)), "")
            said = how_it_failed(output, test) if test and line.endswith("...") else ""
            return (f"{line.split(' - ')[0]} - {said}" if said else line)[:300]
    return ""


def trusted(tests: str) -> set[str]:
    """The tests of ``tests`` the spec vouches for: those the pipeline wrote from the
    examples it states (a model's test that merely quotes the spec is a probe)."""
    return {t for t in test_names(tests) if t.startswith(CASE_PREFIX)}


def score(report: dict[str, Any], vouched: set[str] | frozenset[str] = frozenset()
          ) -> list[int]:
    """[tests passed, tests run, vouched tests passed, vouched tests] (``decide.Tried``)."""
    passed = int(report.get("tests_passed") or 0)
    total = passed + int(report.get("tests_failed") or 0) + int(report.get("tests_errors") or 0)
    failed = failed_tests(str(report.get("output", "")))
    ok = vouched - failed if total else set()
    return [passed, total, len(ok), len(vouched)]


def cases_file(task: ModuleTask, text: str) -> str:
    """``text`` with the examples the spec states appended as tests of their own."""
    return add_cases(text, task.stated.cases, dotted(task.path))
