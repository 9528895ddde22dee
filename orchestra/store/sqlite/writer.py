"""The store's group-commit writer, on aiosqlite's public API.

Writes queue here; a task of the writer's drains the queue (up to ``max_batch`` at a
time) into ONE transaction: ``BEGIN IMMEDIATE``, each write's statements (a step's
usual end is one ``INSERT`` into ``step_records``), ``COMMIT``. Each write has its own
savepoint when the batch holds more than one, so a failing write rolls back alone.
Writes queued while a batch commits form the next batch: under load the commit (and,
at durability "full", the fsync) is shared by every write in it; a lone write is a
plain transaction. Every statement runs on aiosqlite's thread, never on the loop.

Cancellation: a write whose caller was cancelled before its batch began is dropped
(nothing written); once begun it commits or rolls back with its batch, whatever
happens to the caller (its result is then discarded).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from orchestra._errors import StoreError
from orchestra.store.sqlite.txn import Conn

T = TypeVar("T")
Op = Callable[[Conn], Awaitable[Any]]
OpResult = tuple[bool, Any]  # (ok, result or exception)


async def run_batch(conn: Conn, ops: list[Op]) -> list[OpResult]:
    """Run ``ops`` in one transaction; an op that raises is rolled back to its savepoint.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so a writer in another process
    waits in ``busy_timeout`` instead of deadlocking when both try to upgrade a read
    transaction. A failure of the transaction itself (``COMMIT`` fails, SQLite rolled
    everything back, a ``BaseException``) becomes every op's outcome.
    """
    try:
        await conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        return [(False, not_committed(exc))] * len(ops)
    outcomes: list[OpResult] = []
    try:
        if len(ops) == 1:  # no savepoint needed: the op's failure is the batch's
            try:
                outcomes.append((True, await ops[0](conn)))
            except Exception as exc:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                return [(False, exc)]
        else:
            for op in ops:
                await conn.execute("SAVEPOINT op")
                try:
                    result = await op(conn)
                except Exception as exc:
                    if not conn.in_transaction:
                        raise  # SQLite rolled back everything itself (disk full, I/O error)
                    await conn.execute("ROLLBACK TO op")
                    await conn.execute("RELEASE op")
                    outcomes.append((False, exc))
                else:
                    await conn.execute("RELEASE op")
                    outcomes.append((True, result))
        await conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        return [(False, not_committed(exc))] * len(ops)
    return outcomes


class Writer:
    """Group commits on one aiosqlite connection; ``write`` is settled once its batch commits.

    ``on_commit`` runs after each batch that committed a write.
    """

    def __init__(self, conn: Conn, *, max_batch: int = 256,
                 on_commit: Callable[[], None] = lambda: None) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.conn = conn
        self.on_commit = on_commit
        """Run after each batch that committed a write."""
        self._max_batch = max_batch
        self._jobs: deque[tuple[Op, asyncio.Future[Any]]] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(self._drain(),
                                                            name="orchestra-store-writer")

    def write(self, op: Callable[[Conn], Awaitable[T]]) -> asyncio.Future[T]:
        """Run ``op(conn)`` inside the next group commit."""
        if self._closing:
            raise StoreError("the store is closed; open it again")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.append((op, future))
        self._wake.set()
        return future

    async def close(self) -> None:
        """Commit everything queued, then close the connection."""
        if not self._closing:
            self._closing = True
            self._wake.set()
        try:
            await asyncio.shield(self._task)
        finally:
            await self.conn.db.close()

    async def _drain(self) -> None:
        jobs = self._jobs
        while jobs or not self._closing:
            if not jobs:
                self._wake.clear()
                await self._wake.wait()
                continue
            taken = [jobs.popleft() for _ in range(min(len(jobs), self._max_batch))]
            taken = [job for job in taken if not job[1].cancelled()]
            if not taken:
                continue
            outcomes = await run_batch(self.conn, [op for op, _ in taken])
            for (_, future), (ok, value) in zip(taken, outcomes, strict=True):
                if future.done():  # its caller was cancelled; the write still ran
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
            if any(ok for ok, _ in outcomes):
                self.on_commit()


def not_committed(exc: BaseException) -> StoreError:
    error = StoreError(f"the transaction was rolled back and nothing was written: {exc}")
    error.__cause__ = exc
    return error
