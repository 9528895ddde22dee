"""The board half of ``PostgresBlackboard``: plans, handoffs, notes and approvals.

Split from ``store.py`` to keep each module to one job; the methods only build the
ops (in ``board`` / ``approvals`` / ``board_reads`` / ``reads``) and send them
through the store's transactions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from orchestra._types import JSON, Approval, Handoff, Note, Plan
from orchestra.store.codec import Encoder
from orchestra.store.postgres import approvals as _approvals
from orchestra.store.postgres import board as _board
from orchestra.store.postgres import board_reads as _board_reads
from orchestra.store.postgres import reads as _reads
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Lease, NewHandoff, NewNote

T = TypeVar("T")


class BoardMethods:
    """Mixed into ``PostgresBlackboard``, which provides ``_enc``, ``_submit`` and ``_read``."""

    _enc: Encoder

    async def _submit(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def post_plan(self, run_id: str, author: str, body: JSON) -> Plan:
        return await self._submit(lambda tx: _board.post_plan(tx, run_id, author, body))

    async def post_handoff(self, run_id: str, from_agent: str, handoff: NewHandoff) -> Handoff:
        return await self._submit(lambda tx: _board.post_handoff(tx, run_id, from_agent,
                                                                 handoff))

    async def post_note(self, run_id: str, author: str, note: NewNote) -> Note:
        return await self._submit(lambda tx: _board.post_note(tx, run_id, author, note))

    async def get_plans(self, run_id: str) -> list[Plan]:
        return await self._read(lambda c: _board_reads.get_plans(c, run_id))

    async def latest_plan(self, run_id: str) -> Plan | None:
        return await self._read(lambda c: _board_reads.latest_plan(c, run_id))

    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]:
        return await self._read(lambda c: _board_reads.get_handoffs(c, run_id, to_role, from_agent))

    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]:
        """Notes holding every word of ``text`` (most relevant first, ``rank`` set: higher is
        better); without ``text``, newest first. The filters combine."""
        return await self._read(lambda c: _board_reads.search_notes(c, run_id, text, author, tag,
                                                                    limit))

    async def request_approval(self, task_id: str, lease: Lease, *, retry: int, step: int,
                               tool: str, arguments: JSON) -> Approval:
        return await self._submit(lambda tx: _approvals.request_approval(
            tx, task_id, lease, retry=retry, step=step, tool=tool, arguments=arguments))

    async def find_approval(self, task_id: str, retry: int, step: int) -> Approval | None:
        return await self._read(lambda c: _reads.find_approval(c, task_id, retry, step))

    async def get_approval(self, approval_id: str) -> Approval:
        return await self._read(lambda c: _reads.get_approval(c, approval_id))

    async def list_approvals(self, run_id: str, *, status: str | None = None) -> list[Approval]:
        return await self._read(lambda c: _reads.list_approvals(c, run_id, status))

    async def decide_approval(self, approval_id: str, *, approved: bool, by: str,
                              reason: str | None = None) -> Approval:
        return await self._submit(lambda tx: _approvals.decide_approval(
            tx, approval_id, approved=approved, by=by, reason=reason))
