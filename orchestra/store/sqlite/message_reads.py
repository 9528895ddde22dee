"""Agents' new messages, read together: one statement for the reads that wait.

A process serving runs that others may serve too reads each agent's new messages as
each of its tasks starts (``AgentState.refresh`` when not exclusive): one statement,
and on aiosqlite one hop to its thread and back, per task. Tasks start in bursts (a
group commit settles many writes at once, and each one's job starts its next task),
so the reads asked in the same turn of the event loop, or while a read is under way,
go to SQLite as ONE statement over their ``(agent, after)`` pairs. Each caller gets
exactly what its own read would have returned.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

from orchestra._errors import StoreError
from orchestra._types import Message
from orchestra.store import rows as _rows
from orchestra.store.sqlite.txn import Conn

T = TypeVar("T")
Key = tuple[str, int]  # (agent id, after seq)
Read = Callable[[Callable[[Conn], Awaitable[T]]], Awaitable[T]]

_ONE = (f"SELECT {_rows.MESSAGE_COLS} FROM messages WHERE agent_id = ? AND seq > ? "
        "ORDER BY seq")
# json_each drives the join: one index range of ``messages`` per pair
_MANY = f"""
SELECT j.key, {', '.join('m.' + c for c in _rows.MESSAGE_COLS.split(', '))}
FROM json_each(?) j CROSS JOIN messages m
WHERE m.agent_id = json_extract(j.value, '$[0]') AND m.seq > json_extract(j.value, '$[1]')
ORDER BY j.key, m.seq"""


class MessageReads:
    """Coalesces ``get_messages(agent, after_seq)`` calls on one store's reader."""

    def __init__(self, read: Read[dict[Key, list[Message] | Exception]]) -> None:
        self._read = read
        self._waiting: dict[Key, asyncio.Future[list[Message]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def get(self, agent_id: str, after_seq: int) -> list[Message]:
        """``agent_id``'s messages after ``after_seq``, oldest first."""
        key = (agent_id, after_seq)
        future = self._waiting.get(key)
        if future is None:
            loop = asyncio.get_running_loop()
            future = self._waiting[key] = loop.create_future()
            if self._task is None:  # it starts next turn: this turn's reads join it
                self._task = loop.create_task(self._drain(), name="orchestra-message-reads")
        # shielded: one caller cancelled leaves the read to the others waiting on it
        return list(await asyncio.shield(future))

    async def _drain(self) -> None:
        batch: dict[Key, asyncio.Future[list[Message]]] = {}
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, {}
                keys = list(batch)
                try:
                    found = await self._read(partial(_messages, keys=keys))
                except Exception as exc:
                    found = dict.fromkeys(keys, exc)
                for key, future in batch.items():
                    got = found.get(key, [])
                    if future.done():
                        continue
                    if isinstance(got, Exception):
                        future.set_exception(got)
                    else:
                        future.set_result(got)
                batch = {}
        finally:
            self._task = None
            for future in (*batch.values(), *self._waiting.values()):
                if not future.done():  # the drain itself was cancelled (the loop is closing)
                    future.set_exception(StoreError("the read was cancelled; read again"))
            self._waiting = {}


async def _messages(conn: Conn, keys: list[Key]) -> dict[Key, list[Message] | Exception]:
    """Each pair's messages, in one statement; a row that does not decode fails only the
    read it belongs to."""
    if len(keys) == 1:
        rows = (await conn.execute(_ONE, keys[0])).fetchall()
        return {keys[0]: _decoded(rows)}
    by_key: list[list[tuple[object, ...]]] = [[] for _ in keys]
    for row in (await conn.execute(_MANY, (json.dumps(keys),))).fetchall():
        by_key[row[0]].append(row[1:])
    return {key: _decoded(rows) for key, rows in zip(keys, by_key, strict=True)}


def _decoded(rows: list[tuple[object, ...]]) -> list[Message] | Exception:
    try:
        return [_rows.message(r) for r in rows]
    except Exception as exc:  # a corrupt row: its reader gets the store's clear error
        return exc
