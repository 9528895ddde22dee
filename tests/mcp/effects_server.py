"""The tests' own MCP server (the ``mcp`` SDK's ``MCPServer``), over stdio or Streamable HTTP.

Tools: ``peek`` (read-only: how many effects so far), ``put`` (idempotent: writes a value
under a name), ``append`` (a side effect: one line per call in ``$EFFECTS``, with the
idempotency key the call carried in ``_meta``), ``noop`` (for the overhead benchmark) and
``shaped`` (declares an output schema, and breaks it when asked).

``python effects_server.py [stdio|http PORT] [MODE]``; MODE ``exit`` quits at start,
``hang`` never answers, ``garbage`` answers with lines that are not JSON-RPC.
Environment: ``EFFECTS`` (the effects file; ``append`` first writes ``begin KEY`` to
``EFFECTS.begun``), ``APPEND_DELAY`` (seconds ``append`` waits before and after its
effect: a window for a kill in flight), ``PIDFILE`` (where the server writes its pid).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("effects")
EFFECTS = Path(os.environ.get("EFFECTS", "effects.log"))
DELAY = float(os.environ.get("APPEND_DELAY", "0"))


def _write(path: Path, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _lines() -> list[str]:
    return EFFECTS.read_text().splitlines() if EFFECTS.exists() else []


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek() -> str:
    """How many effects happened so far."""
    return str(len(_lines()))


@server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
def put(name: str, value: str) -> str:
    """Store a value under a name (the same call twice changes nothing)."""
    (EFFECTS.parent / f"put-{name}").write_text(value)
    return f"{name}={value}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def append(text: str, ctx: Context) -> str:
    """Append one line of text to the effects file."""
    meta = ctx.request_context.meta or {}
    key = meta.get("orchestra/idempotency_key", "-")
    _write(EFFECTS.with_suffix(".begun"), f"begin {key}")
    if DELAY:
        time.sleep(DELAY)
    _write(EFFECTS, f"{key} {text}")
    if DELAY:
        time.sleep(DELAY)
    return f"appended {text!r} (effect {len(_lines())})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def noop() -> str:
    """Does nothing."""
    return "ok"


@server.tool()
def touch() -> str:
    """Does nothing, but says nothing of its effects (so it counts as side-effecting)."""
    return "ok"


class Shape(BaseModel):
    sides: int


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def shaped(sides: int, broken: bool = False) -> Shape:
    """A shape with an output schema (broken=True returns content that breaks it)."""
    return Shape.model_construct(sides="many" if broken else sides)  # type: ignore[arg-type]


if os.environ.get("EFFECTS_EXTRA"):  # a server upgraded between a crash and a resume
    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()


def main(argv: list[str]) -> None:
    transport = argv[0] if argv else "stdio"
    mode = argv[-1] if argv and argv[-1] in ("exit", "hang", "garbage") else ""
    if os.environ.get("REFUSE") and Path(os.environ["REFUSE"]).exists():
        print("effects server: refusing to start (the REFUSE file exists)", file=sys.stderr)
        sys.exit(3)
    if os.environ.get("PIDFILE"):
        Path(os.environ["PIDFILE"]).write_text(str(os.getpid()))
    if mode == "exit":
        print("effects server: refusing to start (mode exit)", file=sys.stderr)
        sys.exit(3)
    if mode == "hang":
        print("effects server: hanging", file=sys.stderr, flush=True)
        time.sleep(3600)
    if mode == "garbage":
        for line in sys.stdin:
            print("this is not JSON-RPC {", flush=True)
            print(f"effects server: got {line[:40]!r}", file=sys.stderr, flush=True)
        return
    if transport == "http":
        import uvicorn
        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(argv[1]),
                    log_level="warning")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
