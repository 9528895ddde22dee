"""The fan-out benchmark at a tiny size, on each store: every entry makes one task and one
consumption per subscription (``benchmarks/board_fanout.py``)."""

from __future__ import annotations

from benchmarks.board_fanout import measure
from orchestra.store import Blackboard


async def test_each_entry_makes_a_task_per_subscription(board_store: Blackboard) -> None:
    result = await measure(board_store, entries=5, subscriptions=3)
    assert result["tasks"] == 15 and result["post_ms"] > 0
