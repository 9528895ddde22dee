"""``PostgresBlackboard``: the blackboard protocols on PostgreSQL, for workers on many hosts.

Every write is one transaction on a pooled connection that starts by reading the
database's clock (``now()``): leases, heartbeats and ``not_before`` are compared
with that clock only, so hosts with skewed clocks cannot steal live leases. Claims
use ``FOR UPDATE SKIP LOCKED``; event seqs come from a per-run counter updated in
the writing transaction; followers wake on ``LISTEN``/``NOTIFY``. A transaction
aborted by a deadlock or a serialization failure, or whose connection dropped
(the server restarted), is run again from the start with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import asyncpg

from orchestra._errors import StoreError, UserError
from orchestra._log import get_logger
from orchestra._store._codec import Encoder
from orchestra._store._retention_txn import batches
from orchestra._store.postgres import _fork, _journal, _reads, _runs, _tasks, schema
from orchestra._store.postgres._dsn import redact, scrub
from orchestra._store.postgres._events import append_event
from orchestra._store.postgres._methods import BoardMethods
from orchestra._store.protocol import (
    Blackboard,
    ClaimSpec,
    Lease,
    NewTask,
    Pruned,
    StepResult,
    Writes,
)
from orchestra._types import (
    JSON,
    AgentInfo,
    CompactionRecord,
    Event,
    Message,
    Run,
    RunStatus,
    Step,
    StepKind,
    Task,
)

T = TypeVar("T")
Write = Callable[[asyncpg.Connection, float], Awaitable[T]]
_NOW = "SELECT extract(epoch FROM now())::float8"
_FOLLOW_PAGE = 500
_CHANNEL = "orchestra_events"
_RERUN = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
          asyncpg.UniqueViolationError)
_LOST = (asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
         asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError, ConnectionError, OSError)
_log = get_logger("orchestra.store")


class PostgresBlackboard(BoardMethods):
    """The durable store of runs, in a PostgreSQL database (or schema).

    Open it with ``await PostgresBlackboard.open("postgresql://user:pass@host/db")``
    and close it with ``await store.close()``. Any number of processes on any hosts
    may open the same database.
    """

    def __init__(self, dsn: str, pool: asyncpg.Pool, encoder: Encoder, *,
                 reconnect_seconds: float) -> None:
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
        self._listening = asyncio.Lock()

    @classmethod
    async def open(cls, dsn: str, *, max_payload_bytes: int = 1 << 20, verify_only: bool = False,
                   pool_size: int = 4, reconnect_seconds: float = 60.0,
                   **_ignored: Any) -> PostgresBlackboard:
        """Connect (creating or migrating the schema if needed) to the store at ``dsn``.

        ``verify_only``: refuse to migrate (``SchemaVersionError`` if migrations are
        pending). ``pool_size``: most connections this handle holds.
        ``reconnect_seconds``: how long a call keeps retrying while the server is
        unreachable. SQLite-only options (``durability``, ``busy_timeout``...) are
        accepted and ignored: PostgreSQL commits durably.
        """
        encoder = Encoder(max_payload_bytes)
        if pool_size < 1:
            raise UserError(f"pool_size must be >= 1, got {pool_size}")
        where = redact(dsn)
        try:
            pool = await asyncpg.create_pool(dsn, min_size=pool_size, max_size=pool_size,
                                             statement_cache_size=256)
        except (asyncpg.PostgresError, *_LOST, ValueError) as exc:
            raise StoreError(f"{where}: cannot connect to PostgreSQL: "
                             f"{scrub(str(exc), dsn)}") from None
        try:
            async with pool.acquire() as conn:
                await schema.migrate(_raw(conn), where, verify_only=verify_only)
        except BaseException:
            await pool.close()
            raise
        return cls(dsn, pool, encoder, reconnect_seconds=reconnect_seconds)

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

    async def __aenter__(self) -> PostgresBlackboard:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------
    async def _submit(self, op: Write[T]) -> T:
        """Run ``op(conn, now)`` in one transaction, again from the start if it was aborted
        by a deadlock or conflict, or its connection was lost before it committed."""
        return await self._call(partial(self._transaction, op), write=True)

    async def _transaction(self, op: Write[T], conn: asyncpg.Connection) -> T:
        async with conn.transaction():
            now = await conn.fetchval(_NOW)
            return await op(conn, now)

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
                    return await op(_raw(conn))
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
                         tasks: Sequence[NewTask] = (), settings: JSON = None) -> Run:
        enc, tasks = self._enc, tuple(tasks)
        return await self._submit(lambda c, now: _runs.create_run(c, enc, pipeline, input,
                                                                  run_id, tasks, now, settings))

    async def get_run(self, run_id: str) -> Run:
        return await self._read(lambda c: _reads.get_run(c, run_id))

    async def list_runs(self, *, active_only: bool = False, limit: int = 100,
                        status: RunStatus | None = None, pipeline: str | None = None,
                        before: tuple[float, str] | None = None) -> list[Run]:
        """Runs newest first; ``before`` = ``(created_at, id)`` of the previous page's last run."""
        return await self._read(lambda c: _reads.list_runs(c, active_only, limit, status,
                                                           pipeline, before))

    async def set_run_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                             only_from: Collection[RunStatus] | None = None) -> Run:
        enc = self._enc
        allowed = None if only_from is None else frozenset(only_from)
        return await self._submit(lambda c, now: _runs.set_run_status(
            c, enc, run_id, status, error, allowed, now))

    async def fork_run(self, run_id: str, at_seq: int, *, fork_id: str | None = None,
                       input: JSON = None) -> Run:
        """A new run holding ``run_id``'s state right after event ``at_seq`` (see SQLite's)."""
        enc = self._enc
        return await self._submit(lambda c, now: _fork.fork_run(c, enc, run_id, at_seq, fork_id,
                                                                input, now))

    async def delete_run(self, run_id: str) -> None:
        """Delete a finished run and everything it owns; a live run must be cancelled first."""
        await self._submit(lambda c, now: _runs.delete_runs(c, [run_id]))

    async def prune_runs(self, *, finished_before: float | None = None,
                         keep: int | None = None, vacuum: bool = False,
                         batch_rows: int = 20_000) -> Pruned:
        """Delete finished runs completely, each transaction about ``batch_rows`` rows at
        most; ``vacuum`` then runs ``VACUUM`` (space is reused; the size change is reported)."""
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
        runs = await self._read(lambda c: _runs.candidates(c, finished_before, keep))
        rows = 0
        for group in batches(runs, batch_rows):
            if len(group) == 1:  # possibly larger than a batch: trim it in bounded writes
                while await self._submit(partial(_drop_some, run_id=group[0],
                                                 batch_rows=batch_rows)):
                    pass
            rows += await self._submit(partial(_drop, run_ids=group))
        freed = await self._read(_vacuum) if vacuum else 0
        return Pruned(runs=[run_id for run_id, _ in runs], rows=rows, freed_bytes=freed)

    # -- tasks and leases -----------------------------------------------------
    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
        enc, tasks = self._enc, tuple(tasks)

        async def op(c: asyncpg.Connection, now: float) -> list[Task]:
            await _reads.require_run(c, run_id)
            return await _tasks.insert_tasks(c, enc, run_id, tasks, now)

        return await self._submit(op)

    async def get_task(self, task_id: str) -> Task:
        return await self._read(lambda c: _reads.get_task(c, task_id))

    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]:
        return await self._read(lambda c: _reads.list_tasks(c, run_id, status, role))

    async def task_counts(self, run_id: str) -> dict[str, int]:
        return await self._read(lambda c: _reads.task_counts(c, run_id))

    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None,
                         lease_seconds: float = 30.0) -> Task | None:
        enc, roles = self._enc, None if roles is None else tuple(roles)
        tasks = await self._submit(lambda c, now: _tasks.claim(
            c, enc, owner, now, run_id=run_id, roles=roles, lease_seconds=lease_seconds))
        return tasks[0] if tasks else None

    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None, lease_seconds: float = 30.0,
                          prestart: frozenset[str] = frozenset()) -> list[Task]:
        enc, capacity = self._enc, dict(capacity)
        return await self._submit(lambda c, now: _tasks.claim_many(
            c, enc, owner, now, run_id=run_id, capacity=capacity, limit=limit,
            lease_seconds=lease_seconds, prestart=prestart))

    async def retry_failed_tasks(self, run_id: str) -> list[Task]:
        enc = self._enc
        return await self._submit(lambda c, now: _tasks.retry_failed(c, enc, run_id, now))

    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool:
        return await self._submit(lambda c, now: _tasks.heartbeat(c, task_id, lease, now,
                                                                  lease_seconds))

    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]:
        enc, owners = self._enc, tuple(owners)
        return await self._submit(lambda c, now: _tasks.release_leases(
            c, enc, now, run_id=run_id, owners=owners))

    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None) -> Task:
        enc = self._enc
        return await self._submit(lambda c, now: _journal.complete_task(
            c, enc, task_id, lease, result, agent_id, writes, step, now))

    async def complete_task_and_claim(self, task_id: str, lease: Lease, result: JSON, *,
                                      agent_id: str, claim: ClaimSpec,
                                      writes: Writes | None = None,
                                      step: StepResult | None = None
                                      ) -> tuple[Task, list[Task]]:
        """``complete_task`` then ``claim_tasks`` in one transaction (one round trip's worth
        of locking): the tasks this one routes are newer, so oldest-first still holds."""
        enc = self._enc

        async def op(c: asyncpg.Connection, now: float) -> tuple[Task, list[Task]]:
            done = await _journal.complete_task(c, enc, task_id, lease, result, agent_id,
                                                writes, step, now)
            nxt = await _tasks.claim_many(c, enc, claim.owner, now, run_id=claim.run_id,
                                          capacity=dict(claim.capacity), limit=claim.limit,
                                          lease_seconds=claim.lease_seconds,
                                          prestart=claim.prestart)
            return done, nxt

        return await self._submit(op)

    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task:
        enc = self._enc
        return await self._submit(lambda c, now: _journal.fail_task(
            c, enc, task_id, lease, error, retry_at, agent_id, writes, now))

    # -- step journal ---------------------------------------------------------
    async def get_steps(self, task_id: str, retry: int) -> list[Step]:
        return await self._read(lambda c: _reads.get_steps(c, task_id, retry))

    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None:
        enc = self._enc
        await self._submit(lambda c, now: _journal.start_step(
            c, enc, task_id, retry, step, kind, name, input_digest, lease, now))

    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None:
        enc = self._enc
        await self._submit(lambda c, now: _journal.complete_step(c, enc, result, lease,
                                                                 agent_id, writes, now))

    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None:
        await self._submit(lambda c, now: _tasks.serve_run(c, run_id, owner, now,
                                                           lease_seconds))

    async def served_until(self, run_ids: Sequence[str]) -> dict[str, float | None]:
        ids = tuple(run_ids)
        return await self._read(lambda c: _tasks.served_until(c, ids))

    async def step_counts(self, run_id: str) -> dict[str, int]:
        return await self._read(lambda c: _reads.step_counts(c, run_id))

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        return await self._read(lambda c: _reads.get_messages(c, agent_id, after_seq, limit))

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        return await self._read(lambda c: _reads.search_messages(c, agent_id, text, limit))

    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]:
        return await self._read(lambda c: _reads.get_compactions(c, agent_id))

    async def agent_infos(self, run_id: str) -> list[AgentInfo]:
        return await self._read(lambda c: _reads.agent_infos(c, run_id))

    # -- events ---------------------------------------------------------------
    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        enc = self._enc
        return await self._submit(lambda c, now: append_event(c, enc, run_id, kind, data, now))

    async def events(self, run_id: str, *, starting_after: int = 0,
                     limit: int = 500) -> list[Event]:
        return await self._read(lambda c: _reads.events(c, run_id, starting_after, limit))

    async def follow(self, run_id: str, *, starting_after: int = 0,
                     safety_interval: float = 10.0) -> AsyncIterator[Event]:
        """Yield the run's events after ``starting_after`` as they commit, until the store closes.

        Woken by ``NOTIFY`` from any process's commit (no polling); ``safety_interval``
        only bounds the wait should a notification be lost with a dropped connection.
        """
        cursor = starting_after
        signal = asyncio.Event()
        self._signals.setdefault(run_id, set()).add(signal)
        await self._listen()
        try:
            while not self._closed:
                signal.clear()  # cleared before reading: a commit after the read sets it
                page = await self.events(run_id, starting_after=cursor, limit=_FOLLOW_PAGE)
                for event in page:
                    cursor = event.seq
                    yield event
                if len(page) < _FOLLOW_PAGE and not self._closed:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(safety_interval):
                            await signal.wait()
                    if self._listener is None or self._listener.is_closed():
                        await self._listen()
        except StoreError:
            if not self._closed:
                raise
        finally:
            followers = self._signals.get(run_id, set())
            followers.discard(signal)
            if not followers:
                self._signals.pop(run_id, None)

    async def _listen(self) -> None:
        """One ``LISTEN`` connection per handle, shared by its followers."""
        async with self._listening:
            if self._closed or (self._listener is not None and not self._listener.is_closed()):
                return
            with contextlib.suppress(*_LOST):
                conn = await asyncpg.connect(self._dsn)
                await conn.add_listener(_CHANNEL, self._notified)
                self._listener = conn

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        for signal in self._signals.get(str(payload), ()):
            signal.set()


async def _drop_some(c: asyncpg.Connection, now: float, *, run_id: str, batch_rows: int) -> bool:
    return await _runs.delete_some(c, run_id, batch_rows)


async def _drop(c: asyncpg.Connection, now: float, *, run_ids: list[str]) -> int:
    return await _runs.delete_runs(c, run_ids)


async def _vacuum(c: asyncpg.Connection) -> int:
    """``VACUUM`` (outside any transaction); the bytes the database shrank by."""
    size = "SELECT pg_database_size(current_database())"
    before = await c.fetchval(size)
    await c.execute("VACUUM")
    return max(0, int(before) - int(await c.fetchval(size)))


def _raw(conn: Any) -> asyncpg.Connection:
    """A pooled connection (a proxy that forwards every call) typed as the connection."""
    return cast(asyncpg.Connection, conn)


if TYPE_CHECKING:  # mypy proves the implementation satisfies the protocol
    _implements: type[Blackboard] = PostgresBlackboard

