"""A plan read from the spec itself (a spec that names its modules, test files and
signatures already is one): what the architect's plan is completed with, and what the
run goes on with, no further model call, when a model's reply is no plan at all.
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
    """The plan the spec states, as the architect's JSON (None when it names no module); a
    module whose test file it does not name gets ``test_<name>.py`` beside those it names."""
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
    once, each with a test file of its own, plus the modules the spec names that it left
    out. Its other choices stand: what the spec does not name is never a refusal."""
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
    first (a user expects ``tally/__init__.py`` beside ``tally/items.py``); not one the
    plan has as a module, nor in a test directory or one no import can name."""
    out: list[str] = []
    for path in paths:
        parts = PurePosixPath(path).parts[:-1]
        for i in range(1, len(parts) + 1):
            init = str(PurePosixPath(*parts[:i], "__init__.py"))
            if (parts[0] not in ("tests", "test") and all(p.isidentifier() for p in parts[:i])
                    and init not in paths and init not in out):
                out.append(init)
    return out
