"""Role declarations: mistakes fail when the class is defined, naming role and field."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from orchestra import (
    NewTask,
    Pipeline,
    Role,
    RoleDefinitionError,
    SlidingWindow,
    ToolContext,
    tool,
)


class Verdict(BaseModel):
    ok: bool


def test_a_role_in_a_few_lines() -> None:
    class Reviewer(Role):
        """You review code."""

        output = Verdict
        compaction = SlidingWindow(last=12)

        @tool
        async def run_tests(self, ctx: ToolContext, path: str) -> str:
            """Run the tests."""
            return path

    r = Reviewer()
    assert Reviewer.name == "reviewer"
    assert Reviewer.instructions == "You review code."
    tools = r.bound_tools()
    assert set(tools) == {"run_tests"}
    schema = tools["run_tests"].schema()
    assert schema.parameters["required"] == ["path"]
    assert schema.description == "Run the tests."
    assert r.output_schema() is not None


def test_missing_instructions() -> None:
    with pytest.raises(RoleDefinitionError, match="role 'silent': instructions"):
        class Silent(Role):
            pass


def test_output_not_a_model() -> None:
    with pytest.raises(RoleDefinitionError, match="role 'bad': output"):
        class Bad(Role):
            """x"""

            output = dict  # type: ignore[assignment]


def test_tool_without_type_hints() -> None:
    with pytest.raises(RoleDefinitionError, match="parameter 'path' has no type hint"):
        class Loose(Role):
            """x"""

            @tool
            async def look(self, ctx: ToolContext, path) -> str:  # type: ignore[no-untyped-def]
                return ""


def test_duplicate_tool_name() -> None:
    with pytest.raises(RoleDefinitionError, match="tool 'look': declared twice"):
        class Twice(Role):
            """x"""

            @tool(name="look")
            async def a(self, ctx: ToolContext) -> str:
                return ""

            @tool(name="look")
            async def b(self, ctx: ToolContext) -> str:
                return ""


def test_bad_limits_and_approval_names() -> None:
    with pytest.raises(RoleDefinitionError, match="max_turns"):
        class Zero(Role):
            """x"""

            max_turns = 0
    class Ghost(Role):  # "deploy" may be an MCP server's tool: known once listed
        """x"""

        needs_approval = frozenset({"deploy"})

    # in a pipeline that gives the role no MCP server, it is no tool at all
    with pytest.raises(RoleDefinitionError,
                       match=r"needs_approval: unknown tool\(s\) \['deploy'\]"):
        Pipeline("p", roles=[Ghost()], start=lambda i: [NewTask("ghost", i)])
    with pytest.raises(RoleDefinitionError, match="compaction"):
        class NoPolicy(Role):
            """x"""

            compaction = 12  # type: ignore[assignment]


def test_sync_tool_rejected() -> None:
    with pytest.raises(RoleDefinitionError, match="async def"):
        @tool
        def nope(ctx: ToolContext) -> str:  # type: ignore[arg-type]
            return ""
