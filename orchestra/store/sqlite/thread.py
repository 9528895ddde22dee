"""A connection on a thread of its own: the store's writer and its reader each own one.

In the manner of aiosqlite's core: one thread, one ``queue.SimpleQueue``, and results
handed back to the event loop with ``loop.call_soon_threadsafe``. The connection is
made on its thread and only ever used there (``check_same_thread`` stays on), so no
SQL, no lock wait (``busy_timeout``) and no WAL checkpoint ever runs on the loop. The
loop side holds the queue and nothing else that changes.

Each time the thread wakes it drains everything queued (up to ``max_batch``): writes
run in ONE ``BEGIN IMMEDIATE`` ... ``COMMIT`` (group commit), each in its own
savepoint so a failing write rolls back alone; the whole batch is then settled on the
loop with one ``call_soon_threadsafe``. Under load this amortizes the commit (and, at
durability "full", the fsync) and the wake-ups over the batch; a lone write is a plain
transaction.

Cancellation: a job whose caller was cancelled before the thread took it is dropped
(nothing written); once taken it runs and commits or rolls back with its batch,
whatever happens to the caller (its result is then discarded).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from orchestra._errors import StoreError

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
OpResult = tuple[bool, Any]  # (ok, result or exception)
_Job = tuple[bool, Op, "asyncio.Future[Any]"]  # (is a write, op, its caller's future)
_STOP = None


def run_batch(conn: sqlite3.Connection, ops: list[Op]) -> list[OpResult]:
    """Run ``ops`` in one transaction; an op that raises is rolled back to its savepoint.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so a writer in another process
    waits in ``busy_timeout`` instead of deadlocking when both try to upgrade a read
    transaction. A failure of the transaction itself (``COMMIT`` fails, SQLite rolled
    everything back, a ``BaseException``) becomes every op's outcome.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        return [(False, not_committed(exc))] * len(ops)
    outcomes: list[OpResult] = []
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
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        return [(False, not_committed(exc))] * len(ops)
    return outcomes


class ConnectionThread:
    """One connection on one thread; ``call`` runs a job alone, ``write`` in a group commit.

    Open it with ``await ConnectionThread.start(connect)``: ``connect()`` makes the
    connection on the new thread (an error it raises is raised by ``start``).
    ``on_commit`` runs on the loop after each batch that committed a write.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, name: str,
                 max_batch: int, on_commit: Callable[[], None]) -> None:
        """Use :meth:`start`."""
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._loop = asyncio.get_running_loop()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._max_batch = max_batch
        self.on_commit = on_commit
        """Run on the loop after each batch that committed a write."""
        self._closing = False
        self._connect = connect
        self._opened: asyncio.Future[None] = self._loop.create_future()
        self._stopped: asyncio.Future[None] = self._loop.create_future()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @classmethod
    async def start(cls, connect: Callable[[], sqlite3.Connection], *, name: str,
                    max_batch: int = 256, on_commit: Callable[[], None] = lambda: None
                    ) -> ConnectionThread:
        """Start the thread and make its connection there."""
        self = cls(connect, name=name, max_batch=max_batch, on_commit=on_commit)
        self._thread.start()
        await self._opened
        return self

    def call(self, op: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Run ``op(conn)`` on the thread, alone (a read, or setup); its result or error."""
        return self._put(False, op)

    def write(self, op: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Run ``op(conn)`` inside the next group commit; settled once that commits."""
        return self._put(True, op)

    def _put(self, is_write: bool, op: Op) -> asyncio.Future[Any]:
        if self._closing:
            raise StoreError("the store is closed; open it again")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._jobs.put((is_write, op, future))
        return future

    async def close(self) -> None:
        """Run everything queued, then close the connection and end the thread."""
        if not self._closing:
            self._closing = True
            self._jobs.put(_STOP)
        await asyncio.shield(self._stopped)

    # -- on the thread ---------------------------------------------------------
    def _main(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:
            self._hand_back(_fail_future, self._opened, exc)
            self._hand_back(_finish, self._stopped)
            return
        self._hand_back(_finish, self._opened)
        try:
            self._serve(conn)
        finally:
            conn.close()
            self._hand_back(_finish, self._stopped)

    def _serve(self, conn: sqlite3.Connection) -> None:
        jobs = self._jobs
        while True:
            first = jobs.get()
            batch: list[_Job | None] = [first]
            while first is not _STOP and len(batch) < self._max_batch:
                try:
                    batch.append(jobs.get_nowait())
                except queue.Empty:
                    break
                if batch[-1] is _STOP:
                    break
            taken = [job for job in batch if job is not None and not job[2].cancelled()]
            settled, committed = _run_jobs(conn, taken)
            if settled:
                self._hand_back(self._settle, settled, committed)
            if batch[-1] is _STOP:
                return

    def _hand_back(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is left to hand results to
            pass

    # -- on the loop -------------------------------------------------------------
    def _settle(self, settled: list[tuple[asyncio.Future[Any], OpResult]],
                committed: bool) -> None:
        for future, (ok, value) in settled:
            if future.done():  # its caller was cancelled; the job still ran
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if committed:
            self.on_commit()


def _run_jobs(conn: sqlite3.Connection, jobs: list[_Job]
              ) -> tuple[list[tuple[asyncio.Future[Any], OpResult]], bool]:
    """Run a drained batch in FIFO order: each run of consecutive writes in one
    transaction, each other job alone; and whether any write committed."""
    settled: list[tuple[asyncio.Future[Any], OpResult]] = []
    committed = False
    i = 0
    while i < len(jobs):
        is_write, op, future = jobs[i]
        if not is_write:
            try:
                settled.append((future, (True, op(conn))))
            except Exception as exc:
                settled.append((future, (False, exc)))
            i += 1
            continue
        end = i
        while end < len(jobs) and jobs[end][0]:
            end += 1
        writes = jobs[i:end]
        outcomes = run_batch(conn, [job[1] for job in writes])
        committed = committed or any(ok for ok, _ in outcomes)
        settled.extend(zip([job[2] for job in writes], outcomes, strict=True))
        i = end
    return settled, committed


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail_future(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def not_committed(exc: BaseException) -> StoreError:
    error = StoreError(f"the transaction was rolled back and nothing was written: {exc}")
    error.__cause__ = exc
    return error
