"""A plan read from the spec itself: what the architect's task falls back on.

A spec that names its module files, their test files and their signatures already is
a plan. When a (small) model's plans keep being refused, the run goes on with this one
instead of failing: every module the spec names, paired with the test file named after
it, with the signatures the spec gives.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from agents.checks import spec_paths, spec_section, spec_signatures

__all__ = ["plan_from_spec"]


def _test_for(path: str, modules: list[str], tests: list[str]) -> str | None:
    stem = PurePosixPath(path).stem
    named = [t for t in tests if PurePosixPath(t).stem in (f"test_{stem}", f"{stem}_test")]
    if len(named) == 1:
        return named[0]
    return tests[0] if len(modules) == len(tests) == 1 else None


def _purpose(spec: str, path: str) -> str:
    section = spec_section(spec, path)
    prose = [line.strip("-* ").strip() for line in section.splitlines()[1:]
             if line.strip() and not line.lstrip().startswith(("#", "`"))]
    return (prose[0].split(". ")[0][:200] if prose else "") or "as the spec describes"


def plan_from_spec(spec: str) -> dict[str, Any] | None:
    """The plan the spec states, as the architect's JSON answer would give it (None when
    the spec does not name each module's test file)."""
    modules, tests = spec_paths(spec)
    modules = [m for m in modules if PurePosixPath(m).name != "__init__.py"]
    if not modules or not tests:
        return None
    planned = []
    for path in modules:
        test_path = _test_for(path, modules, tests)
        if test_path is None:
            return None
        others = [m for m in modules if m != path]
        planned.append({"path": path, "purpose": _purpose(spec, path), "test_path": test_path,
                        "public_api": spec_signatures(spec, path, others)})
    return {"modules": planned, "decisions": [{
        "decision": "the plan is the spec's own: its modules, test files and signatures",
        "reason": "the architect's plans could not be used"}]}
