"""``SQLiteBlackboard``: the blackboard protocol on one SQLite file (WAL).

Writes go through a group-commit writer (``writer``) on one aiosqlite connection;
reads go through a second aiosqlite connection, which WAL lets run while the writer
commits. Each operation is an async function of one concern (``tasks``, ``journal``,
``reads``, ...) whose statements aiosqlite runs on its connection's thread: no SQL runs
on the loop. Reads run one at a time, each whole, as they did on a thread of their own.

This module holds the store's lifecycle (open, close), its plumbing (the driver the
shared facade sends its ops through: ``_write``, ``_read``) and the run writes with
SQLite's fast paths. Most methods are written once for both backends
(``store/facade*.py``, over ``SQLITE``'s modules); the halves with SQLite's own ways
are ``store_tasks`` (claims and a step's end, as one row when it can), ``store_history``
(batched history reads, ``follow``) and ``store_runs`` (vacuum).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from orchestra._errors import StoreAccessError, StoreError, UserError
from orchestra._types import JSON, Durability, Run, RunStatus
from orchestra.store.codec import Encoder
from orchestra.store.facade_approvals import ApprovalFacade
from orchestra.store.facade_board import BoardFacade
from orchestra.store.facade_entries import EntryMethods
from orchestra.store.protocol import Blackboard, NewTask, StatementTrace
from orchestra.store.sqlite import entries as _entries
from orchestra.store.sqlite import reads as _reads
from orchestra.store.sqlite import runs as _runs
from orchestra.store.sqlite import schema
from orchestra.store.sqlite.backend import SQLITE
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.left_open import LEFT_OPEN
from orchestra.store.sqlite.message_reads import MessageReads
from orchestra.store.sqlite.open import check_and_migrate, open_async, open_read_only
from orchestra.store.sqlite.store_history import HistoryMethods
from orchestra.store.sqlite.store_runs import RunMethods
from orchestra.store.sqlite.store_tasks import TaskMethods
from orchestra.store.sqlite.txn import Conn, Txn
from orchestra.store.sqlite.writer import LOCK_TRY, RowOf, Writer, max_variables

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What a SQLite store is doing now (for tests and monitoring; free to read)."""

    followers: int
    """``follow`` iterators open on this store (each woken by the store's commits)."""
    queued_writes: int
    """Writes waiting for the writer's next group commit."""


class SQLiteBlackboard(TaskMethods, HistoryMethods, RunMethods, BoardFacade[Txn, Conn],
                       ApprovalFacade[Txn, Conn], EntryMethods):
    """The durable store of runs, in one SQLite file.

    Open it with ``await SQLiteBlackboard.open(path)`` and close it with ``await
    store.close()`` (or ``async with await SQLiteBlackboard.open(path) as store``).
    Several processes may open the same file; each holds one writer and one reader
    connection.
    """

    _sql = SQLITE

    def __init__(self, path: str, writer: Writer, reader: Conn,
                 encoder: Encoder, *, busy_timeout: float = 30.0,
                 read_only: bool = False) -> None:
        """Use :meth:`open`; this only wires already-open connections together."""
        self.path = path
        self._busy_timeout = busy_timeout
        self._writer = writer
        self._reader = reader
        self._reading = asyncio.Lock()
        self._enc = encoder
        self._closed = False
        self._read_only = read_only
        self._followers = 0
        self._committed = asyncio.Event()
        self._known = Known()
        self._messages = MessageReads(self._read)
        writer.on_commit = self._notify
        # stopped at exit if never closed: aiosqlite's threads would keep the program alive
        LEFT_OPEN.opened(path, (writer.conn.db, reader.db))

    @classmethod
    async def open(cls, path: str | os.PathLike[str], *, durability: Durability = "normal",
                   max_payload_bytes: int = 1 << 20, verify_only: bool = False,
                   busy_timeout: float = 30.0, max_batch: int = 256,
                   read_only: bool = False, trace: StatementTrace | None = None
                   ) -> SQLiteBlackboard:
        """Open (creating or migrating if needed) the store at ``path``.

        ``durability``: ``"normal"`` (``synchronous=NORMAL``) keeps every committed
        write through a killed process and is the default; ``"full"``
        (``synchronous=FULL``) also fsyncs each commit, so writes survive a power cut,
        at the cost of one fsync per (group) commit.
        ``max_payload_bytes``: any payload or text over this encoded size is refused
        with ``PayloadTooLargeError``. ``verify_only``: refuse to migrate (raise
        ``SchemaVersionError`` if migrations are pending). ``busy_timeout``: seconds
        to wait for another process's write lock. ``max_batch``: most writes per group
        commit (1 = one commit per write; for benchmarks). ``read_only``: open an existing
        store without writing to it (a read-only file or directory works; every write
        raises ``StoreAccessError``). ``trace``: told each statement the store's two
        connections send (``"writer"``, ``"reader"``), from their pragmas on (see
        ``StatementTrace``; for tests and profiling).

        A file that is not SQLite, is corrupt, is another program's database or comes
        from a newer orchestra is refused before anything is written to it.
        """
        path = os.fspath(path)
        if path == ":memory:" or path.startswith("file:"):
            raise UserError("the blackboard needs a file path (':memory:' and URIs are not "
                            "supported: its reader and writer would see different databases)")
        if durability not in ("normal", "full"):
            raise UserError(f"durability must be 'normal' or 'full', got {durability!r}")
        if max_batch < 1 or busy_timeout < 0:
            raise UserError(f"max_batch must be >= 1 and busy_timeout >= 0, got {max_batch} "
                            f"and {busy_timeout}")
        encoder = Encoder(max_payload_bytes)
        # the file checks read a few bytes; cheaper inline than a thread-pool start-up
        schema.check_file(path, verify_only=verify_only, read_only=read_only)
        if read_only:
            return await cls._open_read_only(path, encoder, busy_timeout=busy_timeout,
                                             trace=trace)
        variables = await asyncio.to_thread(_check_and_migrate, path, durability=durability,
                                            busy_timeout=busy_timeout, verify_only=verify_only)
        conn = await open_async(path, path, durability=durability,
                                busy_timeout=busy_timeout, writer=True, trace=trace,
                                name="writer")
        try_for = min(busy_timeout, LOCK_TRY)  # SQLite's own wait per try for the lock
        try:
            await conn.execute(f"PRAGMA busy_timeout = {round(try_for * 1000)}")
        except BaseException:
            await conn.db.close()
            raise
        writer = Writer(conn, max_batch=max_batch, lock_wait=busy_timeout, variables=variables)
        try:
            reader = await open_async(path, path, durability=durability,
                                      busy_timeout=busy_timeout, writer=False, trace=trace,
                                      name="reader")
        except BaseException:
            await writer.close()
            raise
        return cls(path, writer, reader, encoder, busy_timeout=busy_timeout)

    @classmethod
    async def _open_read_only(cls, path: str, encoder: Encoder, *, busy_timeout: float,
                              trace: StatementTrace | None) -> SQLiteBlackboard:
        """Two ``mode=ro`` connections (see ``read_only_target``); writes are refused."""
        writer = Writer(await open_read_only(path, busy_timeout, trace=trace, name="writer"),
                        max_batch=1)
        try:
            reader = await open_read_only(path, busy_timeout, trace=trace, name="reader")
        except BaseException:
            await writer.close()
            raise
        return cls(path, writer, reader, encoder, busy_timeout=busy_timeout, read_only=True)

    async def close(self) -> None:
        """Commit queued writes, wake followers (they stop) and close both connections."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._writer.close()
        finally:
            self._committed.set()
            try:
                await self._reader.db.close()
            finally:
                LEFT_OPEN.closed((self._writer.conn.db, self._reader.db))

    def stats(self) -> StoreStats:
        """The store's counters now (see :class:`StoreStats`)."""
        return StoreStats(followers=self._followers, queued_writes=self._writer.queued)

    async def __aenter__(self) -> SQLiteBlackboard:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------
    async def _write(self, op: Callable[[Txn], Awaitable[T]], *, one_statement: bool = False,
                     row: RowOf | None = None) -> T:
        """Run ``op`` as one write: on the writer's connection, stamped when it runs
        (``one_statement``: see ``writer.run_batch``; ``row``: the write as one row, if
        it can be, see ``writer.run_rows``)."""
        if self._read_only:
            raise StoreAccessError(f"{self.path} was opened read-only; this change needs a "
                                   "store that can be written")
        enc = self._enc
        return await self._writer.write(
            lambda c: op(Txn(c, enc, time.time())), one_statement=one_statement,
            row=None if row is None else lambda: row(enc, time.time()))

    _entry_sql = _entries

    async def _entry_write(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        return await self._write(op)

    async def _read(self, op: Callable[[Conn], Awaitable[T]]) -> T:
        if self._closed:
            raise StoreError("the store is closed; open it again to read")
        async with self._reading:  # one read at a time, whole (a snapshot's BEGIN..COMMIT)
            return await op(self._reader)

    def _notify(self) -> None:
        if self._followers:
            self._committed.set()
            self._committed = asyncio.Event()

    # -- runs -----------------------------------------------------------------
    async def create_run(self, pipeline: str, input: JSON, *, run_id: str | None = None,
                         tasks: Sequence[NewTask] = (), settings: JSON = None,
                         version: str = "", manifest: JSON = None) -> Run:
        """``settings``: what the caller chose for the run (e.g. model specs), recorded in
        its ``run.created`` event, apart from ``input`` (the pipeline's own); ``version``
        (with its ``manifest``, kept in that event): the code it runs on."""
        tasks = tuple(tasks)
        run = await self._write(lambda tx: _runs.create_run(tx, pipeline, input, run_id,
                                                                 tasks, settings, version,
                                                                 manifest))
        self._known.created(run.id)
        return run

    async def set_run_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                             only_from: Collection[RunStatus] | None = None) -> Run:
        allowed = None if only_from is None else frozenset(only_from)
        changed: Run | None = await self._write(
            lambda tx: _runs.set_run_status(tx, run_id, status, error, allowed),
            row=lambda enc, now: _runs.status_row(run_id, status, error, allowed, now))
        # a change made as a row returns nothing: the run as read right after it
        return changed if changed is not None else await self._read(
            lambda c: _reads.get_run(c, run_id))


def _check_and_migrate(path: str, *, durability: Durability, busy_timeout: float,
                       verify_only: bool) -> int:
    """``check_and_migrate``, then how many ``?`` a statement may bind (both blocking)."""
    check_and_migrate(path, durability=durability, busy_timeout=busy_timeout,
                      verify_only=verify_only)
    return max_variables()


if TYPE_CHECKING:  # mypy proves the implementation satisfies the protocol
    _implements: type[Blackboard] = SQLiteBlackboard
