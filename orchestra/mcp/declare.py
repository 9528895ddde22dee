"""Declaring an MCP server: how to reach it, which of its tools a role sees, and the
rules for its calls (approval, what to do with a call in flight at a crash).

Pure data: nothing here starts a process or imports the ``mcp`` SDK. Header and
environment values may name environment variables (``"Bearer ${TOKEN}"`` or
``"env:TOKEN"``); they are read when the server is started, and never stored, logged
or put in events.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestra._errors import UserError

InDoubt = Literal["resend", "ask", "fail"]
"""A call in flight at a crash: send it again, ask a person (an approval), or tell the
model it was not re-sent. The default follows the tool's hints: ``resend`` for a tool
marked ``readOnlyHint`` or ``idempotentHint``, else ``ask``."""

Approval = bool | Literal["destructive"] | Collection[str]
_POLICIES = ("resend", "ask", "fail")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class MCPServer:
    """An MCP server a role takes tools from. Build one with :meth:`stdio` or :meth:`http`."""

    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    include: frozenset[str] | None = None
    """Only these tools (names at the server); None: all of them."""
    exclude: frozenset[str] = frozenset()
    prefix: str = ""
    """Put before each tool's name as the model sees it (``prefix="git_"``)."""
    in_doubt: InDoubt | tuple[tuple[str, InDoubt], ...] | None = None
    needs_approval: bool | Literal["destructive"] | frozenset[str] = False
    """Stop for a person before a call: True (every tool), ``"destructive"`` (tools the
    server does not mark read-only or ``destructiveHint: false``), or tool names."""
    timeout: float = 60.0
    """Seconds one call may take; the model is told when it ran out (it may have acted)."""
    start_timeout: float = 30.0

    @classmethod
    def stdio(cls, command: str, args: Collection[str] = (), *,
              env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
              name: str | None = None,
              include: Collection[str] | None = None, exclude: Collection[str] = (),
              prefix: str = "", in_doubt: InDoubt | Mapping[str, InDoubt] | None = None,
              needs_approval: Approval = False, timeout: float = 60.0,
              start_timeout: float = 30.0) -> MCPServer:
        """A server run as a child process of the worker, spoken to over its stdin/stdout.

        It starts when a role first needs it, is shared by the tasks of the process and
        dies with it (its own process group, and a parent-death signal on Linux)."""
        if not command or not isinstance(command, str):
            raise UserError(f"MCPServer.stdio: command must be a program name or path, got "
                            f"{command!r}")
        if isinstance(args, str):
            raise UserError(f"MCPServer.stdio({command!r}): args must be a list of strings, "
                            f"got the string {args!r}; write args={shlex.split(args)!r}")
        return cls._checked(cls(
            name or _default_name(command, tuple(args)), "stdio", command=command,
            args=tuple(str(a) for a in args), env=tuple(sorted((env or {}).items())),
            cwd=os.fspath(cwd) if cwd is not None else None, **_common(
                include, exclude, prefix, in_doubt, needs_approval, timeout, start_timeout)))

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None,
             name: str | None = None, include: Collection[str] | None = None,
             exclude: Collection[str] = (), prefix: str = "",
             in_doubt: InDoubt | Mapping[str, InDoubt] | None = None,
             needs_approval: Approval = False, timeout: float = 60.0,
             start_timeout: float = 30.0) -> MCPServer:
        """A server reached over Streamable HTTP at ``url``."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UserError(f"MCPServer.http: url must start with http:// or https://, got "
                            f"{url!r}")
        return cls._checked(cls(
            name or _host(url), "http", url=url, headers=tuple(sorted((headers or {}).items())),
            **_common(include, exclude, prefix, in_doubt, needs_approval, timeout,
                      start_timeout)))

    @staticmethod
    def _checked(server: MCPServer) -> MCPServer:
        if not _NAME.fullmatch(server.name):
            raise UserError(f"MCP server name {server.name!r}: use letters, digits, '.', '-' "
                            "or '_' (name=...)")
        if server.timeout <= 0 or server.start_timeout <= 0:
            raise UserError(f"MCP server {server.name!r}: timeout and start_timeout must be > 0")
        return server

    # -- what the runtime asks -----------------------------------------------------
    def offers(self, tool: str) -> bool:
        """The tool (named as at the server) is given to the role."""
        return (self.include is None or tool in self.include) and tool not in self.exclude

    def policy(self, tool: str) -> InDoubt | None:
        """The in-doubt policy set for ``tool`` (None: decided by its hints)."""
        if isinstance(self.in_doubt, tuple):
            return dict(self.in_doubt).get(tool)
        return self.in_doubt

    def connection(self) -> tuple[object, ...]:
        """What identifies the live session: declarations equal in this share one."""
        return (self.transport, self.command, self.args, self.env, self.cwd, self.url,
                self.headers)

    def where(self) -> str:
        """The server for a person: its command line or URL (never header values)."""
        if self.transport == "http":  # without any user:password@ in it
            scheme, _, rest = self.url.partition("//")
            host, slash, path = rest.partition("/")
            return f"{scheme}//{host.rpartition('@')[2]}{slash}{path}"
        return shlex.join([self.command, *self.args])

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        return {k: resolve(v, f"header {k!r} of MCP server {self.name!r}", environ)
                for k, v in self.headers}

    def resolved_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        return {k: resolve(v, f"env {k!r} of MCP server {self.name!r}", environ)
                for k, v in self.env}

    def __repr__(self) -> str:  # header and env values stay out of logs and tracebacks
        return f"MCPServer({self.name!r}, {self.transport}: {self.where()})"


def resolve(value: str, what: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with ``${NAME}`` (or a whole ``env:NAME``) read from the environment."""
    env = os.environ if environ is None else environ

    def read(name: str) -> str:
        if name not in env:
            raise UserError(f"{what} names the environment variable {name}, which is not set; "
                            f"set it (export {name}=...) and start again")
        return env[name]

    if value.startswith("env:") and _NAME.fullmatch(value[4:]):
        return read(value[4:])
    return _VAR.sub(lambda m: read(m.group(1)), value)


def _common(include: Collection[str] | None, exclude: Collection[str], prefix: str,
            in_doubt: InDoubt | Mapping[str, InDoubt] | None, needs_approval: Approval,
            timeout: float, start_timeout: float) -> dict[str, Any]:
    for label, names in (("include", include or ()), ("exclude", exclude)):
        if isinstance(names, str):
            raise UserError(f"MCPServer {label}= takes tool names, got the string {names!r}; "
                            f"write {label}=[{names!r}]")
    policies = in_doubt.values() if isinstance(in_doubt, Mapping) else [in_doubt]
    for p in policies:
        if p is not None and p not in _POLICIES:
            raise UserError(f"MCPServer in_doubt={p!r}: use one of {list(_POLICIES)}")
    approval: bool | str | frozenset[str]
    if isinstance(needs_approval, bool) or needs_approval == "destructive":
        approval = needs_approval
    elif isinstance(needs_approval, str):
        raise UserError(f"MCPServer needs_approval={needs_approval!r}: use True, "
                        "'destructive' or a list of tool names")
    else:
        approval = frozenset(needs_approval)
    return {"include": frozenset(include) if include is not None else None,
            "exclude": frozenset(exclude), "prefix": prefix,
            "in_doubt": tuple(sorted(in_doubt.items())) if isinstance(in_doubt, Mapping)
            else in_doubt, "needs_approval": approval, "timeout": float(timeout),
            "start_timeout": float(start_timeout)}


def _default_name(command: str, args: tuple[str, ...]) -> str:
    """``mcp-server-time`` for ``mcp-server-time``; the module or script for ``python``."""
    base = Path(command).name
    if base.startswith("python") or base in ("uv", "uvx", "npx", "node"):
        for i, arg in enumerate(args):
            if arg == "-m" and i + 1 < len(args):
                return args[i + 1].rsplit(".", 1)[-1]
            if not arg.startswith("-") and arg not in ("run", "tool"):
                return Path(arg).stem
    return re.sub(r"[^A-Za-z0-9_.-]", "_", base) or "mcp"


def _host(url: str) -> str:
    host = url.split("//", 1)[1].split("/", 1)[0].split("@")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", host)
