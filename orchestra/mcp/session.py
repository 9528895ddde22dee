"""One live MCP session, on the official ``mcp`` SDK (imported here only).

The SDK's transports and sessions are context managers tied to the task that enters
them, so each session lives in an asyncio task of its own (``_serve``); calls from any
task of the process go through it. A stdio server is started through ``_launch`` so it
dies with this process, and its stderr goes to a file whose tail every error quotes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, TextIO, cast

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, RequestParamsMeta, Tool

from orchestra._errors import UserError
from orchestra.mcp.declare import MCPServer

LAUNCHER = Path(__file__).with_name("_launch.py")
STDERR_TAIL = 1500


class MCPServerError(UserError):
    """An MCP server could not be started or used: the message names it, its command or
    URL, and ends with the tail of its stderr."""


class ServerGone(Exception):
    """The connection ended while a request was out (the server died or hung up)."""


class Connection:
    """A started session with one server."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None
        self._bad_message: str | None = None
        self._read: Any = None  # the transport's receiving stream

    async def start(self) -> None:
        """Start the server (or connect to it) and initialize; errors are MCPServerError."""
        s = self.server
        if s.transport == "stdio":  # file-system work, off the loop
            problem = await asyncio.to_thread(self._check_command)
            if problem is not None:
                raise self.error(problem, "")
            self._stderr = await asyncio.to_thread(
                tempfile.TemporaryFile, "w+", encoding="utf-8", errors="replace")
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp server {s.name}")
        try:
            async with asyncio.timeout(s.start_timeout):  # wait_for may lose a cancel (3.11)
                await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise await self.failure(f"did not answer the MCP handshake within "
                                     f"{s.start_timeout:g} s{self._bad_note()}") from None
        except MCPServerError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            raise await self.failure(f"could not start: {_why(exc)}{self._bad_note()}") from None

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        s = self.server
        try:
            async with contextlib.AsyncExitStack() as stack:
                if s.transport == "stdio":
                    errlog = cast(TextIO, self._stderr or sys.stderr)
                    streams = await stack.enter_async_context(
                        stdio_client(self._params(), errlog=errlog))
                else:
                    from mcp.shared._httpx_utils import create_mcp_http_client

                    http = await stack.enter_async_context(await asyncio.to_thread(
                        create_mcp_http_client, headers=s.resolved_headers()))  # reads certs
                    streams = await stack.enter_async_context(
                        streamable_http_client(s.url, http_client=http))
                self._read = streams[0]
                session = await stack.enter_async_context(ClientSession(
                    streams[0], streams[1], message_handler=self._on_message))
                await session.initialize()
                self.session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else
                                    RuntimeError("cancelled while starting"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None

    def _params(self) -> StdioServerParameters:
        s = self.server
        env = s.resolved_env()
        if sys.platform == "linux":
            command = sys.executable
            args = ["-I", "-S", str(LAUNCHER), str(os.getpid()), s.command, *s.args]
        else:
            command, args = s.command, list(s.args)
        return StdioServerParameters(command=command, args=args, env=env, cwd=s.cwd)

    def _check_command(self) -> str | None:
        s = self.server
        path = {**os.environ, **dict(s.env)}.get("PATH")
        if shutil.which(s.command, path=path) is None:
            where = "" if os.sep in s.command else " on PATH"
            return (f"command {s.command!r} not found{where}; install it, or give its full "
                    "path in MCPServer.stdio(...)")
        if s.cwd is not None and not Path(s.cwd).is_dir():
            return f"cwd {s.cwd!r} is not a directory"
        return None

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line that is not JSON-RPC
            self._bad_message = f"{type(message).__name__}: {str(message)[:300]}"

    def _bad_note(self) -> str:
        if self._bad_message is None:
            return ""
        return f"; it wrote malformed JSON-RPC ({self._bad_message})"

    @property
    def alive(self) -> bool:
        """Started, not closed, and its transport still open (a stdio server that exited
        closed it: the next call starts it again, sending nothing to a dead one)."""
        return (self.session is not None and self._task is not None
                and not self._task.done() and _open(self._read))

    async def list_tools(self) -> list[Tool]:
        session = self._live()
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            from mcp.types import PaginatedRequestParams

            page = await self._request(session.list_tools(
                params=PaginatedRequestParams(cursor=cursor) if cursor else None),
                self.server.timeout, "tools/list")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, name: str, arguments: dict[str, Any], key: str,
                   seconds: float) -> CallToolResult:
        """Send ``tools/call`` with the idempotency key in ``_meta``. Raises TimeoutError,
        ServerGone (the connection ended), or the SDK's error for a malformed result."""
        session = self._live()
        meta = cast(RequestParamsMeta, {"orchestra/idempotency_key": key})
        result: CallToolResult = await self._request(session.call_tool(
            name, arguments, meta=meta), seconds, "tools/call")
        return result

    async def _request(self, request: Any, seconds: float, what: str) -> Any:
        try:
            async with asyncio.timeout(seconds):  # no task of its own, unlike wait_for
                return await request
        except TimeoutError:
            if self._bad_message is not None:
                raise ServerGone(f"{what}: no valid answer{self._bad_note()}") from None
            raise
        except Exception as exc:
            if not self.alive or _connection_closed(exc):
                raise ServerGone(f"{what}: {_why(exc)}") from exc
            raise

    def _live(self) -> ClientSession:
        if self.session is None:
            raise ServerGone("the session is closed")
        return self.session

    async def failure(self, problem: str) -> MCPServerError:
        """:meth:`error`, with the tail of the server's stderr (read off the loop)."""
        await self.close()
        return self.error(problem, await asyncio.to_thread(self.stderr_tail))

    def error(self, problem: str, tail: str) -> MCPServerError:
        s = self.server
        return MCPServerError(
            f"MCP server {s.name!r} ({s.transport}: {s.where()}) {problem}"
            + (f"\n--- its stderr (last lines) ---\n{tail}" if tail else
               ("; it wrote nothing to stderr" if self._stderr is not None else "")))

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read().strip()
        except (OSError, ValueError):
            return ""

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(task)
            except (TimeoutError, Exception):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


def _open(stream: Any) -> bool:
    """A transport's receiving stream (the SDK's memory stream, or one wrapping it) still
    has a sender: the transport did not close it."""
    stats = getattr(stream, "statistics", None) or getattr(
        getattr(stream, "_inner", None), "statistics", None)
    return stats is None or bool(stats().open_send_streams)


def _connection_closed(exc: Exception) -> bool:
    text = str(exc).lower()
    return "connection closed" in text or "closed" in type(exc).__name__.lower()


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
