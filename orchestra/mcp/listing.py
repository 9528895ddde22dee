"""An MCP server's tools as a role is offered them, and as the journal records them.

The tool list of a task is a step (``tool`` kind, name ``mcp.tools``): names, descriptions,
input schemas and annotations, as the servers listed them when the task first ran. A
resumed or replayed task is offered exactly that list, whatever the servers say today.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestra._errors import UserError
from orchestra.mcp.declare import MCPServer

LIST_STEP = "mcp.tools"


@dataclass(frozen=True, slots=True)
class MCPTool:
    """One tool of one server, as recorded."""

    server: MCPServer
    name: str
    """Its name at the server."""
    exposed: str
    """Its name as the model sees it (the server's prefix, then the name)."""
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    validator: Any = field(default=None, compare=False, repr=False)
    """The input schema compiled (jsonschema), once per tool list: compiling costs far
    more than validating, and a call is checked before every send."""

    def check(self, args: dict[str, Any]) -> str | None:
        """What is wrong with ``args`` for the server's input schema (None: nothing)."""
        check = self.validator if self.validator is not None else compile_schema(
            self.input_schema)
        problems = list(check.iter_errors(args))
        if not problems:
            return None
        found = sorted(problems, key=lambda e: list(e.absolute_path))[:10]
        return "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: "
                         f"{e.message}" for e in found)


def record_tool(tool: Any) -> dict[str, Any]:
    """A listed tool (the SDK's ``Tool``) as journal data, in the protocol's field names."""
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) \
        if tool.annotations is not None else {}
    return {"name": tool.name, "description": tool.description or "",
            "inputSchema": tool.input_schema, "annotations": annotations}


def offered(server: MCPServer, listed: Sequence[Any]) -> list[dict[str, Any]]:
    """The server's listing, filtered by its include/exclude, as journal data."""
    return [record_tool(t) for t in listed if server.offers(t.name)]


def build_tools(servers: Sequence[MCPServer], recorded: Mapping[str, Any], *, role: str,
                python_tools: Collection[str], approvals: Collection[str]) -> dict[str, MCPTool]:
    """The recorded tool lists as tools by exposed name; a clash is an error naming both."""
    tools: dict[str, MCPTool] = {}
    for server in servers:
        for entry in recorded.get(server.name, []):
            exposed = server.prefix + entry["name"]
            if exposed in python_tools:
                raise UserError(
                    f"role {role!r}: tool {entry['name']!r} of MCP server {server.name!r} "
                    f"clashes with the role's Python tool {exposed!r}; give the server a "
                    f"prefix (prefix='{server.name.replace('-', '_')}_') or exclude=[...] it")
            if exposed in tools:
                other = tools[exposed].server.name
                raise UserError(
                    f"role {role!r}: tool {exposed!r} of MCP server {server.name!r} clashes "
                    f"with tool {exposed!r} of MCP server {other!r}; give one of them a "
                    "prefix or exclude=[...] the tool")
            tools[exposed] = MCPTool(server, entry["name"], exposed, entry["description"]
                                     or entry["name"], entry["inputSchema"],
                                     entry.get("annotations") or {},
                                     compile_schema(entry["inputSchema"]))
    unknown = set(approvals) - set(tools) - set(python_tools)
    if unknown:
        raise UserError(f"role {role!r}: needs_approval names {sorted(unknown)}, which are "
                        f"neither its tools nor its MCP servers' ({sorted(tools)})")
    return tools


def changes(recorded: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]
            ) -> dict[str, list[str]]:
    """How a server's tools differ from the recorded list (empty: they do not)."""
    before = {t["name"]: t for t in recorded}
    after = {t["name"]: t for t in now}
    diff = {"added": sorted(set(after) - set(before)),
            "removed": sorted(set(before) - set(after)),
            "changed": sorted(n for n in set(before) & set(after) if before[n] != after[n])}
    return {k: v for k, v in diff.items() if v}


def compile_schema(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for ``schema`` (the module is imported by
    :func:`import_jsonschema` first, off the event loop: its first import reads files)."""
    from jsonschema.validators import validator_for  # comes with the mcp SDK

    return validator_for(schema)(schema)


async def import_jsonschema() -> None:
    """Import jsonschema in a thread, once per process (later calls return at once)."""
    if "jsonschema.validators" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "jsonschema.validators")
