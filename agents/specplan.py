"""A plan read from the spec itself: what the architect's plan is completed with, and
what it falls back on.

A spec that names its module files, their test files and their signatures already is
a plan. When a (small) model's reply is no plan at all, the run goes on with this one
(no further model call): every module the spec names, paired with the test file named
after it, with the signatures the spec gives. A plan that is one keeps its choices and
gains the modules the spec names that it left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from agents.checks import dotted, spec_paths
from agents.specapi import spec_signatures

__all__ = ["complete_plan", "package_inits", "plan_from_spec"]


def _test_for(path: str, modules: list[str], tests: list[str]) -> str | None:
    stem = PurePosixPath(path).stem
    named = [t for t in tests if PurePosixPath(t).stem in (f"test_{stem}", f"{stem}_test")]
    if len(named) == 1:
        return named[0]
    return tests[0] if len(modules) == len(tests) == 1 else None


def plan_from_spec(spec: str) -> dict[str, Any] | None:
    """The plan the spec states, as the architect's JSON answer would give it (None when
    it names no module); a module whose test file it does not name is tested in
    ``test_<name>.py`` beside the test files it names (or under ``tests/``)."""
    modules, tests = spec_paths(spec)
    modules = [m for m in modules if PurePosixPath(m).name != "__init__.py"]
    if not modules:
        return None
    where = str(PurePosixPath(tests[0]).parent) if tests else "tests"
    planned = []
    for path in modules:
        test_path = _test_for(path, modules, tests) or str(
            PurePosixPath(where) / f"test_{PurePosixPath(path).stem}.py")
        others = [m for m in modules if m != path]
        planned.append({"path": path, "purpose": "as the spec describes", "test_path": test_path,
                        "public_api": spec_signatures(spec, path, others)})
    return {"modules": planned, "decisions": [{
        "decision": "the plan is the spec's own: its modules, test files and signatures",
        "reason": "the architect's plans could not be used"}]}


def complete_plan(plan: dict[str, Any], spec: str) -> dict[str, Any]:
    """``plan`` (the architect's, as JSON) made whole without asking again: each module
    once, each with a test file of its own, and every module the spec names (from the
    spec's own plan) that it left out. Its other choices stand: test files and helper
    modules the spec does not name are advice, never a reason to refuse it."""
    modules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for m in plan.get("modules", []):
        path = str(PurePosixPath(str(m["path"]).strip()))
        if path not in seen:
            seen.add(path)
            modules.append({**m, "path": path})
    decisions = list(plan.get("decisions", []))
    own = plan_from_spec(spec)
    added = [m for m in (own or {}).get("modules", []) if m["path"] not in seen]
    if added:
        modules += added
        decisions.append({"decision": "added " + ", ".join(m["path"] for m in added),
                          "reason": "the spec names them and the plan left them out"})
    # the spec's own modules first: a helper it does not name waits for them
    named = {m["path"] for m in (own or {}).get("modules", [])}
    modules.sort(key=lambda m: m["path"] not in named)
    taken = {m["path"] for m in modules}
    for m in modules:
        test_path = str(PurePosixPath(str(m["test_path"]).strip()))
        if test_path in taken:  # shared with another module (or a module itself)
            stem = PurePosixPath(m["path"]).stem
            test_path = str(PurePosixPath(test_path).parent / f"test_{stem}.py")
            if test_path in taken:
                test_path = f"tests/test_{dotted(m['path']).replace('.', '_')}.py"
        taken.add(test_path)
        m["test_path"] = test_path
    return {**plan, "modules": modules, "decisions": decisions}


def package_inits(paths: Sequence[str]) -> list[str]:
    """The ``__init__.py`` files the packages of the modules at ``paths`` need, outermost
    first: ``tally/items.py`` is imported as ``tally.items``, and a user expects
    ``tally/__init__.py`` beside it (without one ``tally`` imports as a namespace package).
    Not one the plan has as a module of its own (its coder writes it), nor one in a test
    directory or a directory whose name is no identifier (nothing imports it as a package)."""
    out: list[str] = []
    for path in paths:
        parts = PurePosixPath(path).parts[:-1]
        for i in range(1, len(parts) + 1):
            init = str(PurePosixPath(*parts[:i], "__init__.py"))
            if (parts[0] not in ("tests", "test") and all(p.isidentifier() for p in parts[:i])
                    and init not in paths and init not in out):
                out.append(init)
    return out
