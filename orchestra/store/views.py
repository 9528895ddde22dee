"""Narrow views of a store, checked at run time as well as by the type checker.

A tool's ``ctx.board`` is a :class:`ReadOnlyBoard`: a user's tool may search the notes
and entries its role may see (their scope, ``visible_to``) and its agent's messages, and
read plans and handoffs, but it cannot reach the rest of the
store (``delete_run``, ``set_run_status``, a write outside its lease and its journal),
even by ignoring the type annotation. Its writes go through the context
(``ctx.post_note``, ``ctx.post_plan``, ``ctx.handoff``) and commit with its journal entry.
"""

from __future__ import annotations

from typing import NoReturn

from orchestra._entries import Entry, visible_to
from orchestra._types import AgentId, Handoff, Message, Note, Plan
from orchestra.store.protocol import BoardReads

READS = ("search_notes", "search_messages", "get_plans", "latest_plan", "get_handoffs",
         "get_entries")
"""The methods a tool may call on ``ctx.board``."""


class ReadOnlyBoard:
    """The board as a tool sees it: the reads of :class:`BoardReads`, nothing else."""

    __slots__ = ("__labels", "__role", "__store")

    def __init__(self, store: BoardReads, role: str | None = None,
                 labels: frozenset[str] = frozenset()) -> None:
        self.__store = store
        self.__role = role
        self.__labels = labels

    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]:
        """The notes this board's role may read (every note for a board of no role), up
        to ``limit`` of them: notes it may not read take no place in the ``limit``."""
        role, asked = self.__role, limit
        while True:
            found = await self.__store.search_notes(run_id, text=text, author=author, tag=tag,
                                                    limit=asked)
            if role is None:
                return found
            seen = [n for n in found if visible_to(n.scope, n.author_role, role, self.__labels)]
            if len(seen) >= limit or len(found) < asked:
                return seen[:limit]
            asked *= 4  # the store's page held notes out of scope: read further

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        """An agent's messages holding ``text``: only its own role's agents' for a board of
        a role (another role's history may hold what its scope keeps from this one)."""
        if self.__role is not None and AgentId.parse(agent_id).role != self.__role:
            return []
        return await self.__store.search_messages(agent_id, text, limit=limit)

    async def get_plans(self, run_id: str) -> list[Plan]:
        return await self.__store.get_plans(run_id)

    async def latest_plan(self, run_id: str) -> Plan | None:
        return await self.__store.latest_plan(run_id)

    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]:
        return await self.__store.get_handoffs(run_id, to_role=to_role, from_agent=from_agent)

    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]:
        """The run's entries this board's role may see (every entry for a board of no role)."""
        entries = await self.__store.get_entries(run_id, type=type, after=after)
        role = self.__role
        if role is None:
            return entries
        return [e for e in entries if visible_to(e.scope, e.author_role, role, self.__labels)]

    def __getattr__(self, name: str) -> NoReturn:
        # only called for names the class lacks: the rest of the store
        raise AttributeError(
            f"ctx.board is read-only: a tool cannot call {name!r} on the store. It may read "
            f"({', '.join(READS)}) and posts through its context (ctx.post_note, "
            "ctx.post_plan, ctx.handoff), which commits with the tool's journal entry.")

    def __repr__(self) -> str:
        return "ReadOnlyBoard()"
