"""Declaring roles: a class whose docstring is the system prompt.

A role is configuration only (the runtime runs it). Declaration mistakes raise
:class:`RoleDefinitionError` when the class statement runs, naming the role and
the field, so a typo never reaches a running pipeline::

    class Reviewer(Role):
        \"\"\"You review one module: run its tests, read the code, and decide.\"\"\"
        output = Review
        compaction = SlidingWindow(last=12)

        @tool
        async def run_tests(self, ctx: ToolContext, path: str) -> TestReport: ...
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic

import pydantic
from typing_extensions import TypeVar

from orchestra._errors import RoleDefinitionError
from orchestra._types import DEFAULT_ROLE_CONCURRENCY
from orchestra.answers import AnswerFormat
from orchestra.compaction import CompactionPolicy, KeepAll
from orchestra.mcp.declare import MCPServer
from orchestra.models.base import Model, ModelSettings, OutputSchema
from orchestra.subscriptions import On, Subscription, When
from orchestra.tools import Tool, ToolContext

_INT_LIMITS = ("max_turns", "output_retries", "concurrency", "max_attempts")

Patched = Callable[[str], bool]
"""``patched(name)``: whether the task runs with the role's patch ``name``."""
In = TypeVar("In", default=Any)
Out = TypeVar("Out", default=Any)


class Role(Generic[In, Out]):
    """Base class of every role. Override class attributes to configure.

    ``class Coder(Role[CodeTask, CodeResult])`` declares the task input and the final
    answer as pydantic models in one go (the same as setting ``input`` and ``output``).
    Instances may hold dependencies (a workspace path, a client) for their tools;
    give your subclass an ``__init__`` for them.
    """

    name: ClassVar[str] = ""
    """Role name used for tasks and handoffs; defaults to the class name in lower case."""
    instructions: ClassVar[str] = ""
    """System prompt; defaults to the class docstring."""
    output: ClassVar[type[pydantic.BaseModel] | type[str]] = str
    """Type of the final answer: a pydantic model (validated JSON) or ``str``."""
    answer: ClassVar[AnswerFormat | None] = None
    """How the final answer is written when it is not JSON: ``FileBlocks(...)`` (files as
    fenced blocks) or ``EditBlocks(...)`` (search/replace edits); sets ``output``."""
    input: ClassVar[type[pydantic.BaseModel] | None] = None
    """Pydantic model of this role's task input: handoffs and tasks posted to the role are
    validated against it when posted (a bad payload fails the posting task, naming the field)."""
    model: ClassVar[Model | str | None] = None
    """A Model, a model spec string, or None to use the pipeline's model."""
    settings: ClassVar[ModelSettings | None] = None
    """Sampling and limits for this role's model calls, e.g. ``ModelSettings(max_tokens=800,
    temperature=0.2)``: a cap on output tokens stops a runaway reply early."""
    compaction: ClassVar[CompactionPolicy] = KeepAll()
    """How this agent's context stays small (its stored history is never cut)."""
    tools: ClassVar[tuple[Tool, ...]] = ()
    """Standalone tools (``@tool`` functions); ``@tool`` methods are added automatically."""
    needs_approval: ClassVar[frozenset[str]] = frozenset()
    """Names of tools that stop for a human decision before they run."""
    mcp: ClassVar[Sequence[MCPServer]] = ()
    """MCP servers whose tools this role also offers (``MCPServer.stdio(...)``, ``.http``)."""
    max_turns: ClassVar[int] = 20
    """Model calls allowed per task before it fails (stops tool-call loops)."""
    output_retries: ClassVar[int] = 3
    """Times invalid output is fed back to the model before the task fails."""
    tool_timeout: ClassVar[float] = 60.0
    """Seconds one tool call may run (a tool's own ``timeout`` wins)."""
    concurrency: ClassVar[int] = DEFAULT_ROLE_CONCURRENCY
    """Tasks of this role that may run at once."""
    max_attempts: ClassVar[int] = 3
    """Attempts per task (first run plus retries after failures)."""
    task_timeout: ClassVar[float | None] = None
    """Seconds one task attempt may run before it is failed (and retried)."""
    consumes: ClassVar[Sequence[Subscription]] = ()
    """Board entries that give this role a task (``On(Finding)``, ``When(...)``): see
    ``orchestra.subscriptions`` and docs/blackboard.md."""
    labels: ClassVar[frozenset[str]] = frozenset()
    """Labels this role carries: it sees entries scoped to any of them (``Scope.labels``)."""
    posts_output: ClassVar[bool] = False
    """Post each task's output (a pydantic model) to the board as a public entry of its
    type, with the task's end: what roles that consume it are triggered by."""
    patches: ClassVar[frozenset[str]] = frozenset()
    """Names of the changes this role carries behind ``patched(name)`` (``instructions_for``)."""
    recall: ClassVar[bool] = True
    """Offer the built-in ``recall`` tool: full-text search of the agent's own history."""
    max_tokens_per_agent: ClassVar[int | None] = None
    """Cap on tokens (in + out) this agent may use in a run; raise it and resume."""
    max_cost_per_agent: ClassVar[float | None] = None
    """Cap in USD on what this agent may spend in a run: it pauses before a call that
    could cross it (priced calls only; see ``orchestra.models.prices``)."""

    _declared_tools: ClassVar[dict[str, Tool]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__ or not cls.__dict__["name"]:
            cls.name = cls.__name__.lower()
        role = cls.name
        if not isinstance(role, str) or not role.replace("_", "").replace("-", "").isalnum():
            raise RoleDefinitionError(str(role), "name", "must be letters, digits, - or _")
        if not cls.__dict__.get("instructions"):
            doc = cls.__dict__.get("__doc__")
            cls.instructions = inspect.cleandoc(doc) if doc else ""
        _apply_generic_args(cls)
        _apply_answer_format(cls, role)
        if not cls.instructions.strip():
            raise RoleDefinitionError(role, "instructions", "missing: write the system prompt "
                                      "as the class docstring or set `instructions`")
        out = cls.output
        if not (out is str or (isinstance(out, type) and issubclass(out, pydantic.BaseModel))):
            raise RoleDefinitionError(role, "output", f"{out!r} is not a pydantic model or str")
        if cls.input is not None and not (isinstance(cls.input, type)
                                          and issubclass(cls.input, pydantic.BaseModel)):
            raise RoleDefinitionError(role, "input", f"{cls.input!r} is not a pydantic model")
        _check_limits(cls, role)
        _check_board(cls, role)
        cls._declared_tools = _collect_tools(cls)
        for server in cls.mcp:
            if not isinstance(server, MCPServer):
                raise RoleDefinitionError(role, "mcp", f"{server!r} is not an MCPServer "
                                          "(MCPServer.stdio(...) or MCPServer.http(...))")
        # needs_approval may name tools no Python tool has: an MCP server's, the role's own
        # or its pipeline's, known once listed (checked then, and by ``Pipeline`` for a role
        # that has no server)

    # -- what the runtime asks of a role -------------------------------------------
    def bound_tools(self) -> dict[str, Tool]:
        """This instance's tools, methods bound to it."""
        return {name: t.bind(self) for name, t in type(self)._declared_tools.items()}

    def requires_approval(self, tool: Tool) -> bool:
        return tool.needs_approval or tool.name in type(self).needs_approval

    def output_schema(self) -> OutputSchema | None:
        fmt = type(self).answer
        return fmt.schema() if fmt is not None else _output_schema(type(self).output)

    def system_prompt(self, patched: Patched | None = None) -> str:
        """The instructions (``instructions_for``), with how to write the answer.
        ``patched``: which of the role's ``patches`` this task runs with (default: all)."""
        fmt = type(self).answer
        on = patched if patched is not None else self._all_patches
        return self.instructions_for(on) + (fmt.instructions() if fmt is not None else "")

    def instructions_for(self, patched: Patched) -> str:
        """The instructions a task sees: ``instructions`` unless overridden to carry a
        change to runs in flight behind a patch, e.g. ``NEW if patched("friendly") else
        OLD``. ``patched(name)`` (a name in ``patches``) is True for a task that starts
        under this code, False for one journaled before (its first model step recorded
        the patches it ran with), so both replay as they were asked."""
        return type(self).instructions

    def _all_patches(self, name: str) -> bool:
        if name not in type(self).patches:
            raise RoleDefinitionError(self.name, "patches", f"patched({name!r}) names no patch "
                                      f"of the role; its patches: {sorted(type(self).patches)}")
        return True

    def task_message(self, task_input: Any) -> str:
        """The task as the model reads it: ``render_task`` and what its answer holds."""
        fmt = type(self).answer
        text = self.render_task(task_input)
        return text + fmt.task_note(task_input) if fmt is not None else text

    def sample_message(self, task_input: Any) -> str | None:
        """What a new sample a check asks for (``ModelRetry(fresh=True)``) is asked with:
        ``render_sample`` with what the answer holds (None: the task's message)."""
        text = self.render_sample(task_input)
        if text is None:
            return None
        fmt = type(self).answer
        return text + fmt.task_note(task_input) if fmt is not None else text

    def render_sample(self, task_input: Any) -> str | None:
        """Override when a new sample must not be asked as the task is: a revision round
        whose message shows the current answer, which a small model copies (seen: a 1.5B
        at temperature 0.7, reseeded, sent the module in view back byte for byte). None:
        as the task. Keep it a function of the input: a resumed task asks alike."""
        return None

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        """Override to verify a final answer; raise ``ModelRetry`` to send it back.

        Return None to accept ``output`` as it is, or an output of the same type to accept
        that instead (an answer amended with a real test report, or the best of the
        answers sent back before: ``ctx.rejections``). Runs as a journaled step, so a
        check with side effects is not repeated on resume, and what it returned replays.
        """
        return None

    def settings_for(self, task_input: Any) -> ModelSettings | None:
        """The sampling of one task's model calls: ``settings`` unless overridden (a task
        that asks again what an earlier one asked, sampled warmer than greedy so that it
        can answer otherwise). Keep it a function of the input alone: a resumed task
        then asks with the same settings."""
        return type(self).settings

    def render_task(self, task_input: Any) -> str:
        """The user message for a task; override to shape how work is presented."""
        if isinstance(task_input, str):
            return task_input
        return json.dumps(task_input, indent=1, default=str)


def _apply_answer_format(cls: type[Role[Any, Any]], role: str) -> None:
    """A role's ``answer`` format, checked; it gives the role its ``output``."""
    fmt = cls.__dict__.get("answer")
    if fmt is None:
        return
    if not isinstance(fmt, AnswerFormat):
        raise RoleDefinitionError(role, "answer", f"{fmt!r} is not an answer format "
                                  "(e.g. FileBlocks(paths=...) from orchestra.answers)")
    if "output" not in cls.__dict__:
        cls.output = fmt.output
    elif cls.output is not fmt.output:
        raise RoleDefinitionError(role, "output", f"{cls.output!r} differs from what "
                                  f"its answer format gives ({fmt.output.__name__}); "
                                  "leave output unset")


def _check_limits(cls: type[Role[Any, Any]], role: str) -> None:
    """A role's compaction policy, limits, model settings and tool timeout, checked."""
    if not isinstance(cls.compaction, CompactionPolicy):
        raise RoleDefinitionError(role, "compaction", f"{cls.compaction!r} is not a "
                                  "CompactionPolicy (e.g. SlidingWindow(last=12))")
    for field in _INT_LIMITS:
        value = getattr(cls, field)
        if not isinstance(value, int) or value < 1:
            raise RoleDefinitionError(role, field, f"{value!r} must be an int >= 1")
    if cls.settings is not None and not isinstance(cls.settings, ModelSettings):
        raise RoleDefinitionError(role, "settings", f"{cls.settings!r} is not a "
                                  "ModelSettings (e.g. ModelSettings(max_tokens=800))")
    if not isinstance(cls.tool_timeout, (int, float)) or cls.tool_timeout <= 0:
        raise RoleDefinitionError(role, "tool_timeout", f"{cls.tool_timeout!r} must be > 0")


def _check_board(cls: type[Role[Any, Any]], role: str) -> None:
    """What a role consumes is ``On``/``When``s; its labels, a set of strings."""
    for sub in cls.consumes:
        if not isinstance(sub, On | When):
            raise RoleDefinitionError(role, "consumes", f"{sub!r} is not On(Type) or "
                                      "When(name, ready)")
    if not (isinstance(cls.labels, frozenset | set)
            and all(isinstance(x, str) for x in cls.labels)):
        raise RoleDefinitionError(role, "labels", f"{cls.labels!r} is not a set of strings: "
                                  "labels = frozenset({\"audit\"})")


def _apply_generic_args(cls: type[Role]) -> None:
    """``Role[In, Out]`` in the class's bases sets ``input``/``output`` unless given directly."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        if typing.get_origin(base) is not Role:
            continue
        args = typing.get_args(base)
        if len(args) > 0 and "input" not in cls.__dict__ and args[0] is not Any:
            if not (isinstance(args[0], type) and issubclass(args[0], pydantic.BaseModel)):
                raise RoleDefinitionError(cls.name, "input", f"Role[{args[0]!r}, ...]: the "
                                          "input must be a pydantic model (or Any)")
            cls.input = args[0]
        if len(args) > 1 and "output" not in cls.__dict__ and args[1] is not Any:
            cls.output = args[1]


@functools.cache
def _output_schema(out: type[pydantic.BaseModel] | type[str]) -> OutputSchema | None:
    """Built once per output type: generating a JSON schema costs about a millisecond."""
    if out is str:
        return None
    assert issubclass(out, pydantic.BaseModel)
    return OutputSchema(out.__name__, out.model_json_schema(), inspect.cleandoc(out.__doc__ or ""))


def _collect_tools(cls: type[Role]) -> dict[str, Tool]:
    by_attr: dict[str, Tool] = {}  # a subclass attribute overrides its base's
    for klass in reversed(cls.__mro__):
        by_attr.update({a: v for a, v in vars(klass).items() if isinstance(v, Tool)})
    tools: dict[str, Tool] = {}
    for value in by_attr.values():
        if value.name in tools:
            raise RoleDefinitionError(cls.name, f"tool {value.name!r}", "declared twice")
        tools[value.name] = value
    for t in cls.tools:
        if not isinstance(t, Tool):
            raise RoleDefinitionError(cls.name, "tools", f"{t!r} is not a @tool function")
        if t.name in tools:
            raise RoleDefinitionError(cls.name, f"tool {t.name!r}", "declared twice")
        tools[t.name] = t
    if cls.recall and "recall" in tools:
        raise RoleDefinitionError(cls.name, "tool 'recall'", "clashes with the built-in "
                                  "recall tool; rename it or set recall = False")
    return tools
