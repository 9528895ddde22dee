"""Declaring a pipeline: its roles, its first tasks, and how postings become work.

A pipeline is plain data plus small functions::

    pipeline = Pipeline(
        "review-loop",
        roles=[Writer(), Critic()],
        start=lambda input: [NewTask("writer", input)],
        routes={"writer": lambda out, task, w: w.handoffs.append(
            NewHandoff("critic", out.model_dump(), note="please review"))},
    )

A *route* runs when a task of its role completes; whatever it appends to the
:class:`Writes` (handoffs, plans, notes, tasks) commits in the same transaction
as the task's completion, so a crash never leaves a result without its
follow-up work. For the CLI to resume a run in a new process, give the pipeline
a ``ref`` (``"package.module:factory"``) that rebuilds it from the run input.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestra._errors import OrchestraError, UserError
from orchestra._store.protocol import NewHandoff, NewTask, Writes
from orchestra.models.base import Model
from orchestra.roles import Role
from orchestra.runtime.task_runner import Route

Start = Callable[[Any], Sequence[NewTask]]


@dataclass
class Pipeline:
    """Roles, the first task(s), routes, and the default model."""

    name: str
    roles: Sequence[Role]
    start: Start
    routes: Mapping[str, Route] = field(default_factory=dict)
    model: Model | None = None
    """Used by roles that declare no model of their own."""
    ref: str | None = None
    """Import path of a factory ``f(run_input) -> Pipeline``; lets any process resume runs."""
    fail_run_on_task_failure: bool = True
    """A permanently failed task fails the run (otherwise the run completes around it)."""

    def __post_init__(self) -> None:
        by_name: dict[str, Role] = {}
        for role in self.roles:
            if not isinstance(role, Role):
                raise UserError(f"pipeline {self.name!r}: {role!r} is not a Role instance "
                                "(did you pass the class instead of Coder()?)")
            if role.name in by_name:
                raise UserError(f"pipeline {self.name!r}: two roles named {role.name!r}")
            by_name[role.name] = role
        self.by_name = by_name
        unknown = set(self.routes) - set(by_name)
        if unknown:
            raise UserError(f"pipeline {self.name!r}: routes for unknown roles "
                            f"{sorted(unknown)}; roles are {sorted(by_name)}")

    def role(self, name: str) -> Role:
        try:
            return self.by_name[name]
        except KeyError:
            raise UserError(f"pipeline {self.name!r} has no role {name!r}; roles are "
                            f"{sorted(self.by_name)}") from None

    def first_tasks(self, run_input: Any) -> list[NewTask]:
        tasks = list(self.start(run_input))
        for t in tasks:
            self.role(t.role)
        if not tasks:
            raise UserError(f"pipeline {self.name!r}: start() created no tasks")
        return tasks


def fan_out(writes: Writes, to_role: str, items: Iterable[Any], *, note: str = "",
            key: Callable[[Any], str] | None = None) -> None:
    """Post one handoff (and so one task) per item: how a plan becomes parallel work."""
    for item in items:
        writes.handoffs.append(NewHandoff(to_role=to_role, payload=item, note=note,
                                          key=key(item) if key else None))


PipelineFactory = Callable[[Any], Pipeline]


def load_pipeline(ref: str, run_input: Any) -> Pipeline:
    """Import ``module:factory`` and build the pipeline for ``run_input``."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UserError(f"pipeline reference {ref!r} must look like 'package.module:factory'")
    try:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            if os.getcwd() in sys.path:
                raise
            sys.path.insert(0, os.getcwd())  # like `python -m`: the current directory
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"cannot import pipeline module {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if factory is None:
        raise UserError(f"module {module_name!r} has no {attr!r} (pipeline reference {ref!r})")
    try:
        pipeline = factory(run_input) if callable(factory) and not isinstance(factory, Pipeline) \
            else factory
    except OrchestraError:
        raise
    except Exception as exc:  # e.g. the stock pipeline's missing workspace: the input's fault
        raise UserError(f"pipeline {ref!r} refused the run input: "
                        f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(pipeline, Pipeline):
        raise UserError(f"{ref!r} did not produce a Pipeline (got {type(pipeline).__name__})")
    return pipeline
