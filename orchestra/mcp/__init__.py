"""Tools from MCP servers, journaled like every other step.

Declare servers beside a role's Python tools (``mcp = [MCPServer.stdio(...)]``) or for
every role of a pipeline (``Pipeline(mcp=[...])``). What a model was offered is recorded as
a step; every ``tools/call`` is a journaled tool step carrying the step's idempotency key in
``_meta``. The live side (the ``mcp`` SDK) is imported only when a server is first used:
``pip install 'orchestra-agents[mcp]'``.
"""

from orchestra.mcp.declare import InDoubt, MCPServer

__all__ = ["InDoubt", "MCPServer"]
