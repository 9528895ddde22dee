"""The decisions about one MCP call, as pure functions of what is recorded.

Nothing here looks at a live server or a cache: given the same journal, a resumed task
decides the same way in any process.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from orchestra.mcp.declare import InDoubt, MCPServer


def in_doubt(policy: InDoubt | None, annotations: Mapping[str, Any]) -> InDoubt:
    """What to do with a call that was sent before a crash and has no recorded answer.

    A policy set on the server (or for the tool) wins. Otherwise a tool the server marks
    read-only or idempotent is sent again (a second call does no harm), and any other
    tool waits for a person: it may have acted, and sending it twice may act twice."""
    if policy is not None:
        return policy
    if annotations.get("readOnlyHint") or annotations.get("idempotentHint"):
        return "resend"
    return "ask"


def destructive(annotations: Mapping[str, Any]) -> bool:
    """The MCP spec's reading of the hints: a tool not marked read-only may destroy,
    unless it is marked ``destructiveHint: false``."""
    return not annotations.get("readOnlyHint") and annotations.get("destructiveHint", True) \
        is not False


def needs_approval(server: MCPServer, tool: str, exposed: str, annotations: Mapping[str, Any],
                   role_names: Collection[str]) -> bool:
    """A person decides before this call is sent (the role's ``needs_approval`` names the
    tool as the model sees it; the server's rule names it as the server does)."""
    rule = server.needs_approval
    if exposed in role_names or rule is True:
        return True
    if rule == "destructive":
        return destructive(annotations)
    return isinstance(rule, frozenset) and (tool in rule or exposed in rule)


def in_doubt_step(step: int, attempts: int) -> int:
    """The approval slot of an in-doubt call: one per (step, send), apart from the step's
    own approval (``needs_approval``), so a resend that is itself cut short asks again."""
    return -(step * 1000 + attempts)


def unreachable_step(step: int, k: int) -> int:
    """The approval slot of the ``k``-th time a step's server could not be reached, in a
    task that already did work a fresh attempt would do again."""
    return -(step * 1000 + 500 + k)
