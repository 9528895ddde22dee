"""The board's methods, written once: plans, handoffs and notes (see ``facade``)."""

from __future__ import annotations

from orchestra._types import JSON, Handoff, Note, Plan
from orchestra.store.backend import C, X
from orchestra.store.facade import Facade
from orchestra.store.protocol import NewHandoff, NewNote


class BoardFacade(Facade[X, C]):
    """Mixed into each backend's store class."""

    async def post_plan(self, run_id: str, author: str, body: JSON) -> Plan:
        return await self._write(lambda tx: self._sql.board.post_plan(tx, run_id, author, body))

    async def post_handoff(self, run_id: str, from_agent: str, handoff: NewHandoff) -> Handoff:
        return await self._write(lambda tx: self._sql.board.post_handoff(tx, run_id, from_agent,
                                                                         handoff))

    async def post_note(self, run_id: str, author: str, note: NewNote) -> Note:
        return await self._write(lambda tx: self._sql.board.post_note(tx, run_id, author, note))

    async def get_plans(self, run_id: str) -> list[Plan]:
        return await self._read(lambda c: self._sql.board_reads.get_plans(c, run_id))

    async def latest_plan(self, run_id: str) -> Plan | None:
        return await self._read(lambda c: self._sql.board_reads.latest_plan(c, run_id))

    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]:
        return await self._read(lambda c: self._sql.board_reads.get_handoffs(
            c, run_id, to_role, from_agent))

    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]:
        """Notes holding every word of ``text`` (the backend's full-text index), most
        relevant first, ``rank`` set (higher is better); without ``text``, newest first.
        ``run_id``, ``author`` and ``tag`` filters combine."""
        return await self._read(lambda c: self._sql.board_reads.search_notes(
            c, run_id, text, author, tag, limit))
