"""``SQLiteBlackboard``: the blackboard protocol on one SQLite file (WAL).

Writes go through a group-commit writer on one connection (see ``_writer``); reads
go through a second connection, which WAL lets run while the writer commits. Both
reach SQL through one thread hop per call: each operation is a sync function in
``_*_txn`` / ``_*queries`` modules, run whole on the connection's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import aiosqlite

from orchestra._errors import SchemaVersionError, StoreAccessError, StoreError, UserError
from orchestra._store import (
    _board_queries,
    _journal_txn,
    _queries,
    _run_txn,
    _servers,
    _task_txn,
    schema,
)
from orchestra._store._codec import Encoder
from orchestra._store._connection import configure, connect, on_thread, read_only_uri
from orchestra._store._event_txn import append_event, batched_events
from orchestra._store._sqlite_board import BoardMethods
from orchestra._store._sqlite_runs import RunCopyMethods
from orchestra._store._txn import Txn
from orchestra._store._writer import GroupCommitWriter
from orchestra._store.protocol import (
    Blackboard,
    ClaimSpec,
    Lease,
    NewTask,
    StepResult,
    Writes,
)
from orchestra._types import (
    JSON,
    AgentInfo,
    CompactionRecord,
    Durability,
    Event,
    Message,
    Run,
    RunStatus,
    Step,
    StepKind,
    Task,
)

T = TypeVar("T")
_FOLLOW_PAGE = 500


class SQLiteBlackboard(BoardMethods, RunCopyMethods):
    """The durable store of runs, in one SQLite file.

    Open it with ``await SQLiteBlackboard.open(path)`` and close it with ``await
    store.close()`` (or ``async with await SQLiteBlackboard.open(path) as store``).
    Several processes may open the same file; each holds one writer and one reader
    connection.
    """

    def __init__(self, path: str, writer: aiosqlite.Connection, reader: aiosqlite.Connection,
                 encoder: Encoder, *, max_batch: int, durability: Durability = "normal",
                 busy_timeout: float = 30.0) -> None:
        """Use :meth:`open`; this only wires already-prepared connections together."""
        self.path = path
        self._busy_timeout = busy_timeout
        self._writer_conn = writer
        self._reader = reader
        self._enc = encoder
        self._closed = False
        self._read_only = False
        self._followers = 0
        self._committed = asyncio.Event()
        self._writer = GroupCommitWriter(writer, on_commit=self._notify, max_batch=max_batch,
                                         inline=durability == "normal",
                                         busy_timeout=busy_timeout)

    @classmethod
    async def open(cls, path: str | os.PathLike[str], *, durability: Durability = "normal",
                   max_payload_bytes: int = 1 << 20, verify_only: bool = False,
                   busy_timeout: float = 30.0, max_batch: int = 256,
                   read_only: bool = False) -> SQLiteBlackboard:
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
        raises ``StoreAccessError``).

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
            return await cls._open_read_only(path, encoder, busy_timeout=busy_timeout)
        try:
            writer = await connect(path, busy_timeout)
        except sqlite3.Error as exc:
            raise schema.open_error(path, exc) from exc
        # the reader's thread starts while the writer checks and migrates (resume latency)
        reader_opening = asyncio.ensure_future(connect(path, busy_timeout))
        reader: aiosqlite.Connection | None = None
        try:
            await on_thread(writer, partial(_prepare, path=path, durability=durability,
                                            busy_timeout=busy_timeout, verify_only=verify_only))
            reader = await reader_opening
            await on_thread(reader, partial(configure, durability=durability,
                                            busy_timeout=busy_timeout, writer=False))
        except BaseException:
            await writer.close()
            if reader is None:
                with contextlib.suppress(BaseException):
                    reader = await reader_opening
            if reader is not None:
                await reader.close()
            raise
        return cls(path, writer, reader, encoder, max_batch=max_batch, durability=durability,
                   busy_timeout=busy_timeout)

    @classmethod
    async def _open_read_only(cls, path: str, encoder: Encoder, *,
                              busy_timeout: float) -> SQLiteBlackboard:
        """Two ``mode=ro`` connections (see ``_connect_read_only``); writes are refused."""
        conns: list[aiosqlite.Connection] = []
        try:
            for _ in range(2):
                conns.append(await _connect_read_only(path, busy_timeout))
        except BaseException:
            for conn in conns:
                await conn.close()
            raise
        store = cls(path, conns[0], conns[1], encoder, max_batch=1, busy_timeout=busy_timeout)
        store._read_only = True
        return store

    async def close(self) -> None:
        """Commit queued writes, wake followers (they stop) and close both connections."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._writer.close()
        finally:
            self._committed.set()
            await self._writer_conn.close()
            await self._reader.close()

    async def __aenter__(self) -> SQLiteBlackboard:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------
    async def _write(self, op: Callable[[Txn], T]) -> T:
        """Run ``op`` as one write: on the writer's connection, stamped when it runs."""
        if self._read_only:
            raise StoreAccessError(f"{self.path} was opened read-only; this change needs a "
                                   "store that can be written")
        enc = self._enc
        return await self._writer.submit(lambda c: op(Txn(c, enc, time.time())))

    async def _read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise StoreError("the store is closed; open it again to read")
        return await on_thread(self._reader, op)

    def _notify(self) -> None:
        if self._followers:
            self._committed.set()
            self._committed = asyncio.Event()

    # -- runs -----------------------------------------------------------------
    async def create_run(self, pipeline: str, input: JSON, *, run_id: str | None = None,
                         tasks: Sequence[NewTask] = (), settings: JSON = None) -> Run:
        """``settings``: what the caller chose for the run (e.g. model specs), recorded in
        its ``run.created`` event, apart from ``input`` (the pipeline's own)."""
        tasks = tuple(tasks)
        return await self._write(lambda tx: _run_txn.create_run(tx, pipeline, input, run_id,
                                                                  tasks, settings))

    async def get_run(self, run_id: str) -> Run:
        return await self._read(lambda c: _queries.get_run(c, run_id))

    async def list_runs(self, *, active_only: bool = False, limit: int = 100,
                        status: RunStatus | None = None, pipeline: str | None = None,
                        before: tuple[float, str] | None = None) -> list[Run]:
        """Runs newest first; ``before`` = ``(created_at, id)`` of the last run of the
        previous page (keyset pagination: stable while runs are being created)."""
        return await self._read(lambda c: _queries.list_runs(c, active_only, limit, status,
                                                             pipeline, before))

    async def set_run_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                             only_from: Collection[RunStatus] | None = None) -> Run:
        allowed = None if only_from is None else frozenset(only_from)
        return await self._write(lambda tx: _run_txn.set_run_status(tx, run_id, status, error,
                                                                      allowed))

    # -- tasks and leases -----------------------------------------------------
    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
        tasks = tuple(tasks)
        return await self._write(lambda tx: _run_txn.add_tasks(tx, run_id, tasks))

    async def get_task(self, task_id: str) -> Task:
        return await self._read(lambda c: _queries.get_task(c, task_id))

    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]:
        return await self._read(lambda c: _queries.list_tasks(c, run_id, status, role))

    async def task_counts(self, run_id: str) -> dict[str, int]:
        """Number of tasks of the run per status (statuses with none are absent)."""
        return await self._read(lambda c: _queries.task_counts(c, run_id))

    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None,
                         lease_seconds: float = 30.0) -> Task | None:
        roles = None if roles is None else tuple(roles)
        return await self._write(lambda tx: _task_txn.claim(
            tx, owner, run_id=run_id, roles=roles, lease_seconds=lease_seconds))

    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None, lease_seconds: float = 30.0,
                          prestart: frozenset[str] = frozenset()) -> list[Task]:
        """Claim up to ``limit`` ready tasks (at most ``capacity[role]`` of each role) in
        one transaction: a coordinator with free slots fills them in one round trip."""
        capacity = dict(capacity)
        return await self._write(lambda tx: _task_txn.claim_many(
            tx, owner, run_id=run_id, capacity=capacity, limit=limit,
            lease_seconds=lease_seconds, prestart=prestart))

    async def retry_failed_tasks(self, run_id: str) -> list[Task]:
        """Put a run's failed tasks back in the queue, each with a fresh journal retry."""
        return await self._write(lambda tx: _task_txn.retry_failed(tx, run_id))

    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool:
        return await self._write(lambda tx: _task_txn.heartbeat(tx, task_id, lease,
                                                                  lease_seconds))

    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]:
        owners = tuple(owners)
        return await self._write(lambda tx: _task_txn.release_leases(
            tx, run_id=run_id, owners=owners))

    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None) -> Task:
        return await self._write(lambda tx: _journal_txn.complete_task(
            tx, task_id, lease, result, agent_id, writes, step))

    async def complete_task_and_claim(self, task_id: str, lease: Lease, result: JSON, *,
                                      agent_id: str, claim: ClaimSpec,
                                      writes: Writes | None = None,
                                      step: StepResult | None = None
                                      ) -> tuple[Task, list[Task]]:
        """``complete_task`` and then ``claim_tasks`` in one transaction: a busy worker
        hands in one result and takes its next work in a single round trip."""

        def op(tx: Txn) -> tuple[Task, list[Task]]:
            with batched_events(tx):
                # the run's older pending tasks first; room left over takes the tasks this
                # one routes as they are inserted (see ``_task_txn.Claimer``)
                older = _task_txn.claim_many(tx, claim.owner, run_id=claim.run_id,
                                             capacity=dict(claim.capacity), limit=claim.limit,
                                             lease_seconds=claim.lease_seconds,
                                             announce=False)
                room = dict(claim.capacity)
                for task in older:
                    room[task.role] -= 1
                claimer = _task_txn.Claimer(claim.owner, room, claim.limit - len(older),
                                            claim.lease_seconds)
                with tx.claiming(claimer):
                    done = _journal_txn.complete_task(tx, task_id, lease, result, agent_id,
                                                      writes, step)
                nxt = older + claimer.claimed
                _task_txn.announce_claims(tx, nxt, claim.owner, claim.prestart)
            return done, nxt

        return await self._write(op)

    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task:
        return await self._write(lambda tx: _journal_txn.fail_task(
            tx, task_id, lease, error, retry_at, agent_id, writes))

    # -- who serves which run -------------------------------------------------
    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None:
        """``owner`` serves ``run_id`` for ``lease_seconds`` more (renew it as leases are
        heartbeated); ``lease_seconds=0`` says it stopped serving."""
        await self._write(lambda tx: _servers.renew(tx, run_id, owner, lease_seconds))

    async def served_until(self, run_ids: Sequence[str]) -> dict[str, float | None]:
        """Per run, until when some process was last known to serve it (its renewals and
        its task leases, on the store's clock); None if nobody ever did. A live run
        whose time is past has no live worker."""
        ids = tuple(run_ids)
        return await self._read(lambda c: _servers.alive_until(c, ids))

    # -- step journal ---------------------------------------------------------
    async def get_steps(self, task_id: str, retry: int) -> list[Step]:
        return await self._read(lambda c: _queries.get_steps(c, task_id, retry))

    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None:
        await self._write(lambda tx: _journal_txn.start_step(
            tx, task_id, retry, step, kind, name, input_digest, lease))

    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None:
        await self._write(lambda tx: _journal_txn.complete_step(tx, result, lease, agent_id,
                                                                  writes))

    async def step_counts(self, run_id: str) -> dict[str, int]:
        """Journal totals of a run: steps ``completed``, ``failed``, ``cancelled`` and
        ``started`` (in flight, or left by a dead process); ``reissued``: executions
        started again because the process running them died or lost its lease (the sum
        of ``attempts - 1``); ``retried``: steps run again in a later retry of their
        task after an error."""
        return await self._read(lambda c: _queries.step_counts(c, run_id))

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        return await self._read(lambda c: _board_queries.get_messages(c, agent_id, after_seq,
                                                                      limit))

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        """Messages holding any word of ``text`` (case-insensitive), most words matched
        first, then newest. A scan of one agent's history (messages have no FTS index)."""
        return await self._read(lambda c: _board_queries.search_messages(c, agent_id, text,
                                                                         limit))

    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]:
        return await self._read(lambda c: _board_queries.get_compactions(c, agent_id))

    async def agent_infos(self, run_id: str) -> list[AgentInfo]:
        return await self._read(lambda c: _board_queries.agent_infos(c, run_id))

    # -- events ---------------------------------------------------------------
    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        return await self._write(lambda tx: append_event(tx, run_id, kind, data))

    async def events(self, run_id: str, *, starting_after: int = 0,
                     limit: int = 500) -> list[Event]:
        return await self._read(lambda c: _queries.events(c, run_id, starting_after, limit))

    async def follow(self, run_id: str, *, starting_after: int = 0,
                     poll_interval: float = 0.2) -> AsyncIterator[Event]:
        """Yield the run's events after ``starting_after`` as they commit, until the store closes.

        Commits through this store wake it at once; commits by other processes are
        seen by polling every ``poll_interval`` seconds (an indexed range read).
        """
        cursor = starting_after
        self._followers += 1
        try:
            while not self._closed:
                signal = self._committed  # taken before reading: no commit can slip between
                page = await self.events(run_id, starting_after=cursor, limit=_FOLLOW_PAGE)
                for event in page:
                    cursor = event.seq
                    yield event
                if len(page) < _FOLLOW_PAGE and not self._closed:
                    try:
                        async with asyncio.timeout(poll_interval):
                            await signal.wait()
                    except TimeoutError:
                        pass
        finally:
            self._followers -= 1


def _prepare(conn: sqlite3.Connection, *, path: str, durability: Durability,
             busy_timeout: float, verify_only: bool) -> None:
    """On the writer's thread: refuse a bad file (reading only), then configure and migrate."""
    try:
        schema.read_version(conn, path)
        if verify_only:
            schema.migrate(conn, path, verify_only=True)  # raises if pending; writes nothing
        configure(conn, durability=durability, busy_timeout=busy_timeout, writer=True)
        schema.migrate(conn, path)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc


async def _connect_read_only(path: str, busy_timeout: float) -> aiosqlite.Connection:
    """A ``mode=ro`` connection, checked; ``immutable`` when SQLite cannot open the file
    read-only as is (a read-only directory cannot hold its ``-shm`` file) and no
    write-ahead log holds changes the file lacks."""
    for immutable in (False, True):
        try:
            conn = await connect(read_only_uri(path, immutable=immutable), busy_timeout,
                                 uri=True)
        except sqlite3.Error as exc:
            raise schema.open_error(path, exc) from exc
        try:
            await on_thread(conn, partial(_prepare_read_only, path=path,
                                          busy_timeout=busy_timeout))
            return conn
        except BaseException as exc:
            await conn.close()
            cause = exc.__cause__ if isinstance(exc, StoreError) else None
            if immutable or getattr(cause, "sqlite_errorname", "") != "SQLITE_CANTOPEN":
                raise
        if _has_content(f"{path}-wal"):
            raise StoreAccessError(
                f"{path}: cannot read the store read-only: its write-ahead log {path}-wal "
                "holds changes the file lacks, and SQLite cannot read it without writing "
                "next to it; open the store once where its directory is writable")
    raise AssertionError("unreachable")


def _has_content(path: str) -> bool:
    """A stat of one file: cheaper inline than a thread hop, like ``schema.check_file``."""
    try:
        return os.stat(path).st_size > 0
    except FileNotFoundError:
        return False


def _prepare_read_only(conn: sqlite3.Connection, *, path: str, busy_timeout: float) -> None:
    """Refuse a bad file or one that needs migrating (it cannot be migrated read-only)."""
    try:
        version = schema.read_version(conn, path)
        configure(conn, durability="normal", busy_timeout=busy_timeout, writer=False)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc
    if version < schema.LATEST_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version} and this orchestra needs version "
            f"{schema.LATEST_VERSION}; it cannot be migrated read-only: open it once where it "
            "can be written")


if TYPE_CHECKING:  # mypy proves the implementation satisfies the protocol
    _implements: type[Blackboard] = SQLiteBlackboard
