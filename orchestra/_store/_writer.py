"""The group-commit writer: every write of a store goes through one connection, in FIFO batches.

A write is a sync function ``op(conn) -> result``. The writer drains all queued ops
and runs them in ONE hop to the connection's thread, inside ONE ``BEGIN IMMEDIATE``
... ``COMMIT``, each op in its own savepoint so a failing op rolls back alone. Under
concurrency this amortizes the thread hop and the commit (and, at durability
"full", the fsync) over the whole batch: measured with 200 concurrent writers it
commits 3-4x more step transactions per second than one commit per write
(``benchmarks/store_txn.py``). When writes come one at a time a batch is one op, with
no savepoint, and costs the same as a plain transaction.

Cancellation: an op whose caller is cancelled before its batch starts is dropped
(nothing written); once its batch started it commits or rolls back with the batch
as a unit, on the connection thread, whatever happens to the coroutine that sent it.
If that coroutine is cancelled mid-hop, the batch's other callers are settled after
a FIFO barrier on the same thread, so nobody is left waiting.

Inline writes: with ``inline=True`` (durability "normal", where a commit appends to
the WAL without an fsync) a write that finds the writer idle waits one loop turn for
others to join it; if it is still alone, it runs synchronously on the event loop.
The hop to the thread and back costs more than such a write (measured: ~25% of a
sequential pipeline step), and a lone write has nothing to amortize it over. Batches
of several ops, and every batch at durability "full" (an fsync per commit), still go
to the thread, so the loop keeps running while they commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

import aiosqlite

from orchestra._errors import StoreError
from orchestra._store._connection import on_thread, raw

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
OpResult = tuple[bool, Any]  # (ok, result or exception)
_Queued = tuple[Op, "asyncio.Future[Any]"]


def run_batch(conn: sqlite3.Connection, ops: list[Op], *, begun: bool = False
              ) -> list[OpResult]:
    """Run ``ops`` in one transaction; an op that raises is rolled back to its savepoint.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so a writer in another process
    waits in ``busy_timeout`` instead of deadlocking when both try to upgrade a read
    transaction. Any ``BaseException`` rolls the whole batch back and propagates.
    """
    outcomes: list[OpResult] = []
    if not begun:
        conn.execute("BEGIN IMMEDIATE")
    try:
        if len(ops) == 1:  # no savepoint needed: the op's failure is the batch's
            try:
                outcomes.append((True, ops[0](conn)))
            except Exception as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                return [(False, exc)]
        else:
            for op in ops:
                conn.execute("SAVEPOINT op")
                try:
                    result = op(conn)
                except Exception as exc:
                    if not conn.in_transaction:
                        raise  # SQLite rolled back everything itself (disk full, I/O error)
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    outcomes.append((False, exc))
                else:
                    conn.execute("RELEASE op")
                    outcomes.append((True, result))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes


class _Batch:
    """Ops sent to the connection thread together, and (once run) their outcomes."""

    __slots__ = ("committed", "items", "outcomes", "sent")

    def __init__(self, items: list[_Queued]) -> None:
        self.items = items
        self.outcomes: list[OpResult] | None = None
        self.committed = False
        self.sent = False

    def run(self, conn: sqlite3.Connection, begun: bool = False) -> None:
        """On the connection thread. Never raises: failures become every op's outcome."""
        try:
            self.outcomes = run_batch(conn, [op for op, _ in self.items], begun=begun)
            self.committed = True
        except BaseException as exc:
            self.outcomes = [(False, _not_committed(exc)) for _ in self.items]

    def fail(self, error: BaseException) -> None:
        self.outcomes = [(False, error) for _ in self.items]


class GroupCommitWriter:
    """Serializes writes onto one connection; ``max_batch=1`` means one commit per write.

    There is no writer task on the fast path: a write that finds the writer idle sends
    its batch to the connection's thread itself and awaits that one hop. Writes that
    arrive while a batch is in flight queue up; when the batch settles, the next batch
    (all of them, up to ``max_batch``) is sent at once.
    """

    def __init__(self, conn: aiosqlite.Connection, *, on_commit: Callable[[], None],
                 max_batch: int = 256, inline: bool = False, busy_timeout: float = 30.0
                 ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._conn = conn
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._inline = inline
        self._busy_ms = int(busy_timeout * 1000)
        self._waits = True  # the connection's busy_timeout is _busy_ms (False: 0)
        self._flush_scheduled = False
        self._loop = asyncio.get_running_loop()
        self._queue: deque[_Queued] = deque()
        self._busy = False
        self._closing = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: set[asyncio.Task[object]] = set()

    async def submit(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Queue ``op`` and wait for its batch to commit; return its result or raise its error."""
        if self._closing:
            raise StoreError("the store is closed; open it again to write")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue.append((op, future))
        if not self._busy:
            if self._inline:
                # Flush once the writes that are ready this loop turn have joined: a lone
                # one runs inline, several go to the thread as one group commit.
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    self._idle.clear()
                    self._loop.call_soon(self._flush)
            else:
                batch = self._take_batch()
                if batch is not None:
                    await self._send(batch)  # settles ``future`` before it returns
        return cast(T, await future)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._busy:
            return
        batch = self._take_batch()
        if batch is None:
            self._idle.set()
        elif len(batch.items) == 1 and self._run_inline(batch):
            batch.sent = True
            self._settle(batch)
        else:
            self._spawn(self._send(batch), batch)

    async def close(self) -> None:
        """Commit everything queued, then refuse new writes."""
        self._closing = True
        await self._idle.wait()

    def _take_batch(self) -> _Batch | None:
        items: list[_Queued] = []
        while self._queue and len(items) < self._max_batch:
            item = self._queue.popleft()
            if not item[1].cancelled():  # its caller gave up before it started
                items.append(item)
        if not items:
            return None
        self._busy = True
        self._idle.clear()
        return _Batch(items)

    async def _send(self, batch: _Batch) -> None:
        """One hop to the connection's thread, then settle the batch's futures."""
        batch.sent = True  # on_thread queues the job before its first suspension point
        try:
            await on_thread(self._conn, self._waiting(batch))
        except asyncio.CancelledError:
            # The batch still runs: settle it once the thread is past it (FIFO barrier).
            self._spawn(self._settle_after_barrier(batch))
            raise
        except Exception as exc:  # the hop itself failed (connection closed): nothing ran
            batch.fail(_not_committed(exc))
        self._settle(batch)

    def _run_inline(self, batch: _Batch) -> bool:
        """Run ``batch`` on the loop if the write lock is free now; False if it is not.

        The loop must never sit in ``busy_timeout``: inline, BEGIN IMMEDIATE does not
        wait, and a lock held by another process sends the batch to the thread, which
        waits for it there.
        """
        conn = raw(self._conn)
        if self._waits:
            conn.execute("PRAGMA busy_timeout = 0")
            self._waits = False
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                return False
            batch.fail(_not_committed(exc))
            return True
        batch.run(conn, begun=True)  # never raises, and nothing can interrupt it
        return True

    def _waiting(self, batch: _Batch) -> Callable[[sqlite3.Connection], None]:
        """``batch.run`` on the thread, with the connection set to wait for locks."""
        restore = not self._waits
        self._waits = True

        def job(conn: sqlite3.Connection) -> None:
            if restore:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            batch.run(conn)

        return job

    async def _settle_after_barrier(self, batch: _Batch) -> None:
        try:
            await on_thread(self._conn, _nothing)
        finally:
            if batch.outcomes is None:
                batch.fail(StoreError("the store closed before this write ran"))
            self._settle(batch)

    def _spawn(self, coro: Coroutine[Any, Any, object], batch: _Batch | None = None) -> None:
        """Run ``coro`` in a task we hold a reference to (the loop only keeps weak ones)."""
        task = self._loop.create_task(coro)
        self._tasks.add(task)

        def done(task: asyncio.Task[object]) -> None:
            self._tasks.discard(task)
            if batch is not None and task.cancelled() and not batch.sent:
                batch.fail(StoreError("write cancelled before it ran"))  # never started
                self._settle(batch)

        task.add_done_callback(done)

    def _settle(self, batch: _Batch) -> None:
        assert batch.outcomes is not None
        for (_, future), (ok, value) in zip(batch.items, batch.outcomes, strict=True):
            if future.done():  # the caller was cancelled mid-batch; the op still ran
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if batch.committed:
            self._on_commit()
        self._busy = False
        following = self._take_batch()
        if following is not None:
            self._spawn(self._send(following), following)
        else:
            self._idle.set()


def _nothing(conn: sqlite3.Connection) -> None:
    return None


def _not_committed(exc: BaseException) -> StoreError:
    error = StoreError(f"the transaction was rolled back and nothing was written: {exc}")
    error.__cause__ = exc
    return error
