"""Declaring a pipeline: its roles, its first tasks, and how postings become work.

A pipeline is plain data plus small functions::

    pipeline = Pipeline(
        "review-loop",
        roles=[Writer(), Critic()],
        start=lambda input: [NewTask("writer", input)],
        routes={Writer: lambda draft, task, w: [handoff(Critic, draft, note="please review")]},
    )

A *route* runs when a task of its role completes; the postings it returns (or appends
to the :class:`Writes` it is given) commit in the same transaction as the task's
completion, so a crash never leaves a result without its follow-up work. Every
posting is checked there: a handoff to a role the pipeline lacks, or a payload that
does not match the receiving role's ``input`` model, fails the finishing task at once
(instead of leaving a task no worker will ever take). A route may also be just a role
class (or name): the output is handed to that role as is.

To resume a run in a new process the pipeline must be rebuildable: it is, without
any ``ref``, when it is built by a top-level function ``f(run_input)`` or assigned to
a top-level name of an importable module.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import ModuleType
from typing import Any

import pydantic

from orchestra._errors import OrchestraError, RoleDefinitionError, UserError
from orchestra._types import Task
from orchestra.control import All, Control
from orchestra.coordinator.pipeline_ref import HOW_TO_REF, derive_ref, import_ref, module_ref
from orchestra.coordinator.versions import Version, pipeline_version
from orchestra.mcp.declare import MCPServer
from orchestra.models.base import Model
from orchestra.models.prices import Price
from orchestra.roles import Patched, Role
from orchestra.runtime.patches import TaskPatches
from orchestra.store.entry_protocol import NewEntry
from orchestra.store.protocol import Board, NewHandoff, NewNote, NewTask, Writes
from orchestra.subscriptions import BoardView, Stall

__all__ = ["Demo", "PatchedRoute", "Pipeline", "Route", "Summary", "fan_out", "handoff",
           "load_pipeline"]

Start = Callable[[Any], Sequence[NewTask]]
Post = NewHandoff | NewTask | NewNote | NewEntry
Route = Callable[[Any, Task, Writes], "Iterable[Post] | Post | None"]
"""``route(output, task, writes)``: return the postings (or append them to ``writes``)."""
PatchedRoute = Callable[[Any, Task, Writes, Patched], "Iterable[Post] | Post | None"]
"""``route(output, task, writes, patched)``: a route that carries a change to runs in
flight behind ``patched(name)`` (a patch its finishing role declares): True when the
task began under the code with the patch, False for one journaled before it."""
RoleRef = str | type[Role]
Summary = Callable[[Board, str], Awaitable[list[str]]]
"""``summary(board, run_id)``: what a finished run did, as lines for a person."""


@dataclass(frozen=True)
class Demo:
    """What ``orchestra demo`` runs, registered by a package under the entry point group
    ``orchestra.demo`` (the stock one in this project's pyproject.toml), so the CLI
    imports no example code and any package can ship its own demo the same way. Its
    pipeline is also what ``orchestra run`` runs when no ``--pipeline`` is given."""

    pipeline: str
    """The pipeline's reference, ``package.module:factory``."""
    model: str
    """The model spec used when ``--model`` is not given (``python:module:factory``...)."""
    run_input: Callable[[str], Any]
    """The run input for a workspace directory (an absolute path)."""
    notice: str = ""
    """Printed before the run when the default model is used (say it is not a real one)."""


def _role_name(ref: Any) -> str:
    if isinstance(ref, type) and issubclass(ref, Role):
        return ref.name
    if isinstance(ref, str):
        return ref
    raise UserError(f"{ref!r} names no role: use a Role class or a role name")


role_name = _role_name
"""A role given by class or name, as its name (``UserError`` for anything else)."""


def _check_approvals(role: Role, shared: Sequence[MCPServer]) -> None:
    """A role's ``needs_approval`` names only its tools. An MCP server's tools are known
    once listed (at the task's start: ``orchestra.mcp.listing``); a role without servers
    is checked now."""
    unknown = set(type(role).needs_approval) - set(role.bound_tools())
    if unknown and not type(role).mcp and not shared:
        raise RoleDefinitionError(role.name, "needs_approval",
                                  f"unknown tool(s) {sorted(unknown)}; its tools: "
                                  f"{sorted(role.bound_tools())} (and it has no MCP servers, "
                                  "of its own or of the pipeline)")


def handoff(to: RoleRef, payload: Any, *, note: str = "", key: str | None = None,
            max_attempts: int = 3) -> NewHandoff:
    """A handoff to a role given by class (or name); a pydantic payload is sent as JSON."""
    return NewHandoff(_role_name(to), payload, note=note, max_attempts=max_attempts, key=key)


@dataclass
class Pipeline:
    """Roles, the first task(s), routes, and the default model."""

    name: str
    roles: Sequence[Role]
    start: Start
    routes: Mapping[RoleRef, Route | PatchedRoute | RoleRef] = field(default_factory=dict)
    """Per finishing role (class or name): a function, or the role to hand the output to.
    A function with a ``patched`` parameter is given the task's patches (``PatchedRoute``)."""
    model: Model | None = None
    """Used by roles that declare no model of their own."""
    ref: str | None = None
    """Import path ``"package.module:factory"`` of a factory ``f(run_input) -> Pipeline`` (or of
    a Pipeline); derived automatically when the pipeline is built by a top-level function or
    bound to a top-level name of an importable module."""
    fail_run_on_task_failure: bool = True
    """A permanently failed task fails the run (otherwise the run completes around it)."""
    prices: Mapping[str, Price] = field(default_factory=dict)
    """Price overrides by model name (a private deployment, a negotiated rate); they win
    over the maintained table (``orchestra.models.prices``)."""
    summary: Summary | None = None
    """``await summary(board, run_id)``: lines telling a person what a finished run did;
    the CLI prints them after the run's status (``orchestra demo``, ``run``, ``resume``)."""
    mcp: Sequence[MCPServer] = ()
    """MCP servers whose tools every role offers (after the role's own ``mcp``)."""
    done: Callable[[BoardView], bool] | None = None
    """``done(board)``: the board says the work is done (every entry, whatever its scope):
    the run completes, even with tasks left (docs/blackboard.md)."""
    control: Control = field(default_factory=All)
    """Who acts when an entry triggers several roles: ``All()`` (every one), ``Priority``
    or a ``Controller`` role (``orchestra.control``)."""
    stall: Stall | None = None
    """When the board counts as stalled (``Stall(after=10, repeats=3)``): the run ends
    ``stalled``, or waits for a person (``Stall(wait=True)``)."""
    version: str | None = None
    """A name for this code (``"2"``, a release tag): shown beside the fingerprint each run
    records (``orchestra.coordinator.versions``); a new string is a new version."""

    def __post_init__(self) -> None:
        by_name: dict[str, Role] = {}
        for role in self.roles:
            if not isinstance(role, Role):
                raise UserError(f"pipeline {self.name!r}: {role!r} is not a Role instance "
                                "(did you pass the class instead of Coder()?)")
            if role.name in by_name:
                raise UserError(f"pipeline {self.name!r}: two roles named {role.name!r}")
            by_name[role.name] = role
            _check_approvals(role, self.mcp)
        self.by_name = by_name
        self._routes: dict[str, Route | PatchedRoute | str] = {}  # a function, or a role
        self._patched_routes: set[str] = set()  # the routes that take ``patched``
        for source, target in self.routes.items():
            name = self._known(source, "routes for")
            if isinstance(target, str) or (isinstance(target, type)
                                           and issubclass(target, Role)):
                self._routes[name] = self._known(target, f"route of {name!r} to")
            elif callable(target):
                self._routes[name] = target  # type: ignore[assignment]
                if _takes_patched(target):
                    self._patched_routes.add(name)
            else:
                raise UserError(f"pipeline {self.name!r}: the route of {name!r} is {target!r}; "
                                "give a function (output, task, writes) or a role")
        self._origin: tuple[dict[str, Any], str] | None = None
        if self.ref is None:
            self.ref, self._origin = derive_ref(sys._getframe(2))

    @cached_property
    def fingerprint(self) -> Version:
        """This pipeline's version, computed once (not per step): what a run records."""
        return pipeline_version(name=self.name, roles=self.roles, routes=self._routes,
                                model=self.model, mcp=self.mcp,
                                fails_run=self.fail_run_on_task_failure,
                                label=self.version or "", patched_routes=self._patched_routes,
                                board={"done": self.done, "control": self.control,
                                       "stall": self.stall})

    def _known(self, ref: Any, what: str) -> str:
        name = _role_name(ref)
        if name not in self.by_name:
            raise UserError(f"pipeline {self.name!r}: {what} unknown role {name!r}; roles are "
                            f"{sorted(self.by_name)}")
        return name

    def role(self, name: str) -> Role:
        try:
            return self.by_name[name]
        except KeyError:
            raise UserError(f"pipeline {self.name!r} has no role {name!r}; roles are "
                            f"{sorted(self.by_name)}") from None

    def route(self, role: str, output: Any, task: Task, writes: Writes,
              patched: Patched | None = None) -> None:
        """Run the route of ``role`` for a completed ``task``'s ``output``: its postings
        join ``writes`` (checked), to commit with the task's completion. ``patched``: the
        task's patches, as its journal records them (None: the role's, all on)."""
        target = self._routes.get(role)
        if target is None:
            return
        if isinstance(target, str):  # forwarded as is
            writes.handoffs.append(NewHandoff(target, _json(output)))
            return
        if role in self._patched_routes:
            on = patched or TaskPatches(role, type(self.role(role)).patches, ())
            returned = target(output, task, writes, on)  # type: ignore[call-arg]
        else:
            returned = target(output, task, writes)  # type: ignore[call-arg]
        self._post(f"route of {role!r}", returned, writes)

    def reference(self) -> str | None:
        """How another process rebuilds this pipeline (``module:attr``), if it can."""
        if self.ref is None and self._origin is not None:
            self.ref = module_ref(self, self._origin)
        return self.ref

    def first_tasks(self, run_input: Any) -> list[NewTask]:
        tasks: list[NewTask] = []
        for t in self.start(run_input):
            if not isinstance(t, NewTask):
                raise UserError(f"pipeline {self.name!r}: start() returned {t!r}; "
                                "it returns the first NewTask(s)")
            name, payload = self._target(t.role, t.input, "task", "start()")
            tasks.append(replace(t, role=name, input=payload))
        if not tasks:
            raise UserError(f"pipeline {self.name!r}: start() created no tasks")
        return tasks

    def check_handoff(self, handoff: NewHandoff, source: str) -> NewHandoff:
        """A handoff with its target role checked and its payload validated (as JSON)."""
        name, payload = self._target(handoff.to_role, handoff.payload, "handoff", source)
        return replace(handoff, to_role=name, payload=payload)

    def check_post(self, post: Post, source: str) -> Post:
        """A posting with its target role checked and its payload validated (as JSON)."""
        if isinstance(post, NewNote | NewEntry):
            return post
        if isinstance(post, NewHandoff):
            return self.check_handoff(post, source)
        if isinstance(post, NewTask):
            name, payload = self._target(post.role, post.input, "task", source)
            return replace(post, role=name, input=payload)
        raise UserError(f"{source} posted {post!r}; post NewHandoff, NewTask, NewNote or "
                        "an entry (orchestra.entry(model))")

    def _target(self, to: Any, payload: Any, kind: str, source: str) -> tuple[str, Any]:
        name = _role_name(to)
        role = self.by_name.get(name)
        if role is None:
            raise UserError(f"{source} posted a {kind} to role {name!r}, which pipeline "
                            f"{self.name!r} does not have; its roles are {sorted(self.by_name)}")
        return name, _validated(payload, type(role).input, f"{source}: {kind} to {name!r}")

    def _post(self, source: str, returned: Iterable[Post] | Post | None,
              writes: Writes) -> None:
        """What a route returned joins ``writes``, checked; so does what it appended
        itself (replaced in place)."""
        if returned is None:
            posts: list[Any] = []
        elif isinstance(returned, (NewHandoff, NewTask, NewNote, NewEntry)):
            posts = [returned]
        else:
            posts = list(returned)
        for post in posts:
            checked_post = self.check_post(post, source)
            if isinstance(checked_post, NewHandoff):
                writes.handoffs.append(checked_post)
            elif isinstance(checked_post, NewTask):
                writes.tasks.append(checked_post)
            elif isinstance(checked_post, NewEntry):
                writes.entries.append(checked_post)
            else:
                writes.notes.append(checked_post)
        for i, h in enumerate(writes.handoffs):
            name, payload = self._target(h.to_role, h.payload, "handoff", source)
            if name != h.to_role or payload is not h.payload:
                writes.handoffs[i] = replace(h, to_role=name, payload=payload)
        for i, t in enumerate(writes.tasks):
            name, payload = self._target(t.role, t.input, "task", source)
            if name != t.role or payload is not t.input:
                writes.tasks[i] = replace(t, role=name, input=payload)

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, roles={sorted(self.by_name)}, ref={self.ref!r})"


def _json(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, pydantic.BaseModel) else value


def _validated(payload: Any, model: type[pydantic.BaseModel] | None, where: str) -> Any:
    """The payload as JSON, checked against the receiving role's input model if it has one."""
    if model is None:
        return _json(payload)
    if isinstance(payload, model):
        return payload.model_dump(mode="json")
    try:
        value = model.model_validate(_json(payload))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(payload)"
        raise UserError(f"{where}: payload does not match {model.__name__}: {at}: "
                        f"{first['msg']} ({exc.error_count()} error(s))") from None
    return value.model_dump(mode="json")


def fan_out(writes: Writes, to_role: RoleRef, items: Iterable[Any], *, note: str = "",
            key: Callable[[Any], str] | None = None) -> None:
    """Post one handoff (and so one task) per item: how a plan becomes parallel work."""
    name = _role_name(to_role)
    for item in items:
        writes.handoffs.append(NewHandoff(to_role=name, payload=_json(item), note=note,
                                          key=key(item) if key else None))


def load_target(ref: str) -> Any:
    """What ``module:attr`` names, imported: a factory or a Pipeline."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UserError(f"pipeline {ref!r} cannot be rebuilt in this process (it was built "
                        f"where no import finds it, e.g. in a script's main block or a "
                        f"closure): {HOW_TO_REF}")
    module = import_ref(ref, module_name)
    target = getattr(module, attr, None)
    if target is None:
        raise UserError(f"module {module_name!r} has no {attr!r} (pipeline reference {ref!r}); "
                        f"{_offer(module)}")
    return target


def load_pipeline(ref: str, run_input: Any) -> Pipeline:
    """Import ``module:factory`` and build the pipeline for ``run_input``."""
    factory = load_target(ref)
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
    if pipeline.ref is None:
        pipeline.ref = ref
    return pipeline


def _offer(module: ModuleType) -> str:
    """The names a reference to ``module`` could name: its public callables and pipelines."""
    names = sorted(n for n, v in vars(module).items() if not n.startswith("_")
                   and (isinstance(v, Pipeline) or inspect.isfunction(v))
                   and getattr(v, "__module__", module.__name__) == module.__name__)
    return (f"it has {', '.join(names)}" if names
            else "it defines no public function or Pipeline")


def _takes_patched(fn: Callable[..., Any]) -> bool:
    """Whether a route function has a ``patched`` parameter (``PatchedRoute``)."""
    try:
        return "patched" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False
