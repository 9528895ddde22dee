"""The two requests orchestra makes of an MCP server: list its tools, call one.

A driver, like ``orchestra.models``: nothing here journals, asks a person or knows a task.
The runtime makes each listing and each call a journaled step (``orchestra.runtime.
mcp_tools``); these functions only speak to the server and say what happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestra.mcp.declare import MCPServer
from orchestra.mcp.hub import MCPHub
from orchestra.mcp.listing import MCPTool
from orchestra.mcp.results import record_result

if TYPE_CHECKING:
    from orchestra.mcp.session import Connection


async def list_tools(hub: MCPHub, server: MCPServer) -> list[Any]:
    """The server's tools as it lists them now (the SDK's ``Tool``s); a server that ends
    while listing is started again once. Raises ``MCPServerError``."""
    from orchestra.mcp.session import ServerGone

    conn = await hub.connection(server)
    for again in (False, True):
        try:
            return await conn.list_tools()
        except ServerGone:
            if again:
                raise await conn.failure("ended twice while listing its tools") from None
            conn = await hub.restart(server, conn)
        except TimeoutError:
            raise await conn.failure(f"did not list its tools within {server.timeout:g} s"
                                     ) from None
    raise AssertionError("unreachable")


async def call_tool(conn: Connection, tool: MCPTool, args: dict[str, Any], key: str
                    ) -> dict[str, Any]:
    """One ``tools/call`` with ``key`` in ``_meta``, as a tool step's output (``content``,
    ``is_error``): a timeout, an error answer or a malformed result is a result the model
    reads. Raises ``ServerGone`` when the connection ended during the call (the call may
    have acted: its answer is lost)."""
    from orchestra.mcp.session import ServerGone

    s = tool.server
    try:
        result = await conn.call(tool.name, args, key, s.timeout)
    except TimeoutError:
        return {"content": f"MCP tool {tool.exposed!r} (server {s.name!r}) timed out after "
                f"{s.timeout:g} s; it may have taken effect: check before calling it again.",
                "is_error": True}
    except ServerGone:
        raise
    except Exception as exc:  # an error answer, or a result that breaks its output schema
        return {"content": f"MCP tool {tool.exposed!r} (server {s.name!r}) failed: "
                f"{type(exc).__name__}: {str(exc)[:2000]}", "is_error": True}
    return record_result(result)
