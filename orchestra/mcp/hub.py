"""The live MCP sessions of one process: each started when a role first needs it,
shared by the tasks of the process, and stopped with it (``aclose``, or the parent-death
signal when the process is killed)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestra._errors import UserError
from orchestra._log import get_logger
from orchestra.mcp.declare import MCPServer

if TYPE_CHECKING:
    from orchestra.mcp.session import Connection

log = get_logger("orchestra.mcp")


class MCPHub:
    """Sessions by connection: declarations that agree on how to reach a server share one."""

    def __init__(self) -> None:
        self._live: dict[tuple[object, ...], Connection] = {}
        self._locks: dict[tuple[object, ...], asyncio.Lock] = {}

    async def connection(self, server: MCPServer) -> Connection:
        """The live session with ``server``, started now if there is none."""
        key = server.connection()
        conn = self._live.get(key)
        if conn is not None and conn.alive:
            return conn
        async with self._locks.setdefault(key, asyncio.Lock()):
            conn = self._live.get(key)
            if conn is not None and conn.alive:
                return conn
            return await self._start(server)

    async def restart(self, server: MCPServer, dead: Connection) -> Connection:
        """A new session after ``dead`` ended mid-run (once per call; the caller decides)."""
        key = server.connection()
        async with self._locks.setdefault(key, asyncio.Lock()):
            conn = self._live.get(key)
            if conn is not None and conn is not dead and conn.alive:
                return conn
            await dead.close()
            log.warning("MCP server ended; restarting it", server=server.name,
                        where=server.where())
            return await self._start(server)

    async def _start(self, server: MCPServer) -> Connection:
        try:
            from orchestra.mcp.session import Connection
        except ImportError as exc:
            raise UserError(f"MCP server {server.name!r} needs the mcp SDK: pip install "
                            f"'orchestra-agents[mcp]' ({exc})") from None
        conn = Connection(server)
        await conn.start()
        self._live[server.connection()] = conn
        return conn

    async def aclose(self) -> None:
        """Stop every server this hub started."""
        live, self._live = list(self._live.values()), {}
        await asyncio.gather(*(c.close() for c in live), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class MCPSetup:
    """What a task runner needs for MCP: the process's sessions, and the pipeline's
    servers (given to every role, after the role's own)."""

    hub: MCPHub = field(default_factory=MCPHub)
    shared: tuple[MCPServer, ...] = ()
