"""``PostgresBlackboard``: the blackboard protocols on PostgreSQL, for workers on many hosts.

Every write is one transaction on a pooled connection that starts by reading the
database's clock (``now()``): leases, heartbeats and ``not_before`` are compared
with that clock only, so hosts with skewed clocks cannot steal live leases. Claims
use ``FOR UPDATE SKIP LOCKED``; event seqs come from a per-run counter updated in
the writing transaction; followers wake on ``LISTEN``/``NOTIFY``. A transaction
aborted by a deadlock or a serialization failure, or whose connection dropped
(the server restarted), is run again from the start with backoff.

This module holds the handle's lifecycle, its driver (``_write``, ``_read``,
``_statement``) and the run writes with one-statement paths; most methods are
written once for both backends (``store/facade*.py``, over ``POSTGRES``'s modules),
and PostgreSQL's own ways sit in ``store_tasks``, ``store_history`` and ``store_runs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Collection, Coroutine, Sequence
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import asyncpg
from asyncpg.connection import LoggedQuery

from orchestra._errors import StoreError, UserError
from orchestra._log import get_logger
from orchestra._types import JSON, Run, RunStatus
from orchestra.store.codec import Encoder
from orchestra.store.facade_approvals import ApprovalFacade
from orchestra.store.facade_board import BoardFacade
from orchestra.store.facade_entries import EntryMethods
from orchestra.store.postgres import entries as _entries
from orchestra.store.postgres import runs as _runs
from orchestra.store.postgres import schema
from orchestra.store.postgres.backend import POSTGRES
from orchestra.store.postgres.dsn import options, redact, scrub
from orchestra.store.postgres.retry import LOST as _LOST
from orchestra.store.postgres.retry import RERUN as _RERUN
from orchestra.store.postgres.store_history import HistoryMethods
from orchestra.store.postgres.store_runs import RunMethods
from orchestra.store.postgres.store_tasks import TaskMethods
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Blackboard, NewTask, StatementTrace

T = TypeVar("T")
Write = Callable[[Txn], Awaitable[T]]

_NOW = "SELECT extract(epoch FROM now())::float8"
_log = get_logger("orchestra.store")


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What a PostgreSQL store handle is doing now (for tests and monitoring; free to
    read). The same names as SQLite's ``StoreStats`` where the concept is the same."""

    followers: int
    """``follow`` iterators open on this handle (each woken by ``NOTIFY``, or polling)."""
    listening: bool
    """Whether the handle's ``LISTEN`` connection is open (followers are woken by
    ``NOTIFY``); False until a first follower, and behind a pooler without
    ``listen_dsn`` (followers poll)."""



async def _reset(conn: asyncpg.Connection) -> None:
    """What a pooled connection needs before its next use: only a rollback, if a
    cancelled operation left a transaction open. asyncpg's default reset sends
    ``UNLISTEN *; RESET ALL; CLOSE ALL; pg_advisory_unlock_all()`` on every release (one
    more round trip per store operation), but the store keeps no session state on
    pooled connections: followers LISTEN on their own connection, and the only
    advisory lock (migrations) is transaction-scoped."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")

class PostgresBlackboard(TaskMethods, HistoryMethods, RunMethods,
                         BoardFacade[Txn, asyncpg.Connection],
                         ApprovalFacade[Txn, asyncpg.Connection], EntryMethods):
    """The durable store of runs, in a PostgreSQL database (or schema).

    Open it with ``await PostgresBlackboard.open("postgresql://user:pass@host/db")``
    and close it with ``await store.close()``. Any number of processes on any hosts
    may open the same database.
    """

    _sql = POSTGRES

    def __init__(self, dsn: str, pool: asyncpg.Pool, encoder: Encoder, *,
                 reconnect_seconds: float, listen_dsn: str | None = None) -> None:
        """Use :meth:`open`."""
        self.url = redact(dsn)
        """Where the store is, without its password (safe to print)."""
        self._dsn = dsn
        self._pool = pool
        self._enc = encoder
        self._reconnect_seconds = reconnect_seconds
        self._closed = False
        self._signals: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncpg.Connection | None = None
        self._listen_dsn = listen_dsn
        self._listening = asyncio.Lock()

    @classmethod
    async def open(cls, dsn: str, *, max_payload_bytes: int = 1 << 20, verify_only: bool = False,
                   pool_size: int = 4, reconnect_seconds: float = 60.0,
                   trace: StatementTrace | None = None) -> PostgresBlackboard:
        """Connect (creating or migrating the schema if needed) to the store at ``dsn``.

        ``verify_only``: refuse to migrate (``SchemaVersionError`` if migrations are
        pending). ``pool_size``: most connections this handle holds.
        ``reconnect_seconds``: how long a call keeps retrying while the server is
        unreachable. ``?pooler=transaction`` in ``dsn``: behind PgBouncer's transaction
        mode (no named prepared statements; followers LISTEN on ``?listen_dsn=`` or poll).
        PostgreSQL commits durably: SQLite's options (``durability``...) are not taken.
        ``trace``: told each statement the pool's connections complete, as ``"pool"``'s
        (asyncpg's query logger, which does not see ``executemany``; see
        ``StatementTrace``; for tests and profiling).
        """
        encoder = Encoder(max_payload_bytes)
        if pool_size < 1:
            raise UserError(f"pool_size must be >= 1, got {pool_size}")
        where, opts = redact(dsn), options(dsn)
        try:
            pool = await asyncpg.create_pool(opts.dsn, min_size=pool_size, max_size=pool_size,
                                             statement_cache_size=opts.statement_cache_size,
                                             reset=_reset,
                                             init=None if trace is None else _logging(trace))
        except (asyncpg.PostgresError, *_LOST, ValueError) as exc:
            raise StoreError(f"{where}: cannot connect to PostgreSQL: "
                             f"{scrub(str(exc), dsn)}") from None
        try:
            async with pool.acquire() as conn:
                await schema.migrate(_raw(conn), where, verify_only=verify_only)
        except BaseException:
            await pool.close()
            raise
        return cls(dsn, pool, encoder, reconnect_seconds=reconnect_seconds,
                   listen_dsn=opts.listen_dsn)

    async def migrate_status(self) -> int:
        """The schema version of the database (after ``open`` migrated it)."""
        return await self._read(lambda c: schema.read_version(c, self.url))

    async def close(self) -> None:
        """Close the pool and the listener; followers stop."""
        if self._closed:
            return
        self._closed = True
        for signals in self._signals.values():
            for signal in signals:
                signal.set()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        await self._pool.close()

    def stats(self) -> StoreStats:
        """The handle's counters now (see :class:`StoreStats`)."""
        listener = self._listener
        return StoreStats(followers=sum(len(s) for s in self._signals.values()),
                          listening=listener is not None and not listener.is_closed())

    async def __aenter__(self) -> PostgresBlackboard:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------
    async def _write(self, op: Write[T]) -> T:
        """Run ``op(tx)`` in one transaction, again from the start if it was aborted
        by a deadlock or conflict, or its connection was lost before it committed."""
        return await self._call(partial(self._transaction, op), write=True)

    async def _statement(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run a write that is ONE statement, outside an explicit transaction: PostgreSQL
        commits it alone, atomically, in one round trip (no BEGIN, clock read, COMMIT).
        Retried as ``_write`` is."""
        return await self._call(op, write=True)

    async def _transaction(self, op: Write[T], conn: asyncpg.Connection) -> T:
        async with conn.transaction():
            return await op(Txn(conn, self._enc, await conn.fetchval(_NOW)))

    _entry_sql = _entries

    async def _entry_write(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        return await self._write(op)

    async def _read(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        return await self._call(op, write=False)

    async def _call(self, op: Callable[[asyncpg.Connection], Awaitable[T]], *,
                    write: bool) -> T:
        if self._closed:
            raise StoreError("the store is closed; open it again")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._reconnect_seconds
        delay = 0.05
        reruns = 0
        while True:
            try:
                async with self._pool.acquire() as conn:
                    try:
                        return await op(_raw(conn))
                    except asyncpg.DataError:  # an InterfaceError, but bad input: not lost
                        raise
                    except _LOST:  # cut mid-operation: never back into the pool (if
                        with contextlib.suppress(asyncpg.InterfaceError):  # not already out)
                            conn.terminate()
                        raise
            except asyncpg.DataError:
                raise
            except _RERUN:
                reruns += 1
                if not write or reruns > 20:
                    raise
                await asyncio.sleep(random.uniform(0, 0.01 * reruns))
            except _LOST as exc:
                if self._closed or loop.time() + delay > deadline:
                    raise StoreError(f"{self.url}: lost the connection to PostgreSQL and could "
                                     f"not reconnect: {scrub(str(exc), self._dsn)}") from None
                _log.warning("store connection lost; reconnecting", store=self.url,
                             error=scrub(str(exc), self._dsn), delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            except asyncpg.PostgresError as exc:
                raise StoreError(f"{self.url}: {scrub(str(exc), self._dsn)}") from exc

    # -- runs -----------------------------------------------------------------
    async def create_run(self, pipeline: str, input: JSON, *, run_id: str | None = None,
                         tasks: Sequence[NewTask] = (), settings: JSON = None,
                         version: str = "", manifest: JSON = None) -> Run:
        enc, tasks = self._enc, tuple(tasks)
        if all(t.key is None for t in tasks):  # one statement (a key is looked up first)
            return await self._statement(lambda c: _runs.create_run_at_once(
                c, enc, pipeline, input, run_id, tasks, settings, version, manifest))
        return await self._write(lambda tx: _runs.create_run(tx, pipeline, input, run_id,
                                                             tasks, settings, version,
                                                             manifest))

    async def set_run_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                             only_from: Collection[RunStatus] | None = None) -> Run:
        enc = self._enc
        allowed = None if only_from is None else frozenset(only_from)
        if status != "cancelled":  # one statement; a cancel also cancels the run's tasks
            return await self._statement(lambda c: _runs.set_run_status_at_once(
                c, enc, run_id, status, error, allowed))
        return await self._write(lambda tx: _runs.set_run_status(tx, run_id, status, error,
                                                                 allowed))


def _logging(trace: StatementTrace
             ) -> Callable[[asyncpg.Connection], Coroutine[Any, Any, None]]:
    """The pool's ``init``: each new connection tells ``trace`` its statements (asyncpg
    calls a query logger soon after each statement, and only if one is added)."""
    def logged(record: LoggedQuery) -> None:
        trace("pool", record.query)

    async def init(conn: asyncpg.Connection) -> None:
        conn.add_query_logger(logged)
    return init


def _raw(conn: Any) -> asyncpg.Connection:
    """A pooled connection (a proxy that forwards every call) typed as the connection."""
    return cast(asyncpg.Connection, conn)


if TYPE_CHECKING:  # mypy proves the implementation satisfies the protocol
    _implements: type[Blackboard] = PostgresBlackboard

