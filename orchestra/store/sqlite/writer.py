"""The store's group-commit writer, on aiosqlite's public API.

Writes queue here; a task of the writer's drains the queue (up to ``max_batch`` at a
time) into ONE transaction: ``BEGIN IMMEDIATE``, each write's statements (a step's
usual end is one ``INSERT`` into ``step_records``), ``COMMIT``. Writes queued while a
batch commits form the next batch: under load the commit (and, at durability "full",
the fsync) is shared by every write in it; a lone write is a plain transaction, or,
when it is one statement (a step's usual end), that statement alone. Every statement
runs on aiosqlite's thread, never on the loop, and each one is a hop there and back
(~120 µs of wall time and a thread wake-up): so a batch's writes first run without
savepoints (nearly every batch succeeds whole). Only when one of them fails is the
batch rolled back and run again with a savepoint around each write, so that the
failing write rolls back alone and the others commit; their results are those of the
second run. (A write is a function of the connection: it reads what it needs inside
its transaction, so running it again is safe.)

A write that is one row of a table (a step's usual end: one ``step_records`` row, see
``step``) says so with a :class:`Row`, made as the write is queued:
the batch's rows then go to SQLite as ONE multi-row ``INSERT``, its own transaction
(atomic: a row the table's trigger refuses undoes the whole statement). That is one
hop for all of them, and the write lock is held only while SQLite runs the statement,
never across the event loop's turns (a busy process takes milliseconds to come back
to a hop, and another process waits for the lock all that time). When the statement
fails, its halves are tried, down to the rows refused alone, which run again the
general way, where each one's own outcome is found.
Writes of one batch are concurrent (each caller awaits its write before it writes
again), so running the rows first is one valid order of them.

Cancellation: a write whose caller was cancelled before its batch began is dropped
(nothing written); once begun it commits or rolls back with its batch, whatever
happens to the caller (its result is then discarded).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import closing
from functools import cache
from typing import Any, NamedTuple, TypeVar

from orchestra._errors import StoreError
from orchestra.store.codec import Encoder
from orchestra.store.sqlite.txn import Conn, NeedsTransaction

T = TypeVar("T")
Op = Callable[[Conn], Awaitable[Any]]
OpResult = tuple[bool, Any]  # (ok, result or exception)


LOCK_TRY = 0.002
"""Seconds SQLite's busy handler waits for the write lock per try (the writer
connection's ``busy_timeout``); :func:`begin` tries again until the store's own."""


class Row(NamedTuple):
    """A write that is one row of ``insert`` (the statement up to ``VALUES``)."""

    insert: str
    params: Sequence[Any]
    keys: tuple[str, ...]
    """What the row's change depends on that another row of the same batch may change
    (its task, its agent): one row per key and statement, the others run the general way."""
    done: Callable[[], Any]
    """Run once the row is committed; returns the write's result."""
    refused: Callable[[Exception], None] = lambda exc: None
    """Run when the row's statement failed with this row alone in it: ``exc`` is the row's
    own error (before the write runs the general way, which need not try it again)."""
    tail: str = ""
    """What follows the rows in the statement (an upsert's ``ON CONFLICT`` clause)."""


Prepare = Callable[[], Row | None]
"""Decides a write's row as it is queued, or None: the write runs as its op."""
RowOf = Callable[[Encoder, float], Row | None]
"""A store's :data:`Prepare`, given the store's encoder and the write's clock reading."""
Job = tuple[Op, "asyncio.Future[Any]", bool, Row | None]  # op, its future, one_statement, row


def lock_taken(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a statement because another connection holds the lock
    (``SQLITE_BUSY`` and its extended codes)."""
    return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


async def begin(conn: Conn, wait: float) -> None:
    """``BEGIN IMMEDIATE``, tried again while another connection holds the write lock,
    for ``wait`` seconds in all.

    SQLite's busy handler sleeps longer the longer it waits, up to 100 ms between
    tries, while busy writers in other processes take the lock back within a
    millisecond of freeing it: a process could wait for seconds, its leases lapsing.
    Tries of :data:`LOCK_TRY` each take the lock about a millisecond after it frees."""
    await locked(conn, "BEGIN IMMEDIATE", (), wait)


async def locked(conn: Conn, sql: str, params: Sequence[Any], wait: float) -> None:
    """Execute ``sql``, tried again while another connection holds the write lock, for
    ``wait`` seconds in all (see :func:`begin`)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            await conn.execute(sql, params)
            return
        except sqlite3.OperationalError as exc:
            if not lock_taken(exc):
                raise
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"another connection held the store's write lock past busy_timeout "
                    f"({exc}); open the store with a larger busy_timeout if its writers "
                    "hold it that long") from exc


async def run_batch(conn: Conn, ops: list[Op], lock_wait: float = 0.0, *,
                    one_statement: bool = False) -> list[OpResult]:
    """Run ``ops`` in one transaction; an op that raises is rolled back alone.

    ``BEGIN IMMEDIATE`` takes the write lock up front (waiting up to ``lock_wait``
    seconds past the connection's own ``busy_timeout``, see :func:`begin`), so a writer
    in another process waits instead of deadlocking when both try to upgrade a read
    transaction. A failure of the transaction itself (``COMMIT`` fails, SQLite rolled
    everything back, a ``BaseException``) becomes every op's outcome.

    ``one_statement``: a lone op that changes the file with at most one statement (which
    checks whatever the op read before it) runs without ``BEGIN``/``COMMIT``: SQLite
    makes that statement its own transaction, atomic and durable like any commit, and
    takes the write lock as the statement starts. An op that finds it must do more
    raises ``NeedsTransaction`` before writing and runs again in a transaction; so does
    one whose statement found the lock taken (it waited only the connection's short
    ``busy_timeout``; :func:`begin` waits the store's).
    """
    if one_statement and len(ops) == 1:
        try:
            return [(True, await ops[0](conn))]
        except NeedsTransaction:
            pass  # nothing was written: in a transaction, below
        except sqlite3.OperationalError as exc:
            if not lock_taken(exc):
                return [(False, exc)]
            # another connection holds the write lock (past this connection's short
            # busy_timeout): nothing was written; below, ``begin`` waits for the lock
        except Exception as exc:
            return [(False, exc)]
        except BaseException as exc:  # the statement may have run to its end all the same
            return [(False, interrupted(exc))]
    try:
        await begin(conn, lock_wait)
    except Exception as exc:
        return [(False, not_committed(exc))] * len(ops)
    try:
        try:
            outcomes: list[OpResult] = [(True, await op(conn)) for op in ops]
        except Exception as exc:
            if len(ops) > 1 and not conn.in_transaction:
                raise  # SQLite rolled back everything itself (disk full, I/O error)
            if conn.in_transaction:
                await conn.execute("ROLLBACK")  # with the failing op's partial writes
            if len(ops) == 1:  # the op's failure is the batch's
                return [(False, exc)]
            await begin(conn, lock_wait)  # again, each op in a savepoint
            outcomes = await _run_each(conn, ops)
        await conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        return [(False, not_committed(exc))] * len(ops)
    return outcomes


async def run_rows(conn: Conn, rows: Sequence[Row | None], lock_wait: float,
                   variables: int = 999) -> list[OpResult | None]:
    """Run the rows as multi-row ``INSERT`` statements, each its own transaction (one per
    ``insert``, more past ``variables``, SQLite's limit of bound variables: see
    :func:`max_variables`). Per write, its outcome, or None when it must run the general
    way: it has no row, one of its keys belongs to an earlier row, or SQLite refused its
    row. A statement that fails is split in halves, tried again, down to the refused
    rows alone (told why, ``Row.refused``): a few more statements, and the write lock
    still held only inside SQLite."""
    outcomes: list[OpResult | None] = [None] * len(rows)
    groups: dict[tuple[str, str], list[tuple[int, Row]]] = {}
    keys: set[str] = set()
    for i, row in enumerate(rows):
        if row is None or not keys.isdisjoint(row.keys):
            continue
        keys.update(row.keys)
        groups.setdefault((row.insert, row.tail), []).append((i, row))
    for members in groups.values():
        per = max(1, variables // len(members[0][1].params))
        for start in range(0, len(members), per):
            await _insert(conn, members[start:start + per], outcomes, lock_wait)
    return outcomes


async def _insert(conn: Conn, chunk: list[tuple[int, Row]], outcomes: list[OpResult | None],
                  lock_wait: float) -> None:
    first = chunk[0][1]
    params = [value for _, row in chunk for value in row.params]
    sql = _statement(first.insert, len(first.params), len(chunk), first.tail)
    try:
        await locked(conn, sql, params, lock_wait)
    except StoreError as exc:  # the lock stayed taken: as when ``begin`` fails
        error: Exception = not_committed(exc)
    except Exception as exc:
        if conn.in_transaction:  # SQLite ends a failed statement's own; never ours
            await conn.execute("ROLLBACK")
        if len(chunk) == 1:
            chunk[0][1].refused(exc)
            return
        half = len(chunk) // 2
        await _insert(conn, chunk[:half], outcomes, lock_wait)
        await _insert(conn, chunk[half:], outcomes, lock_wait)
        return
    except BaseException as exc:  # the statement may have run to its end all the same
        error = interrupted(exc)
    else:
        for i, row in chunk:
            outcomes[i] = (True, row.done())
        return
    for i, _ in chunk:
        outcomes[i] = (False, error)


@cache
def _statement(insert: str, width: int, count: int, tail: str) -> str:
    row = "(" + ", ".join("?" * width) + ")"
    return f"{insert} {', '.join([row] * count)}" + (f" {tail}" if tail else "")


@cache
def max_variables() -> int:
    """How many ``?`` one statement may bind in the SQLite this Python links (blocking:
    call it off the loop once, then it is remembered)."""
    with closing(sqlite3.connect(":memory:")) as probe:
        return probe.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)


async def _run_each(conn: Conn, ops: list[Op]) -> list[OpResult]:
    """Run each op in a savepoint of its own: a failing op is rolled back alone."""
    outcomes: list[OpResult] = []
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
    return outcomes


class Writer:
    """Group commits on one aiosqlite connection; ``write`` is settled once its batch commits.

    ``lock_wait``: seconds to go on trying for the write lock once the connection's own
    ``busy_timeout`` ran out (see :func:`begin`). ``on_commit`` runs after each batch
    that committed a write.
    """

    def __init__(self, conn: Conn, *, max_batch: int = 256, lock_wait: float = 0.0,
                 variables: int = 999, on_commit: Callable[[], None] = lambda: None) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.conn = conn
        self._lock_wait = lock_wait
        self._variables = variables
        self.on_commit = on_commit
        """Run after each batch that committed a write."""
        self._max_batch = max_batch
        self._jobs: deque[Job] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(self._drain(),
                                                            name="orchestra-store-writer")

    @property
    def queued(self) -> int:
        """Writes waiting for a batch (not yet taken by the writer's task)."""
        return len(self._jobs)

    def write(self, op: Callable[[Conn], Awaitable[T]], *, one_statement: bool = False,
              row: Prepare | None = None) -> asyncio.Future[T]:
        """Run ``op(conn)`` inside the next group commit (``one_statement``: see
        :func:`run_batch`), or, when ``row`` gives one, insert that row with the batch's
        others (see :func:`run_rows`). The row is made now, on the caller's turn (its error,
        if any, is the write's at once), not by the writer's task between batches."""
        if self._closing:
            raise StoreError("the store is closed; open it again")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        made: Row | None = None
        if row is not None:
            try:
                made = row()
            except Exception as exc:  # the write's own error, as its op would raise it
                future.set_exception(exc)
                return future
        self._jobs.append((op, future, one_statement, made))
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
            rest = await self._rows(taken)
            if not rest:
                continue
            try:
                outcomes = await run_batch(self.conn, [job[0] for job in rest], self._lock_wait,
                                           one_statement=rest[0][2])
            except Exception as exc:  # a fault of the writer itself: fail the batch, go on
                outcomes = [(False, await self._broken(exc))] * len(rest)
            self._settle(rest, outcomes)

    async def _rows(self, taken: list[Job]) -> list[Job]:
        """Insert the rows of the batch's writes that have one; the writes left to run."""
        rows = [job[3] for job in taken]
        outcomes: list[OpResult | None] = [None] * len(taken)
        if any(row is not None for row in rows):
            try:
                outcomes = await run_rows(self.conn, rows, self._lock_wait, self._variables)
            except Exception as exc:  # a fault of the writer itself: fail them, go on
                error = await self._broken(exc)
                outcomes = [None if row is None else (False, error) for row in rows]
        done = [(job, outcome) for job, outcome in zip(taken, outcomes, strict=True)
                if outcome is not None]
        if done:
            self._settle([job for job, _ in done], [outcome for _, outcome in done])
        return [job for job, outcome in zip(taken, outcomes, strict=True) if outcome is None]

    def _settle(self, jobs: list[Job], outcomes: list[OpResult]) -> None:
        for (_, future, _, _), (ok, value) in zip(jobs, outcomes, strict=True):
            if future.done():  # its caller was cancelled; the write still ran
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if any(ok for ok, _ in outcomes):
            self.on_commit()

    async def _broken(self, exc: Exception) -> StoreError:
        """The error a batch's writes get when running the batch itself failed (before,
        the writer's task died and every later write waited for ever)."""
        if self.conn.in_transaction:
            try:
                await self.conn.execute("ROLLBACK")
            except Exception as rollback:  # the connection is gone: say so below
                exc = rollback
        return not_committed(exc)


def interrupted(exc: BaseException) -> StoreError:
    error = StoreError(f"the write was interrupted while its statement ran ({exc!r}); "
                       "it may or may not have been committed")
    error.__cause__ = exc
    return error


def not_committed(exc: BaseException) -> StoreError:
    error = StoreError(f"the transaction was rolled back and nothing was written: {exc}")
    error.__cause__ = exc
    return error
