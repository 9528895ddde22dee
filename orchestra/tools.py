"""Tools: typed async functions a model may call, and the context they receive.

A tool's parameters (after ``self`` and ``ctx``) become a pydantic model, so the
JSON the model writes is validated before the function runs and the model gets
the validation error back when it is wrong.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_type_hints, overload

import pydantic

from orchestra._entries import PUBLIC, Scope
from orchestra._errors import RoleDefinitionError
from orchestra.models.base import ToolSchema
from orchestra.store.entry_protocol import NewEntry
from orchestra.store.protocol import NewHandoff, NewNote, Writes

if TYPE_CHECKING:
    from orchestra.store.protocol import BoardReads

ToolFn = Callable[..., Awaitable[Any]]

HandoffCheck = Callable[[NewHandoff, str], NewHandoff]
"""``check(handoff, source)``: the handoff with its target role checked and its payload
validated against the pipeline (a role the pipeline lacks, or a payload its ``input``
refuses, raises); ``source`` names the poster in the error."""
EntryHook = Callable[[str, NewEntry], Writes]
"""``hook(agent_id, entry)``: what an entry a tool posts triggers (the coordinator's
matching): tasks and triggers to commit with it, in the tool's journal entry."""


@dataclass(slots=True)
class Rejection:
    """An answer ``check_output`` sent back: what was said, and the ``data`` it kept."""

    problem: str
    data: Any = None
    fresh: bool = False
    """The check asked for a new sample (the task afresh), not a revision in view."""


@dataclass(slots=True)
class ToolContext:
    """What a running tool may know and do.

    Board posts made here (notes, plans, handoffs) are buffered and commit
    atomically with the tool's journal entry, so a replayed tool never posts twice.
    ``idempotency_key`` is stable across crashes: pass it to outside systems.
    """

    run_id: str
    task_id: str
    agent_id: str
    role: str
    step: int
    idempotency_key: str
    board: BoardReads
    """The board, read-only (``orchestra.store.views.ReadOnlyBoard``): search notes and
    this agent's messages, read plans and handoffs. Post through this context instead."""
    writes: Writes = field(default_factory=Writes)
    task_input: Any = None
    rejections: tuple[Rejection, ...] = ()
    """In ``check_output``: this task attempt's earlier answers the check sent back."""
    check_handoff: HandoffCheck | None = None
    """Checks each handoff against the pipeline when it is posted (the coordinator's)."""
    on_entry: EntryHook | None = None
    """Decides what each entry posted here triggers (the coordinator's subscriptions)."""
    patches: Callable[[str], bool] | None = None
    """The task's patches (``orchestra.runtime.patches.TaskPatches``): see :meth:`patched`."""

    def patched(self, name: str) -> bool:
        """Whether this task runs with its role's patch ``name`` (a name in the role's
        ``patches``): True for a task that began under the code with the patch, False for
        one whose first model step was journaled before it, as the role's instructions
        answer (the marker is in that step's record, so every replay answers alike)."""
        if self.patches is None:
            raise RoleDefinitionError(self.role, "patches", f"patched({name!r}) asked outside "
                                      "a task (no journal says which patches it runs with)")
        return self.patches(name)

    def post_note(self, body: str, *tags: str, scope: Scope = PUBLIC) -> None:
        """Post a note (``scope``: who may read it, as an entry's); it commits with this
        tool's journal entry."""
        self.writes.notes.append(NewNote(body=body, tags=tuple(tags), scope=scope))

    def post_plan(self, body: Any) -> None:
        self.writes.plans.append(body)

    def post(self, value: pydantic.BaseModel, *tags: str, scope: Scope = PUBLIC) -> None:
        """Post a typed entry to the board (``scope``: who may see it); it commits with
        this tool's journal entry, and the roles it triggers get their tasks."""
        new = NewEntry.of(value, tags=tags, scope=scope)
        self.writes.entries.append(new)
        if self.on_entry is not None:
            caused = self.on_entry(self.agent_id, new)
            self.writes.triggers.extend(caused.triggers)
            self.writes.tasks.extend(caused.tasks)

    def handoff(self, to_role: str | type[Any], payload: Any, note: str = "") -> None:
        """Post a handoff to a role (class or name); a role the pipeline lacks, or a payload
        its ``input`` model refuses, raises here, and the model sees why."""
        name = to_role if isinstance(to_role, str) else str(to_role.name)
        post = NewHandoff(to_role=name, payload=payload, note=note)
        check = self.check_handoff
        self.writes.handoffs.append(check(post, f"tool of role {self.role!r}") if check
                                    else post)


@dataclass(frozen=True, slots=True)
class Tool:
    """A declared tool. ``fn`` takes ``(ctx, **args)``; methods are bound per role instance."""

    name: str
    description: str
    fn: ToolFn
    args_model: type[pydantic.BaseModel]
    takes_self: bool
    needs_approval: bool = False
    timeout: float | None = None

    def schema(self) -> ToolSchema:
        return _tool_schema(self.name, self.description, self.args_model)

    def bind(self, instance: object) -> Tool:
        """The tool with ``self`` filled in (for tools declared as role methods)."""
        if not self.takes_self:
            return self
        bound = self.fn.__get__(instance, type(instance))
        return Tool(self.name, self.description, bound, self.args_model, False,
                    self.needs_approval, self.timeout)


@functools.cache
def _tool_schema(name: str, description: str, args: type[pydantic.BaseModel]) -> ToolSchema:
    return ToolSchema(name, description, args.model_json_schema())


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ") if doc else ""


def make_tool(fn: ToolFn, *, name: str | None = None, needs_approval: bool = False,
              timeout: float | None = None, owner: str = "<tool>") -> Tool:
    """Build a :class:`Tool` from an annotated async function; errors name the problem."""
    tool_name = name or fn.__name__
    where = f"tool {tool_name!r}"
    if not inspect.iscoroutinefunction(fn):
        raise RoleDefinitionError(owner, where, "must be an `async def` function")
    params = list(inspect.signature(fn).parameters.values())
    takes_self = bool(params) and params[0].name == "self"
    if takes_self:
        params = params[1:]
    if not params or params[0].name != "ctx":
        raise RoleDefinitionError(owner, where,
                                  "first parameter (after self) must be `ctx: ToolContext`")
    try:
        hints = get_type_hints(fn)
    except Exception as exc:
        raise RoleDefinitionError(owner, where, f"cannot resolve type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    for p in params[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise RoleDefinitionError(owner, where, f"*{p.name} parameters are not supported")
        if p.name not in hints:
            raise RoleDefinitionError(
                owner, where, f"parameter {p.name!r} has no type hint; annotate it so the "
                "model gets a schema and its arguments can be validated")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], default)
    if "return" not in hints:
        raise RoleDefinitionError(owner, where, "has no return type hint")
    model_name = "".join(part.title() for part in tool_name.split("_")) + "Args"
    config = pydantic.ConfigDict(extra="forbid")
    args_model = pydantic.create_model(model_name, __config__=config, **fields)
    return Tool(tool_name, _first_paragraph(fn.__doc__) or tool_name, fn, args_model,
                takes_self, needs_approval, timeout)


@overload
def tool(fn: ToolFn, /) -> Tool: ...
@overload
def tool(*, name: str | None = None, needs_approval: bool = False,
         timeout: float | None = None) -> Callable[[ToolFn], Tool]: ...


def tool(fn: ToolFn | None = None, /, *, name: str | None = None, needs_approval: bool = False,
         timeout: float | None = None) -> Tool | Callable[[ToolFn], Tool]:
    """Declare a tool: ``@tool`` or ``@tool(needs_approval=True, timeout=30)``.

    Use it on a role's methods (``async def t(self, ctx: ToolContext, ...)``) or on
    plain functions listed in a role's ``tools``.
    """

    def wrap(f: ToolFn) -> Tool:
        owner = f.__qualname__.rsplit(".", 1)[0] if "." in f.__qualname__ else "<tool>"
        return make_tool(f, name=name, needs_approval=needs_approval, timeout=timeout,
                         owner=owner)

    return wrap(fn) if fn is not None else wrap


def render_tool_result(value: Any) -> str:
    """What the model sees of a tool's return value: text as is, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)
