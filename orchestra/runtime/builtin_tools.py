"""Tools every agent gets: ``recall`` searches the agent's own full history.

Compaction hides old messages from the model's view; ``recall`` is how the agent
gets them back, so nothing is lost for good.
"""

from __future__ import annotations

from functools import cache

from orchestra.tools import Tool, ToolContext, make_tool


async def recall(ctx: ToolContext, query: str, limit: int = 5) -> list[dict[str, object]]:
    """Search your own earlier messages (all of them, also those no longer in view)."""
    found = await ctx.board.search_messages(ctx.agent_id, query, limit=max(1, min(limit, 20)))
    return [{"seq": m.seq, "role": m.role, "content": m.content[:1500]} for m in found]


@cache
def builtin_tools() -> dict[str, Tool]:
    return {"recall": make_tool(recall, owner="builtin")}
