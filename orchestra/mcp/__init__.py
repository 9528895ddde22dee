"""Tools from MCP servers, journaled like every other step.

Declare servers beside a role's Python tools (``mcp = [MCPServer.stdio(...)]``) or for
every role of a pipeline (``Pipeline(mcp=[...])``). What a model was offered is recorded as
a step; every ``tools/call`` is a journaled tool step carrying the step's idempotency key in
``_meta``. The live side (the ``mcp`` SDK) is imported only when a server is first used:
``pip install 'orchestra-agents[mcp]'``.

This package is a driver, like ``orchestra.models``: it declares servers, keeps their
sessions and speaks to them, and imports nothing above it. The runtime journals, approves
and traces the calls (``orchestra.runtime.mcp_tools``, a tool source like any other).
"""

from orchestra.mcp.declare import InDoubt, MCPServer

__all__ = ["InDoubt", "MCPServer"]
