"""The entries half of both stores' facades (``SQLiteBlackboard``, ``PostgresBlackboard``):
one implementation; each backend supplies its SQL module (``sqlite/entries``,
``postgres/entries``, the same functions under the same names) and how it runs a write
and a read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import pydantic

from orchestra._entries import PUBLIC, Consumption, Entry, Scope
from orchestra.store.entry_protocol import NewEntry, NewTrigger, as_new_entry

T = TypeVar("T")


class EntrySQL(Protocol):
    """What each backend's ``entries`` module provides."""

    async def post_entries(self, tx: Any, run_id: str, author: str, task_id: str | None,
                           entries: Sequence[NewEntry]) -> list[Entry]: ...
    async def post_triggers(self, tx: Any, run_id: str, parent_id: str | None,
                            triggers: Sequence[NewTrigger]) -> list[Consumption]: ...
    async def get_entries(self, c: Any, run_id: str, type: str | None,
                          after: int) -> list[Entry]: ...
    async def get_consumptions(self, c: Any, run_id: str) -> list[Consumption]: ...


class EntryMethods:
    """Mixed into a store, which sets ``_entry_sql`` and provides ``_entry_write`` and
    ``_read``."""

    _entry_sql: EntrySQL

    async def _entry_write(self, op: Callable[[Any], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[Any], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def post_entry(self, run_id: str, author: str, entry: NewEntry | pydantic.BaseModel,
                         *, tags: tuple[str, ...] = (), scope: Scope = PUBLIC,
                         triggers: Sequence[NewTrigger] = ()) -> Entry:
        """Post one entry from Python (``author``: who posted it, e.g. ``"operator"`` or an
        agent id), with the ``triggers`` it causes in the same transaction."""
        new = as_new_entry(entry, tags, scope)
        sql = self._entry_sql
        wanted = tuple(triggers)

        async def op(tx: Any) -> Entry:
            [posted] = await sql.post_entries(tx, run_id, author, None, [new])
            await sql.post_triggers(tx, run_id, None, wanted)
            return posted

        return await self._entry_write(op)

    async def post_triggers(self, run_id: str, triggers: Sequence[NewTrigger]
                            ) -> list[Consumption]:
        """Commit triggers decided after their entries committed (a join over the board,
        a resumed run catching up): those already recorded write nothing."""
        sql = self._entry_sql
        wanted = tuple(triggers)
        return await self._entry_write(lambda tx: sql.post_triggers(tx, run_id, None, wanted))

    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]:
        sql = self._entry_sql
        return await self._read(lambda c: sql.get_entries(c, run_id, type, after))

    async def get_consumptions(self, run_id: str) -> list[Consumption]:
        sql = self._entry_sql
        return await self._read(lambda c: sql.get_consumptions(c, run_id))
