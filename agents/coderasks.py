"""What the coder says to the model: its first request, the one a user would make of
the model asked once for the module, and the feedback that asks for another answer
(what the answer's tests and calls showed). Pure functions of the task and the
candidate as journaled: a replay words them alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.checks import dotted
from agents.failures import how_it_failed
from agents.inputs import ModuleTask
from agents.moduletask import first_failure
from agents.speccases import CASE_PREFIX
from agents.testsplit import failed_tests

__all__ = ["ONE_SHOT_SYSTEM", "how_it_did", "module_request", "revision", "spec_failures"]


ONE_SHOT_SYSTEM = "You are a helpful assistant and an expert Python programmer."
"""The first request's system prompt: a user's, as ``benchmarks.one_shot`` asks, so the
first answer is the one the model gives when asked once."""


def module_request(spec: str, path: str, written: Mapping[str, str],
                   later: Sequence[str] = ()) -> str:
    """The request a user makes of the model once for a module: the spec, the modules
    already written, then "write this module" (``later``: what a later round adds). The
    one-shot baseline asks with this function, so the coder's first answer is the floor."""
    parts = [spec.rstrip()]
    if written:
        parts.append("The modules already written:")
        parts.extend(f"`{p}`:\n\n```python\n{code.rstrip()}\n```" for p, code in
                     written.items())
    parts.extend(later)
    parts.append(f"Write `{path}`. Reply with the complete module in one fenced "
                 "```python block.")
    return "\n\n".join(parts)


def revision(mine: dict[str, Any], task: ModuleTask) -> str:
    """The feedback for an answer that does not import: its traceback, to its author (an
    answer that imports is followed by a new sample: :func:`agents.decide.decide`)."""
    path = task.path
    return (f"{mine['report']['output']}\n\nFix {path} so that it imports like this (its "
            f"users and tests import it as `import {dotted(path)}` from the workspace root). "
            f"Reply with the complete corrected file in one fenced block labelled {path}.")


def how_it_did(mine: dict[str, Any]) -> str:
    """What an answer did: its tests, or, with none, a stub it left or the calls on which
    its own code raised (why a new sample was asked: journaled, and told to it)."""
    passed, total = mine["score"][:2]
    first = first_failure(mine["report"])
    said = [f"passed {passed} of its {total} tests"
            + (f" (the first failure: {first})" if first else "")] if total else []
    if mine.get("stubs"):
        said.append(f"left {', '.join(mine['stubs'])} unwritten (a stub)")
    raised = [f"{call.splitlines()[-1]} raised {o[1:]}" for call, o in
              (mine.get("runs") or {}).items() if o.startswith("!")][:3]
    if raised and not total:
        said.append("raised an error when run: " + "; ".join(raised))
    return ", and ".join(said) or ("ran, but no test checks it (versions are compared by what "
                                   "they return on the same calls)")


def spec_failures(report: dict[str, Any], task: ModuleTask) -> str:
    """The spec's own examples a test run failed, said first: among many failures (some
    of them a tester's errors) a small model fixes none."""
    out = str(report.get("output", ""))
    failed = failed_tests(out)
    lines = [f"- {'; '.join(c.setup) + '; then ' if c.setup else ''}{c.call} should "
             f"{'raise ' + c.error if c.error else 'be ' + str(c.expected)}"
             + (f"; got: {got}" if (got := how_it_failed(out, f"{CASE_PREFIX}{n}")) else "")
             for n, c in enumerate(task.stated.cases, 1) if f"{CASE_PREFIX}{n}" in failed]
    return ("These examples, stated by the spec itself, fail; fix them first:\n"
            + "\n".join(lines) + "\n\n") if lines else ""
