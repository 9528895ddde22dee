"""The board half of ``SQLiteBlackboard``: plans, handoffs, notes and approvals.

Split from ``sqlite.py`` to keep each module to one job; the methods only build
the ops (in ``_board_txn`` / ``_approval_txn`` / ``_board_queries``) and send
them through the store's writer or reader.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from orchestra._store import _approval_txn, _board_queries, _board_txn, _queries
from orchestra._store._codec import Encoder
from orchestra._store.protocol import Lease, NewHandoff, NewNote
from orchestra._types import JSON, Approval, Handoff, Note, Plan

T = TypeVar("T")


class BoardMethods:
    """Mixed into ``SQLiteBlackboard``, which provides ``_enc``, ``_submit`` and ``_read``."""

    _enc: Encoder

    async def _submit(self, op: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    # -- board ----------------------------------------------------------------
    async def post_plan(self, run_id: str, author: str, body: JSON) -> Plan:
        enc = self._enc
        return await self._submit(lambda c: _board_txn.post_plan(c, enc, run_id, author, body,
                                                                  time.time()))

    async def post_handoff(self, run_id: str, from_agent: str, handoff: NewHandoff) -> Handoff:
        enc = self._enc
        return await self._submit(lambda c: _board_txn.post_handoff(
            c, enc, run_id, from_agent, handoff, time.time()))

    async def post_note(self, run_id: str, author: str, note: NewNote) -> Note:
        enc = self._enc
        return await self._submit(lambda c: _board_txn.post_note(c, enc, run_id, author, note,
                                                                  time.time()))

    async def get_plans(self, run_id: str) -> list[Plan]:
        return await self._read(lambda c: _board_queries.get_plans(c, run_id))

    async def latest_plan(self, run_id: str) -> Plan | None:
        return await self._read(lambda c: _board_queries.latest_plan(c, run_id))

    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]:
        return await self._read(lambda c: _board_queries.get_handoffs(c, run_id, to_role,
                                                                      from_agent))

    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]:
        """Notes matching every word of ``text`` (FTS5, most relevant first, ``rank`` set);
        without ``text``, newest first. ``run_id``, ``author`` and ``tag`` filters combine."""
        return await self._read(lambda c: _board_queries.search_notes(c, run_id, text, author,
                                                                      tag, limit))

    # -- approvals ------------------------------------------------------------
    async def request_approval(self, task_id: str, lease: Lease, *, retry: int, step: int,
                               tool: str, arguments: JSON) -> Approval:
        enc = self._enc
        return await self._submit(lambda c: _approval_txn.request_approval(
            c, enc, task_id, lease, retry=retry, step=step, tool=tool, arguments=arguments,
            now=time.time()))

    async def find_approval(self, task_id: str, retry: int, step: int) -> Approval | None:
        return await self._read(lambda c: _queries.find_approval(c, task_id, retry, step))

    async def get_approval(self, approval_id: str) -> Approval:
        return await self._read(lambda c: _queries.get_approval(c, approval_id))

    async def list_approvals(self, run_id: str, *, status: str | None = None) -> list[Approval]:
        return await self._read(lambda c: _queries.list_approvals(c, run_id, status))

    async def decide_approval(self, approval_id: str, *, approved: bool, by: str,
                              reason: str | None = None) -> Approval:
        enc = self._enc
        return await self._submit(lambda c: _approval_txn.decide_approval(
            c, enc, approval_id, approved=approved, by=by, reason=reason, now=time.time()))
